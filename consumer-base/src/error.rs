//! [`Error`]: the consumers' error type, one set of variants for every
//! consumer kind.

use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;

use rmq_protocol::MessageQueue;

/// A consumer kind, as its errors name it. Each consumer crate declares one
/// (an uninhabited type) and aliases `Error<ItsKind>` as its `Error`, so
/// every consumer has its own error type with the same variants.
pub trait Kind: fmt::Debug + Send + Sync + 'static {
    /// The consumer in error texts: `"push consumer"`, `"pull consumer"`.
    const NAME: &'static str;
}

/// Errors of a consumer of kind `K`.
///
/// `Display` describes this level only; the cause comes through
/// [`source()`](std::error::Error::source). Ask questions with the
/// predicates ([`is_retryable`](Error::is_retryable),
/// [`is_timeout`](Error::is_timeout), [`is_shutdown`](Error::is_shutdown),
/// [`queue`](Error::queue)) rather than matching variants.
#[non_exhaustive]
#[derive(Debug)]
pub enum Error<K: Kind> {
    /// The consumer configuration is invalid; the text names the setting and
    /// what to change.
    Config(String),

    /// An argument of a call is invalid (negative offset, zero batch size,
    /// empty queue list...); the text says which and why.
    InvalidArgument(String),

    /// A client-core call failed: client instance start, registration, route
    /// lookup, broker call.
    Client(rmq_client_core::Error),

    /// The offset store failed (loading the local file, reading or
    /// persisting offsets).
    OffsetStore(rmq_offset_store::Error),

    /// A background pull failed with an error that retrying will not fix
    /// (no permission, bad filter expression, ...). The lite pull consumer
    /// delivers it once through `poll` or its stream; the queue keeps trying.
    Pull {
        /// The queue.
        queue: MessageQueue,
        /// Why.
        source: rmq_client_core::Error,
    },

    /// Computing where a newly assigned queue starts failed (the offset
    /// store or the broker could not be asked).
    StartOffset {
        /// The queue.
        queue: MessageQueue,
        /// Why.
        source: Box<Error<K>>,
    },

    /// No address is known for a broker, even after a route refresh.
    BrokerNotFound {
        /// The broker name.
        broker_name: String,
    },

    /// `subscribe` and `assign` were both used on one consumer; they are
    /// mutually exclusive (Java: "Subscribe and assign are mutually
    /// exclusive").
    SubscriptionConflict {
        /// What the call tried: `"subscribe"` or `"assign"`.
        attempted: &'static str,
        /// What the consumer already does: `"subscribe"` or `"assign"`.
        current: &'static str,
    },

    /// The queue is not assigned to this consumer (now): seek, pause and
    /// resume need an assigned queue. With `subscribe`, the queue may have
    /// moved to another member at a rebalance.
    NotAssigned {
        /// The queue.
        queue: MessageQueue,
    },

    /// A seek offset outside the queue's `[min, max]` range.
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

    /// The broker does not support pop consumption (a 4.x broker answered
    /// REQUEST_CODE_NOT_SUPPORTED): pop needs RocketMQ 5.
    PopNotSupported {
        /// The broker's address.
        addr: String,
    },

    /// A call to the RocketMQ 5.x proxy failed (a consumer built with
    /// `endpoint(..)`); the text names the RPC and the proxy's status.
    Grpc(rmq_grpc::Error),

    /// The consumer has been shut down.
    Shutdown,

    /// Never constructed: carries the kind.
    #[doc(hidden)]
    __Kind(Infallible, PhantomData<fn() -> K>),
}

impl<K: Kind> fmt::Display for Error<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "invalid {} configuration: {m}", K::NAME),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::Client(_) => f.write_str("client call failed"),
            Error::Grpc(e) => write!(f, "call to the proxy failed: {e}"),
            Error::OffsetStore(_) => f.write_str("offset store failed"),
            Error::Pull { queue, .. } => write!(f, "pulling {queue} failed"),
            Error::StartOffset { queue, .. } => {
                write!(f, "cannot compute the start offset of {queue}")
            }
            Error::BrokerNotFound { broker_name } => write!(
                f,
                "no address known for broker {broker_name:?}; the broker may be down"
            ),
            Error::SubscriptionConflict { attempted, current } => write!(
                f,
                "cannot {attempted} a lite pull consumer that already uses {current}: subscribe \
                 (group rebalance) and assign (fixed queues) are mutually exclusive; use two \
                 consumers"
            ),
            Error::NotAssigned { queue } => write!(
                f,
                "{queue} is not assigned to this consumer (with subscribe it may have been \
                 rebalanced away)"
            ),
            Error::OffsetOutOfRange {
                queue,
                offset,
                min,
                max,
            } => write!(
                f,
                "offset {offset} is outside {queue}'s range [{min}, {max}]"
            ),
            Error::PopNotSupported { addr } => write!(
                f,
                "the broker at {addr} does not support pop consumption: pop needs RocketMQ 5.x \
                 (use the push or lite pull consumer with a 4.x broker)"
            ),
            Error::Shutdown => write!(f, "the {} is shut down", K::NAME),
            Error::__Kind(never, _) => match *never {},
        }
    }
}

impl<K: Kind> std::error::Error for Error<K> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Client(e) | Error::Pull { source: e, .. } => Some(e),
            Error::OffsetStore(e) => Some(e),
            Error::Grpc(e) => Some(e),
            Error::StartOffset { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

impl<K: Kind> From<rmq_client_core::Error> for Error<K> {
    fn from(e: rmq_client_core::Error) -> Self {
        Error::Client(e)
    }
}

impl<K: Kind> From<rmq_grpc::Error> for Error<K> {
    /// The proxy call's error; the session's shutdown is the consumer's.
    fn from(e: rmq_grpc::Error) -> Self {
        match e {
            rmq_grpc::Error::Shutdown => Error::Shutdown,
            e => Error::Grpc(e),
        }
    }
}

impl<K: Kind> From<rmq_offset_store::Error> for Error<K> {
    fn from(e: rmq_offset_store::Error) -> Self {
        Error::OffsetStore(e)
    }
}

impl<K: Kind> Error<K> {
    /// Whether trying again later may succeed (network and broker-side
    /// transient failures).
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Client(e) | Error::Pull { source: e, .. } => e.is_retryable(),
            Error::OffsetStore(e) => e.is_retryable(),
            Error::StartOffset { source, .. } => source.is_retryable(),
            Error::BrokerNotFound { .. } => true,
            Error::Grpc(e) => e.is_retryable(),
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
            Error::Grpc(e) => e.is_auth(),
            Error::StartOffset { source, .. } => source.is_auth(),
            _ => false,
        }
    }

    /// Whether a call timed out.
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Client(e) | Error::Pull { source: e, .. } => e.is_timeout(),
            Error::OffsetStore(e) => e.is_timeout(),
            Error::Grpc(e) => matches!(e, rmq_grpc::Error::Timeout { .. }),
            Error::StartOffset { source, .. } => source.is_timeout(),
            _ => false,
        }
    }

    /// Whether no name server answered (start with `fail_fast`, or a call
    /// that needed a route): check the name-server address and that the
    /// name server runs.
    pub fn is_name_server_unavailable(&self) -> bool {
        matches!(
            self,
            Error::Client(rmq_client_core::Error::NameServerUnavailable { .. })
        )
    }

    /// Whether a broker refused pop consumption (it is older than 5.0).
    pub fn is_pop_not_supported(&self) -> bool {
        matches!(self, Error::PopNotSupported { .. })
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

    /// The consumer error of a failed broker-address lookup: an unknown
    /// broker is [`Error::BrokerNotFound`], anything else [`Error::Client`].
    pub fn from_lookup(e: rmq_client_core::Error) -> Self {
        match e {
            rmq_client_core::Error::BrokerNotFound { broker_name } => {
                Error::BrokerNotFound { broker_name }
            }
            e => Error::Client(e),
        }
    }

    /// Wraps `self` as the cause of a failed start offset of `queue`.
    pub fn start_offset(self, queue: &MessageQueue) -> Self {
        Error::StartOffset {
            queue: queue.clone(),
            source: Box::new(self),
        }
    }
}

impl<K: Kind> rmq_error::Classify for Error<K> {
    /// `None` for a client-core, offset-store or proxy error (and a failed
    /// pull), whose own kind decides.
    fn level_kind(&self) -> Option<rmq_error::ErrorKind> {
        use rmq_error::ErrorKind as E;
        match self {
            Error::Config(_) | Error::SubscriptionConflict { .. } => Some(E::Config),
            Error::InvalidArgument(_)
            | Error::NotAssigned { .. }
            | Error::OffsetOutOfRange { .. } => Some(E::InvalidArgument),
            Error::BrokerNotFound { .. } => Some(E::BrokerNotFound),
            Error::PopNotSupported { .. } => Some(E::Unsupported),
            Error::Shutdown => Some(E::Shutdown),
            Error::StartOffset { source, .. } => source.level_kind(),
            _ => None,
        }
    }

    fn is_retryable(&self) -> bool {
        Error::is_retryable(self)
    }

    fn is_timeout(&self) -> bool {
        Error::is_timeout(self)
    }

    fn is_auth(&self) -> bool {
        Error::is_auth(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    enum Test {}

    impl Kind for Test {
        const NAME: &'static str = "test consumer";
    }

    type E = Error<Test>;

    #[test]
    fn predicates_and_texts() {
        assert!(!E::Config("x".into()).is_retryable());
        assert_eq!(
            E::Config("x".into()).to_string(),
            "invalid test consumer configuration: x"
        );
        assert_eq!(E::Shutdown.to_string(), "the test consumer is shut down");
        assert!(E::Shutdown.is_shutdown());
        assert!(!E::Shutdown.is_timeout());
        let q = MessageQueue::new("T", "b", 0);
        let not_found = || E::BrokerNotFound {
            broker_name: "b".into(),
        };
        assert!(not_found().is_retryable());
        let wrapped = not_found().start_offset(&q);
        assert!(wrapped.is_retryable());
        assert_eq!(wrapped.queue(), Some(&q));
        assert!(wrapped.to_string().contains("start offset"));
        let conflict = E::SubscriptionConflict {
            attempted: "assign",
            current: "subscribe",
        };
        assert!(conflict.to_string().contains("mutually exclusive"));
        assert!(!conflict.is_retryable());
        let lookup = E::from_lookup(rmq_client_core::Error::BrokerNotFound {
            broker_name: "b".into(),
        });
        assert!(matches!(lookup, E::BrokerNotFound { .. }));
        assert!(matches!(
            E::from_lookup(rmq_client_core::Error::Shutdown),
            E::Client(_)
        ));
    }

    #[test]
    fn classified_by_the_variant_or_the_cause() {
        use rmq_error::ErrorKind;
        let q = MessageQueue::new("T", "b", 0);
        let e: rmq_error::Error = E::BrokerNotFound {
            broker_name: "b".into(),
        }
        .start_offset(&q)
        .into();
        assert_eq!(e.kind(), ErrorKind::BrokerNotFound);
        assert!(e.is_retryable());
        let e: rmq_error::Error =
            E::Client(rmq_client_core::Error::RouteNotFound { topic: "T".into() }).into();
        assert_eq!(e.kind(), ErrorKind::TopicNotFound);
        assert_eq!(
            e.to_string(),
            "client call failed: no route for topic \"T\": create the topic or check the \
             name-server address"
        );
        let e: rmq_error::Error = E::PopNotSupported { addr: "a:1".into() }.into();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let e: rmq_error::Error = E::Shutdown.into();
        assert_eq!(e.kind(), ErrorKind::Shutdown);
        assert!(e.downcast_ref::<E>().is_some_and(E::is_shutdown));
    }
}
