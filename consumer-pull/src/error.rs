//! The pull consumers' error type.

use rmq_protocol::MessageQueue;

/// Errors of [`PullConsumer`](crate::PullConsumer) and
/// [`LitePullConsumer`](crate::LitePullConsumer).
///
/// `Display` describes this level only; the cause comes through
/// [`source()`](std::error::Error::source). Ask questions with the
/// predicates ([`is_retryable`](Error::is_retryable),
/// [`is_timeout`](Error::is_timeout), [`is_shutdown`](Error::is_shutdown))
/// rather than matching variants.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The consumer configuration is invalid; the text names the setting and
    /// what to change.
    #[error("invalid pull consumer configuration: {0}")]
    Config(String),

    /// An argument of a call is invalid (negative offset, zero batch size,
    /// empty queue list...); the text says which and why.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A client-core call failed: client instance start, registration, route
    /// lookup, broker call.
    #[error("client call failed")]
    Client(#[from] rmq_client_core::Error),

    /// The offset store failed (loading the local file, reading or
    /// persisting offsets).
    #[error("offset store failed")]
    OffsetStore(#[from] rmq_offset_store::Error),

    /// A background pull of a lite pull consumer failed with an error that
    /// retrying will not fix (no permission, bad filter expression, ...).
    /// Delivered once through [`poll`](crate::LitePullConsumer::poll) or the
    /// stream; the queue keeps trying every
    /// [`pull_delay_when_exception`](crate::LitePullConsumerBuilder::pull_delay_when_exception).
    #[error("pulling {queue} failed")]
    Pull {
        /// The queue.
        queue: MessageQueue,
        /// Why.
        #[source]
        source: rmq_client_core::Error,
    },

    /// Computing where a newly assigned queue starts failed (the offset
    /// store or the broker could not be asked).
    #[error("cannot compute the start offset of {queue}")]
    StartOffset {
        /// The queue.
        queue: MessageQueue,
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

    /// `subscribe` and `assign` were both used on one lite pull consumer;
    /// they are mutually exclusive (Java: "Subscribe and assign are mutually
    /// exclusive").
    #[error(
        "cannot {attempted} a lite pull consumer that already uses {current}: subscribe \
         (group rebalance) and assign (fixed queues) are mutually exclusive; use two consumers"
    )]
    SubscriptionConflict {
        /// What the call tried: `"subscribe"` or `"assign"`.
        attempted: &'static str,
        /// What the consumer already does: `"subscribe"` or `"assign"`.
        current: &'static str,
    },

    /// The queue is not assigned to this consumer (now): seek, pause and
    /// resume need an assigned queue. With `subscribe`, the queue may have
    /// moved to another member at a rebalance.
    #[error(
        "{queue} is not assigned to this consumer (with subscribe it may have been rebalanced away)"
    )]
    NotAssigned {
        /// The queue.
        queue: MessageQueue,
    },

    /// A seek offset outside the queue's `[min, max]` range.
    #[error("offset {offset} is outside {queue}'s range [{min}, {max}]")]
    OffsetOutOfRange {
        /// The queue.
        queue: MessageQueue,
        /// The requested offset.
        offset: i64,
        /// The queue's min offset.
        min: i64,
        /// The queue's max offset (one past the last message).
        max: i64,
    },

    /// The consumer has been shut down.
    #[error("the pull consumer is shut down")]
    Shutdown,
}

impl Error {
    /// Whether trying again later may succeed (network and broker-side
    /// transient failures).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Client(e) | Error::Pull { source: e, .. } => e.is_retryable(),
            Error::OffsetStore(e) => e.is_retryable(),
            Error::StartOffset { source, .. } => source.is_retryable(),
            Error::BrokerNotFound { .. } => true,
            _ => false,
        }
    }

    /// Whether a broker refused the credentials or the user's permissions
    /// ([`rmq_client_core::Error::is_auth`]); the text names the access
    /// key, the topic and the group.
    pub fn is_auth(&self) -> bool {
        match self {
            Error::Client(e) | Error::Pull { source: e, .. } => e.is_auth(),
            Error::OffsetStore(e) => e.is_auth(),
            Error::StartOffset { source, .. } => source.is_auth(),
            _ => false,
        }
    }

    /// Whether a call timed out.
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Client(e) | Error::Pull { source: e, .. } => e.is_timeout(),
            Error::OffsetStore(e) => e.is_timeout(),
            Error::StartOffset { source, .. } => source.is_timeout(),
            _ => false,
        }
    }

    /// Whether the consumer is shut down (nothing more will come).
    pub fn is_shutdown(&self) -> bool {
        matches!(self, Error::Shutdown)
    }

    /// The queue the error is about, if any.
    pub fn queue(&self) -> Option<&MessageQueue> {
        match self {
            Error::Pull { queue, .. }
            | Error::StartOffset { queue, .. }
            | Error::NotAssigned { queue }
            | Error::OffsetOutOfRange { queue, .. } => Some(queue),
            _ => None,
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
        assert!(Error::Shutdown.is_shutdown());
        assert!(!Error::Shutdown.is_timeout());
        let q = MessageQueue::new("T", "b", 0);
        assert!(
            Error::BrokerNotFound {
                broker_name: "b".into()
            }
            .is_retryable()
        );
        let wrapped = Error::StartOffset {
            queue: q.clone(),
            source: Box::new(Error::BrokerNotFound {
                broker_name: "b".into(),
            }),
        };
        assert!(wrapped.is_retryable());
        assert_eq!(wrapped.queue(), Some(&q));
        assert!(wrapped.to_string().contains("start offset"));
        let conflict = Error::SubscriptionConflict {
            attempted: "assign",
            current: "subscribe",
        };
        assert!(conflict.to_string().contains("mutually exclusive"));
        assert!(!conflict.is_retryable());
    }
}
