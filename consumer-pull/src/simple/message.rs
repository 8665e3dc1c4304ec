//! [`ReceivedMessage`] and its [`ReceiptHandle`].

use std::fmt;
use std::ops::Deref;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmq_consumer_base::engine::grpc::Handle;
use rmq_consumer_base::engine::pop::PopHandle;
use rmq_protocol::MessageExt;

use crate::error::{Error, Result};

/// What acks a received message or changes its invisible time: opaque,
/// `Send`, cheap to clone, valid in any task. A change of the invisible
/// time answers a new handle; the old one is then stale.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ReceiptHandle {
    repr: Repr,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// Remoting: the original topic and the broker's checkpoint.
    Pop(PopHandle),
    /// gRPC: the proxy's receipt handle and what it was granted.
    Grpc(GrpcHandle),
}

/// A receipt handle of the proxy (`ReceiveMessage`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct GrpcHandle {
    pub(crate) topic: String,
    pub(crate) message_id: String,
    pub(crate) handle: String,
    pub(crate) broker_name: String,
    pub(crate) invisible_ms: u64,
    pub(crate) visible_at_ms: u64,
}

impl Handle for GrpcHandle {
    fn topic(&self) -> &str {
        &self.topic
    }

    fn message_id(&self) -> &str {
        &self.message_id
    }

    fn receipt_handle(&self) -> &str {
        &self.handle
    }
}

impl ReceiptHandle {
    pub(crate) fn pop(handle: PopHandle) -> Self {
        ReceiptHandle {
            repr: Repr::Pop(handle),
        }
    }

    pub(crate) fn grpc(handle: GrpcHandle) -> Self {
        ReceiptHandle {
            repr: Repr::Grpc(handle),
        }
    }

    /// The pop engine's handle of a remoting handle.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a handle of a gRPC consumer.
    pub(crate) fn as_pop(&self) -> Result<&PopHandle> {
        match &self.repr {
            Repr::Pop(h) => Ok(h),
            Repr::Grpc(_) => Err(wrong_consumer(
                "through the proxy (endpoint)",
                "the brokers (namesrv_addr)",
            )),
        }
    }

    /// The proxy's handle of a gRPC handle.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a handle of a remoting consumer.
    pub(crate) fn as_grpc(&self) -> Result<&GrpcHandle> {
        match &self.repr {
            Repr::Grpc(h) => Ok(h),
            Repr::Pop(_) => Err(wrong_consumer(
                "from the brokers (namesrv_addr)",
                "the proxy (endpoint)",
            )),
        }
    }

    /// The broker the message was received from.
    pub fn broker_name(&self) -> &str {
        match &self.repr {
            Repr::Pop(h) => &h.ck.broker_name,
            Repr::Grpc(h) => &h.broker_name,
        }
    }

    /// When the message becomes visible again unless acked or hidden
    /// longer.
    pub fn visible_at(&self) -> SystemTime {
        let ms = match &self.repr {
            Repr::Pop(h) => u64::try_from(h.ck.visible_at_ms()).unwrap_or(0),
            Repr::Grpc(h) => h.visible_at_ms,
        };
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    /// The invisible time the handle was granted.
    pub fn invisible_duration(&self) -> Duration {
        match &self.repr {
            Repr::Pop(h) => Duration::from_millis(u64::try_from(h.ck.invisible_time).unwrap_or(0)),
            Repr::Grpc(h) => Duration::from_millis(h.invisible_ms),
        }
    }
}

impl fmt::Debug for ReceiptHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Pop(PopHandle { topic, ck }) => f
                .debug_struct("ReceiptHandle")
                .field("topic", &topic)
                .field("broker", &ck.broker_name)
                .field("queue_id", &ck.queue_id)
                .field("offset", &ck.queue_offset)
                .field("retry", &ck.retry)
                .finish_non_exhaustive(),
            Repr::Grpc(h) => f
                .debug_struct("ReceiptHandle")
                .field("topic", &h.topic)
                .field("broker", &h.broker_name)
                .field("message_id", &h.message_id)
                .finish_non_exhaustive(),
        }
    }
}

impl AsRef<ReceiptHandle> for ReceiptHandle {
    fn as_ref(&self) -> &ReceiptHandle {
        self
    }
}

/// A message received by a [`SimpleConsumer`](crate::SimpleConsumer): the
/// message (through `Deref`) and its [`ReceiptHandle`]. A redelivered
/// message shows its original topic and its
/// [`reconsume_times`](MessageExt::reconsume_times) counts the earlier
/// deliveries.
#[derive(Clone)]
pub struct ReceivedMessage {
    message: MessageExt,
    handle: ReceiptHandle,
}

impl ReceivedMessage {
    pub(crate) fn new(message: MessageExt, handle: ReceiptHandle) -> Self {
        ReceivedMessage { message, handle }
    }

    /// The message.
    pub fn message(&self) -> &MessageExt {
        &self.message
    }

    /// The message, without its handle.
    pub fn into_message(self) -> MessageExt {
        self.message
    }

    /// The current handle.
    pub fn handle(&self) -> &ReceiptHandle {
        &self.handle
    }

    /// Replaces the handle with the one a change of the invisible time
    /// answered.
    pub fn renew(&mut self, handle: ReceiptHandle) {
        self.handle = handle;
    }

    /// How many times the message was delivered before this delivery.
    pub fn reconsume_times(&self) -> u32 {
        u32::try_from(self.message.reconsume_times).unwrap_or(0)
    }
}

impl Deref for ReceivedMessage {
    type Target = MessageExt;

    fn deref(&self) -> &MessageExt {
        &self.message
    }
}

impl AsRef<ReceiptHandle> for ReceivedMessage {
    fn as_ref(&self) -> &ReceiptHandle {
        &self.handle
    }
}

impl fmt::Debug for ReceivedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReceivedMessage")
            .field("topic", &self.message.topic)
            .field("msg_id", &self.message.msg_id)
            .field("reconsume_times", &self.message.reconsume_times)
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

/// A handle given to a consumer of the other transport.
fn wrong_consumer(received: &str, given_to: &str) -> Error {
    Error::InvalidArgument(format!(
        "a handle received {received} given to a consumer of {given_to}; ack it with the \
         consumer that received it"
    ))
}

#[cfg(test)]
mod tests {
    use rmq_protocol::pop::ExtraInfo;

    use super::*;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn handles_are_send_and_show_no_internals_beyond_position() {
        assert_send_sync::<ReceiptHandle>();
        assert_send_sync::<ReceivedMessage>();
        let ck = ExtraInfo::parse("3 1000 2000 1 0 broker-a 2 4").unwrap();
        let h = ReceiptHandle::pop(PopHandle {
            topic: "T".into(),
            ck,
        });
        assert_eq!(h.broker_name(), "broker-a");
        assert_eq!(h.invisible_duration(), Duration::from_secs(2));
        assert_eq!(h.visible_at(), UNIX_EPOCH + Duration::from_millis(3000));
        let text = format!("{h:?}");
        assert!(
            text.contains("queue_id: 2") && text.contains("offset: 4"),
            "{text}"
        );
    }
}
