//! The producer's error type.

use std::time::Duration;

use rmq_protocol::{Message, ResponseCode};

/// Errors of the producer.
///
/// Every error a send method returns is an [`Error::Send`] that hands the
/// unsent message(s) back ([`Error::into_unsent`]) and wraps the reason
/// ([`Error::inner`]). Ask questions with [`is_retryable`](Error::is_retryable)
/// and [`is_timeout`](Error::is_timeout) rather than matching variants; the
/// `Display` text describes this level only, causes come through
/// [`source()`](std::error::Error::source).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The producer configuration is invalid; the text says which setting.
    #[error("invalid producer configuration: {0}")]
    Config(String),

    /// A send failed; the message(s) are handed back in `unsent`.
    #[error(
        "cannot send {} to topic {topic:?} ({attempts} attempt{})",
        unsent.describe(),
        if *attempts == 1 { "" } else { "s" }
    )]
    Send {
        /// The topic.
        topic: String,
        /// Send attempts made (0: rejected before sending).
        attempts: u32,
        /// Why: the last attempt's error, or the reason nothing was sent.
        #[source]
        source: Box<Error>,
        /// The message(s), as passed in, plus the `UNIQ_KEY`/`WAIT`
        /// properties the producer added (so a resend keeps its id).
        unsent: Unsent,
    },

    /// The message was rejected before anything was sent.
    #[error("invalid message")]
    InvalidMessage(#[from] InvalidMessage),

    /// A client-core call failed: route lookup, connection, broker answer.
    #[error("client call failed")]
    Client(#[from] rmq_client_core::Error),

    /// The message could not be encoded (compression, properties string).
    #[error("cannot encode the message")]
    Protocol(#[from] rmq_protocol::Error),

    /// The topic's route has no writable queue.
    #[error("topic {topic:?} has no writable queue; check the topic's permissions and brokers")]
    NoWritableQueue {
        /// The topic.
        topic: String,
    },

    /// A queue selector returned an index outside the queue list.
    #[error("the queue selector returned index {index} but the topic has {len} queues")]
    BadQueueIndex {
        /// What the selector returned.
        index: usize,
        /// The number of queues.
        len: usize,
    },

    /// The send timeout elapsed before the broker answered (Java: "call
    /// timeout").
    #[error("no send succeeded within the send timeout of {timeout:?}")]
    Timeout {
        /// The producer's send timeout.
        timeout: Duration,
        /// The last attempt's error, if an attempt failed before the time ran out.
        #[source]
        last: Option<Box<Error>>,
    },

    /// The broker the message (or the call) would go to does not support
    /// what it asks for: a delivery time on a broker older than 5.0 (which
    /// would store it as an ordinary message and deliver it at once), a
    /// priority before 5.4, a lite topic before 5.5, a recall before 5.3.2.
    #[error(
        "broker {broker} (version {version}) does not support {feature}; it needs RocketMQ \
         {needs} or newer (do without it, or use a cluster of that version)"
    )]
    Unsupported {
        /// What is asked for: `"delivery-time (timer) messages"`,
        /// `"priority messages"`, `"lite topics"`, `"recalling messages"`.
        feature: &'static str,
        /// The broker name.
        broker: String,
        /// The broker's version, as its answers report it (`V4_9_7`).
        version: rmq_client_core::BrokerVersion,
        /// The oldest version that supports it (`V5_0_0`, ...).
        needs: rmq_client_core::BrokerVersion,
    },

    /// No reply came within the request's timeout
    /// ([`Producer::request`](crate::Producer::request); Java
    /// `RequestTimeoutException`). The request was sent and may have been
    /// (or still be) processed; a reply that comes later is dropped.
    #[error(
        "no reply to request {correlation_id} within {timeout:?} (is a replier consuming the \
         topic, and does it reply with create_reply_message?)"
    )]
    RequestTimeout {
        /// The request's timeout.
        timeout: Duration,
        /// The request's correlation id (its `CORRELATION_ID` property).
        correlation_id: String,
    },

    /// The broker stored a reply but could not push it to the requester
    /// (its answer to SEND_REPLY_MESSAGE_V2: the requester is not connected
    /// to that broker, e.g. it is gone). Not retried.
    #[error("the reply was stored but not delivered to requester {requester}: {remark}")]
    ReplyNotDelivered {
        /// The requester's client id (the reply's `REPLY_TO_CLIENT`).
        requester: String,
        /// The broker's words.
        remark: String,
    },

    /// A recall was refused ([`Producer::recall`](crate::Producer::recall)).
    #[error("cannot recall the message")]
    Recall(#[from] crate::recall::RecallError),

    /// The producer has been shut down.
    #[error("the producer has been shut down")]
    Shutdown,

    /// A call to the RocketMQ 5.x proxy failed (a producer built with
    /// [`endpoint`](crate::ProducerBuilder::endpoint)).
    #[error("proxy call failed")]
    Grpc(#[from] rmq_grpc::Error),

    /// What the producer's transport cannot do (e.g. transactions or
    /// oneway sends through the proxy); the text says what to use instead.
    #[error("not supported through this transport: {0}")]
    TransportUnsupported(String),

    /// The automatic batch this message was sent in failed (see
    /// [`ProducerBuilder::batching`](crate::ProducerBuilder::batching)):
    /// every message of it gets this error, sharing the batch's cause.
    /// [`Error::inner`] and the `is_*` questions look through to the cause.
    #[error("the automatic batch of {messages} messages this message was in failed")]
    BatchFailed {
        /// Messages in the batch.
        messages: usize,
        /// Why the batch failed.
        #[source]
        source: std::sync::Arc<Error>,
    },
}

/// Why a message or batch was rejected before sending.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum InvalidMessage {
    /// The topic name is invalid or reserved.
    #[error("topic {topic:?} cannot be sent to: {reason}")]
    Topic {
        /// The topic.
        topic: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The body is empty; the broker rejects empty bodies.
    #[error("the message body is empty")]
    EmptyBody,

    /// The body (or the encoded batch) is larger than the producer's
    /// maximum message size.
    #[error("the message is {size} bytes, over the maximum message size of {max} bytes")]
    TooLarge {
        /// Body (or encoded batch) size.
        size: usize,
        /// The producer's `max_message_size`.
        max: usize,
    },

    /// The `DELAY` property is not a non-negative integer.
    #[error("delay level {0:?} is not a non-negative integer")]
    DelayLevel(String),

    /// A property name or value cannot be carried (empty, or contains
    /// `0x01`/`0x02`), or the properties are too long.
    #[error("invalid message property")]
    Property(#[source] rmq_protocol::Error),

    /// The queue passed to `send_to_queue` is for another topic.
    #[error("the message is for topic {message_topic:?} but the queue is of topic {queue_topic:?}")]
    QueueTopic {
        /// The message's topic.
        message_topic: String,
        /// The queue's topic.
        queue_topic: String,
    },

    /// The message's 5.x type properties are invalid: a negative priority,
    /// a bad lite topic name, or two message types at once (e.g. a priority
    /// and a delivery time).
    #[error("invalid message type")]
    Type(#[source] rmq_protocol::message::TypeError),

    /// The topic's type (its 5.x `message.type`, as the proxy's route
    /// says) does not take a message of this type: the proxy would refuse
    /// it (Java gRPC client: "Current message type not match with topic
    /// accept message types").
    #[error(
        "topic {topic:?} takes {accepted} messages, but this is a {message_type} message; send it \
         to a topic of that type (mqadmin updateTopic -a +message.type={message_type})"
    )]
    TopicType {
        /// The topic.
        topic: String,
        /// The message's type (`NORMAL`, `FIFO`, `DELAY`, `TRANSACTION`,
        /// `PRIORITY`, `LITE`).
        message_type: rmq_protocol::message::MessageType,
        /// What the topic takes, as the route says (`NORMAL`, `FIFO or
        /// DELAY`, `UNSPECIFIED`).
        accepted: String,
    },

    /// The message uses something the proxy's protocol does not carry (a
    /// delay level, a message group together with a delivery time, ...).
    #[error("cannot be sent through the proxy: {0}")]
    NotOverGrpc(String),

    /// `send_batch` was given no message.
    #[error("the batch is empty")]
    EmptyBatch,

    /// The batch breaks a batch rule (one topic, no delay, no retry topic,
    /// one WAIT value).
    #[error("invalid batch: {0}")]
    Batch(String),

    /// A transactional send of a delayed message (a `DELAY` level or a 5.x
    /// timer property). The Java remoting client drops the delay level
    /// silently; rmq refuses instead.
    #[error(
        "a transactional message cannot be delayed, but it has the {property} property; \
         remove it (or send a plain delayed message instead)"
    )]
    TransactionDelay {
        /// The delay property found.
        property: String,
    },

    /// A batch holds a transactional message (`TRAN_MSG=true`): half
    /// messages are sent one at a time.
    #[error(
        "message {index} of the batch is transactional (TRAN_MSG=true); batches cannot be \
         transactional: send it with TransactionProducer::send_in_transaction"
    )]
    TransactionInBatch {
        /// Its index in the batch.
        index: usize,
    },

    /// One message of a batch is invalid.
    #[error("message {index} of the batch is invalid")]
    InBatch {
        /// Its index in the batch.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: Box<InvalidMessage>,
    },
}

/// The message(s) of a failed send, handed back.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unsent {
    /// One message.
    Message(Box<Message>),
    /// A batch.
    Batch(Vec<Message>),
}

impl Unsent {
    fn describe(&self) -> String {
        match self {
            Unsent::Message(_) => "a message".to_owned(),
            Unsent::Batch(b) => format!("a batch of {} messages", b.len()),
        }
    }
}

/// `Result` with this crate's [`Error`] as the default error type (what
/// the producer's own code passes around; its public methods return
/// [`rmq_error::Result`]).
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The message(s) a failed send hands back, taken from the
/// [`rmq_error::Error`] the send methods return (it wraps an
/// [`Error::Send`]): `use rmq_producer::UnsentExt` (in the facade,
/// `rmq::prelude::*`) and call them on the error.
///
/// ```no_run
/// # async fn demo(producer: rmq_producer::Producer) {
/// use rmq_producer::{Message, UnsentExt};
///
/// if let Err(e) = producer.send(Message::new("orders", "created")).await {
///     eprintln!("send failed: {e}");
///     if let Some(msg) = e.into_message() {
///         // the same message, with the UNIQ_KEY it was given: send it again later
///         # let _ = msg;
///     }
/// }
/// # }
/// ```
///
/// The same without the trait: `e.downcast::<rmq_producer::Error>()` gives
/// this crate's error back, whose [`Error::into_unsent`] takes them.
pub trait UnsentExt: sealed::Sealed {
    /// The message(s) a failed send hands back; `None` for an error that
    /// is not a send's.
    fn unsent(&self) -> Option<&Unsent>;

    /// Takes the message(s) a failed send hands back.
    fn into_unsent(self) -> Option<Unsent>;

    /// Takes the message of a failed single-message send.
    fn into_message(self) -> Option<Message>;
}

impl UnsentExt for rmq_error::Error {
    fn unsent(&self) -> Option<&Unsent> {
        self.downcast_ref::<Error>().and_then(Error::unsent)
    }

    fn into_unsent(self) -> Option<Unsent> {
        self.downcast::<Error>().ok().and_then(Error::into_unsent)
    }

    fn into_message(self) -> Option<Message> {
        self.downcast::<Error>().ok().and_then(Error::into_message)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for rmq_error::Error {}
}

impl Error {
    /// The reason behind an [`Error::Send`]; any other error itself.
    pub fn inner(&self) -> &Error {
        match self {
            Error::Send { source, .. } => source.inner(),
            Error::BatchFailed { source, .. } => source.inner(),
            other => other,
        }
    }

    /// The message(s) a failed send hands back.
    pub fn unsent(&self) -> Option<&Unsent> {
        match self {
            Error::Send { unsent, .. } => Some(unsent),
            _ => None,
        }
    }

    /// Takes the message(s) a failed send hands back.
    pub fn into_unsent(self) -> Option<Unsent> {
        match self {
            Error::Send { unsent, .. } => Some(unsent),
            _ => None,
        }
    }

    /// Takes the message of a failed single-message send.
    pub fn into_message(self) -> Option<Message> {
        match self.into_unsent()? {
            Unsent::Message(m) => Some(*m),
            Unsent::Batch(_) => None,
        }
    }

    /// Whether sending again (later, or to another broker) may succeed:
    /// timeouts, connection failures and the broker codes the Java producer
    /// retries ([`ResponseCode::is_retryable`]).
    pub fn is_retryable(&self) -> bool {
        match self.inner() {
            Error::Client(e) => e.is_retryable(),
            Error::Grpc(e) => e.is_retryable(),
            Error::Timeout { .. } => true,
            _ => false,
        }
    }

    /// Whether the broker refused the credentials or the user's
    /// permissions ([`rmq_client_core::Error::is_auth`]). Such a send is
    /// not retried; the message is handed back in [`Error::Send`].
    pub fn is_auth(&self) -> bool {
        match self.inner() {
            Error::Client(e) => e.is_auth(),
            Error::Grpc(e) => e.is_auth(),
            Error::Timeout { last: Some(e), .. } => e.is_auth(),
            _ => false,
        }
    }

    /// Whether the send timed out (the producer's send timeout, or a call
    /// or connect timeout underneath).
    pub fn is_timeout(&self) -> bool {
        match self.inner() {
            Error::Timeout { .. } | Error::RequestTimeout { .. } => true,
            Error::Client(e) => e.is_timeout(),
            Error::Grpc(e) => matches!(e, rmq_grpc::Error::Timeout { .. }),
            _ => false,
        }
    }

    /// Whether the broker does not support what the message asks for
    /// ([`Error::Unsupported`]; a recall turned off on the broker,
    /// [`RecallError::Disabled`](crate::RecallError::Disabled)), or the
    /// transport does not ([`Error::TransportUnsupported`]).
    pub fn is_unsupported(&self) -> bool {
        matches!(
            self.inner(),
            Error::Unsupported { .. }
                | Error::TransportUnsupported(_)
                | Error::Recall(crate::recall::RecallError::Disabled { .. })
        )
    }

    /// The broker's response code, when a broker refused the send.
    pub fn response_code(&self) -> Option<ResponseCode> {
        match self.inner() {
            Error::Client(e) => e.response_code(),
            Error::Timeout { last: Some(e), .. } => e.response_code(),
            _ => None,
        }
    }
}

impl rmq_error::Classify for Error {
    /// The kind of the reason ([`Error::inner`]); `None` for a client-core,
    /// protocol or proxy error, whose own kind decides.
    fn level_kind(&self) -> Option<rmq_error::ErrorKind> {
        use rmq_error::ErrorKind as K;
        match self.inner() {
            Error::Config(_) => Some(K::Config),
            Error::InvalidMessage(_) | Error::BadQueueIndex { .. } => Some(K::InvalidArgument),
            Error::NoWritableQueue { .. } => Some(K::Broker),
            Error::Timeout { .. } | Error::RequestTimeout { .. } => Some(K::Timeout),
            Error::Unsupported { .. } | Error::TransportUnsupported(_) => Some(K::Unsupported),
            Error::ReplyNotDelivered { .. } => Some(K::Broker),
            Error::Recall(e) => Some(e.kind()),
            Error::Shutdown => Some(K::Shutdown),
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

impl rmq_error::Classify for InvalidMessage {
    fn level_kind(&self) -> Option<rmq_error::ErrorKind> {
        Some(rmq_error::ErrorKind::InvalidArgument)
    }

    fn is_retryable(&self) -> bool {
        false
    }

    fn is_timeout(&self) -> bool {
        false
    }

    fn is_auth(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_wraps_and_hands_back() {
        let msg = Message::new("t", "x");
        let e = Error::Send {
            topic: "t".into(),
            attempts: 3,
            source: Box::new(Error::Timeout {
                timeout: Duration::from_secs(3),
                last: None,
            }),
            unsent: Unsent::Message(Box::new(msg.clone())),
        };
        assert!(e.is_timeout());
        assert!(e.is_retryable());
        assert!(matches!(e.inner(), Error::Timeout { .. }));
        assert_eq!(
            e.to_string(),
            "cannot send a message to topic \"t\" (3 attempts)"
        );
        assert_eq!(e.into_message(), Some(msg));

        let e = Error::Send {
            topic: "t".into(),
            attempts: 0,
            source: Box::new(InvalidMessage::EmptyBatch.into()),
            unsent: Unsent::Batch(vec![]),
        };
        assert!(!e.is_retryable());
        assert!(!e.is_timeout());
        assert!(e.to_string().contains("a batch of 0 messages"));
        assert_eq!(e.into_message(), None);
    }

    #[test]
    fn broker_codes() {
        let busy: Error = rmq_client_core::Error::Broker {
            addr: "a:1".into(),
            request: rmq_protocol::RequestCode::SEND_MESSAGE_V2,
            code: ResponseCode::SYSTEM_BUSY,
            remark: None,
        }
        .into();
        assert!(busy.is_retryable());
        assert_eq!(busy.response_code(), Some(ResponseCode::SYSTEM_BUSY));
        let illegal: Error = rmq_client_core::Error::Broker {
            addr: "a:1".into(),
            request: rmq_protocol::RequestCode::SEND_MESSAGE_V2,
            code: ResponseCode::MESSAGE_ILLEGAL,
            remark: None,
        }
        .into();
        assert!(!illegal.is_retryable());
    }

    #[test]
    fn send_errors_are_classified_by_their_cause() {
        let e: rmq_error::Error = Error::Send {
            topic: "t".into(),
            attempts: 1,
            source: Box::new(rmq_client_core::Error::RouteNotFound { topic: "t".into() }.into()),
            unsent: Unsent::Batch(vec![]),
        }
        .into();
        assert_eq!(e.kind(), rmq_error::ErrorKind::TopicNotFound);
        let text = e.to_string();
        assert_eq!(text.matches("no route for topic").count(), 1, "{text}");
        assert!(
            text.starts_with("cannot send a batch of 0 messages"),
            "{text}"
        );

        let e: rmq_error::Error = Error::Send {
            topic: "t".into(),
            attempts: 0,
            source: Box::new(InvalidMessage::EmptyBody.into()),
            unsent: Unsent::Message(Box::new(Message::new("t", ""))),
        }
        .into();
        assert_eq!(e.kind(), rmq_error::ErrorKind::InvalidArgument);
        assert!(!e.is_retryable());
    }

    #[test]
    fn the_unified_error_hands_the_message_back() {
        let msg = Message::new("t", "x");
        let send = || Error::Send {
            topic: "t".into(),
            attempts: 1,
            source: Box::new(Error::Shutdown),
            unsent: Unsent::Message(Box::new(msg.clone())),
        };
        let e: rmq_error::Error = send().into();
        assert_eq!(e.kind(), rmq_error::ErrorKind::Shutdown);
        assert!(matches!(e.unsent(), Some(Unsent::Message(_))));
        assert_eq!(e.into_message(), Some(msg.clone()));
        let e: rmq_error::Error = send().into();
        assert!(matches!(e.into_unsent(), Some(Unsent::Message(_))));
        let other: rmq_error::Error = Error::Shutdown.into();
        assert!(other.unsent().is_none());
        assert_eq!(other.into_message(), None);
        let client: rmq_error::Error = rmq_client_core::Error::Shutdown.into();
        assert_eq!(client.into_unsent(), None);
    }
}
