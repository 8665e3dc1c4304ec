//! The push consumer's error type.

/// Errors of the push consumer.
///
/// `Display` describes this level only; the cause comes through
/// [`source()`](std::error::Error::source). Ask questions with
/// [`is_retryable`](Error::is_retryable) and [`is_timeout`](Error::is_timeout)
/// rather than matching variants.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The consumer configuration is invalid; the text names the setting and
    /// what to change.
    #[error("invalid push consumer configuration: {0}")]
    Config(String),

    /// A client-core call failed: client instance start, registration, route
    /// lookup, broker call.
    #[error("client call failed")]
    Client(#[from] rmq_client_core::Error),

    /// The offset store failed (loading the local file, persisting).
    #[error("offset store failed")]
    OffsetStore(#[from] rmq_offset_store::Error),

    /// Computing a queue's start offset failed (the offset store or the
    /// broker could not be asked); the next rebalance tries again.
    #[error("cannot compute the start offset of {queue}")]
    StartOffset {
        /// The queue.
        queue: rmq_protocol::MessageQueue,
        /// Why.
        #[source]
        source: Box<Error>,
    },

    /// No address is known for a broker, even after a route refresh.
    #[error("no address known for broker {broker_name:?}; the broker may be down")]
    BrokerNotFound {
        /// The broker name.
        broker_name: String,
    },

    /// The consumer has been shut down.
    #[error("the push consumer is shut down")]
    Shutdown,
}

impl Error {
    /// Whether trying again later may succeed (network and broker-side
    /// transient failures).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Client(e) => e.is_retryable(),
            Error::OffsetStore(e) => e.is_retryable(),
            Error::StartOffset { source, .. } => source.is_retryable(),
            Error::BrokerNotFound { .. } => true,
            Error::Config(_) | Error::Shutdown => false,
        }
    }

    /// Whether a broker refused the credentials or the user's permissions
    /// ([`rmq_client_core::Error::is_auth`]).
    pub fn is_auth(&self) -> bool {
        match self {
            Error::Client(e) => e.is_auth(),
            Error::OffsetStore(e) => e.is_auth(),
            Error::StartOffset { source, .. } => source.is_auth(),
            Error::Config(_) | Error::BrokerNotFound { .. } | Error::Shutdown => false,
        }
    }

    /// Whether a call timed out.
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Client(e) => e.is_timeout(),
            Error::OffsetStore(e) => e.is_timeout(),
            Error::StartOffset { source, .. } => source.is_timeout(),
            Error::Config(_) | Error::BrokerNotFound { .. } | Error::Shutdown => false,
        }
    }
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates() {
        assert!(!Error::Config("x".into()).is_retryable());
        assert!(!Error::Shutdown.is_timeout());
        assert!(
            Error::BrokerNotFound {
                broker_name: "b".into()
            }
            .is_retryable()
        );
        let wrapped = Error::StartOffset {
            queue: rmq_protocol::MessageQueue::new("T", "b", 0),
            source: Box::new(Error::BrokerNotFound {
                broker_name: "b".into(),
            }),
        };
        assert!(wrapped.is_retryable());
        assert!(wrapped.to_string().contains("start offset"));
    }
}
