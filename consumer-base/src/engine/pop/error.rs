//! [`PopCallError`]: why an ack, an invisible-time change or a move to the
//! DLQ did not happen.

use rmq_protocol::ErrorChain;

/// A settle call that failed; the message then comes back after its
/// invisible time (consumed twice, never lost).
#[derive(Debug)]
pub enum PopCallError {
    /// No address of the message's broker, even after a route refresh.
    NoBroker(rmq_client_core::Error),
    /// A handle whose offset lies before its checkpoint's (not a handle of
    /// this broker's answer).
    BeforeCheckpoint {
        /// The message's queue offset.
        offset: i64,
        /// The checkpoint's start offset.
        ck_offset: i64,
    },
    /// The broker at `addr` refused or the call failed.
    Call {
        /// The broker's address.
        addr: String,
        /// What failed.
        error: rmq_client_core::Error,
    },
}

impl std::fmt::Display for PopCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PopCallError::NoBroker(e) => write!(f, "no broker address: {}", ErrorChain(e)),
            PopCallError::BeforeCheckpoint { offset, ck_offset } => {
                write!(
                    f,
                    "handle of offset {offset} before its checkpoint {ck_offset}"
                )
            }
            PopCallError::Call { addr, error } => write!(f, "{addr}: {}", ErrorChain(error)),
        }
    }
}
