//! The rebalancer's error type.

use crate::error::AllocateError;

/// Why a rebalance of one topic could not be computed. The caller keeps the
/// topic's current queues and tries again at the next rebalance (Java logs
/// and skips the topic).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Fetching the route or the group's consumer ids failed.
    #[error("rebalance call failed")]
    Client(#[from] rmq_client_core::Error),

    /// The allocation strategy refused its inputs.
    #[error("the allocation strategy failed")]
    Allocate(#[from] AllocateError),
}

/// `Result` with the rebalancer's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the next rebalance may succeed where this one failed
    /// (retryable client errors: timeouts, closed connections, busy
    /// brokers, unavailable name servers).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Client(e) => e.is_retryable(),
            Error::Allocate(_) => false,
        }
    }

    /// Whether this is a timeout.
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Client(e) => e.is_timeout(),
            Error::Allocate(_) => false,
        }
    }
}
