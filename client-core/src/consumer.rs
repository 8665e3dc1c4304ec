//! [`ConsumerHandle`]: what the client instance needs from a registered
//! consumer (heartbeat data, broker → client requests).

use futures::future::BoxFuture;
use rmq_protocol::body::{ConsumeMessageDirectlyResult, ConsumerData, ConsumerRunningInfo};
use rmq_protocol::{MessageExt, MessageQueue};

/// A consumer registered in a [`ClientInstance`](crate::ClientInstance)
/// with [`register_consumer`](crate::ClientInstance::register_consumer).
///
/// The instance calls these from its heartbeat and route tasks and from the
/// handlers of broker → client requests. The sync methods must be cheap and
/// must not block: hand real work to the consumer's own tasks.
pub trait ConsumerHandle: Send + Sync + 'static {
    /// The consumer's heartbeat entry: group, consume type, message model,
    /// consume-from-where and subscriptions (including the `%RETRY%`
    /// subscription in clustering mode). Its subscription topics are also
    /// kept fresh by the route refresh.
    fn consumer_data(&self) -> ConsumerData;

    /// The group's membership changed (NOTIFY_CONSUMER_IDS_CHANGED):
    /// rebalance soon, e.g. wake a `Notify`. Default: nothing.
    fn notify_ids_changed(&self) {}

    /// The broker asks to reset the group's offsets of `topic`
    /// (RESET_CONSUMER_CLIENT_OFFSET, 4.x brokers and 5.x with server-side
    /// reset off): enqueue the work, do not block. Default: ignored.
    fn reset_offset(&self, topic: &str, offsets: Vec<(MessageQueue, i64)>) {
        let _ = (topic, offsets);
    }

    /// The consumer's running info for admin tools
    /// (GET_CONSUMER_RUNNING_INFO). The instance adds the name-server and
    /// client-version properties. Default: the subscriptions and the
    /// consume type.
    fn running_info(&self) -> ConsumerRunningInfo {
        ConsumerRunningInfo::of_consumer(self.consumer_data())
    }

    /// Consumes one message on an admin's request (CONSUME_MESSAGE_DIRECTLY)
    /// and reports the outcome; `None` when this consumer cannot (the
    /// broker then gets SYSTEM_ERROR). Default: `None`.
    fn consume_message_directly(
        &self,
        msg: MessageExt,
        broker_name: Option<String>,
    ) -> BoxFuture<'static, Option<ConsumeMessageDirectlyResult>> {
        let _ = (msg, broker_name);
        Box::pin(async { None })
    }
}
