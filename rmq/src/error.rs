//! The facade's error type: one enum over the layers' errors.

/// Any error an rmq call can return.
///
/// Each variant wraps the error of one layer unchanged (its `Display` says
/// what went wrong at that layer, the cause chain comes through
/// [`source`](std::error::Error::source)). Ask questions with
/// [`Error::is_retryable`] and [`Error::is_timeout`] instead of matching.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Protocol encoding or decoding.
    #[error(transparent)]
    Protocol(#[from] rmq_protocol::Error),
    /// Transport (connections, timeouts).
    #[error(transparent)]
    Remoting(#[from] rmq_remoting::Error),
    /// Client core (configuration, routes, broker calls).
    #[error(transparent)]
    Client(#[from] rmq_client_core::Error),
    /// The producer.
    #[cfg(feature = "producer")]
    #[error(transparent)]
    Producer(#[from] rmq_producer::Error),
    /// The push consumer.
    #[cfg(feature = "consumer-push")]
    #[error(transparent)]
    PushConsumer(#[from] rmq_consumer_push::Error),
    /// The pull consumers.
    #[cfg(feature = "consumer-pull")]
    #[error(transparent)]
    PullConsumer(#[from] rmq_consumer_pull::Error),
}

impl Error {
    /// Whether retrying the operation may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Protocol(_) => false,
            Error::Remoting(e) => e.is_retryable(),
            Error::Client(e) => e.is_retryable(),
            #[cfg(feature = "producer")]
            Error::Producer(e) => e.is_retryable(),
            #[cfg(feature = "consumer-push")]
            Error::PushConsumer(e) => e.is_retryable(),
            #[cfg(feature = "consumer-pull")]
            Error::PullConsumer(e) => e.is_retryable(),
        }
    }

    /// Whether a broker refused the credentials or the user's permissions
    /// (ACL): not retryable until the keys or the ACL change.
    pub fn is_auth(&self) -> bool {
        match self {
            Error::Protocol(_) | Error::Remoting(_) => false,
            Error::Client(e) => e.is_auth(),
            #[cfg(feature = "producer")]
            Error::Producer(e) => e.is_auth(),
            #[cfg(feature = "consumer-push")]
            Error::PushConsumer(e) => e.is_auth(),
            #[cfg(feature = "consumer-pull")]
            Error::PullConsumer(e) => e.is_auth(),
        }
    }

    /// Whether the operation timed out.
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Protocol(_) => false,
            Error::Remoting(e) => e.is_timeout(),
            Error::Client(e) => e.is_timeout(),
            #[cfg(feature = "producer")]
            Error::Producer(e) => e.is_timeout(),
            #[cfg(feature = "consumer-push")]
            Error::PushConsumer(e) => e.is_timeout(),
            #[cfg(feature = "consumer-pull")]
            Error::PullConsumer(e) => e.is_timeout(),
        }
    }
}

/// `Result` with [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
