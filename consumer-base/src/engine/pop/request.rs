//! [`PopQuery`]: what one POP_MESSAGE asks for, and its request header.

use std::time::Duration;

use rmq_client_core::now_ms;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::SubscriptionData;
use rmq_protocol::header::PopMessageRequestHeader;
use rmq_protocol::namespace::Namespace;

/// Where a group without a pop offset starts (Java `ConsumeInitMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitMode {
    /// The first message still stored.
    Min,
    /// The end of the queue (the broker still starts at 0 while the
    /// queue's messages are all in memory).
    Max,
}

impl InitMode {
    fn code(self) -> i32 {
        match self {
            InitMode::Min => 0,
            InitMode::Max => 1,
        }
    }
}

/// One pop.
#[derive(Debug, Clone, Copy)]
pub struct PopQuery<'a> {
    /// The consumer group.
    pub group: &'a str,
    /// This client's id (the attempt id of an orderly pop starts with it).
    pub client_id: &'a str,
    /// The queue (`queue_id` -1: any queue of the broker).
    pub mq: &'a MessageQueue,
    /// The subscription (sent as the pop's filter, checked again on the
    /// answer).
    pub filter: &'a SubscriptionData,
    /// At most this many messages (at least 1).
    pub max: i32,
    /// How long the popped messages stay hidden from the group.
    pub invisible: Duration,
    /// How long the broker may hold the pop for a first message.
    pub poll: Duration,
    /// Where a group without an offset starts.
    pub init_mode: InitMode,
    /// Orderly pop: the broker hands a queue's messages to one member at a
    /// time, in order.
    pub order: bool,
    /// A popped message delivered more often than this goes to the DLQ
    /// instead of the consumer (`None`: the consumer decides).
    pub dlq_after: Option<i32>,
    /// The popped messages' topics leave this namespace.
    pub namespace: &'a Namespace,
}

/// The POP_MESSAGE header of `q`.
pub fn pop_header(q: &PopQuery<'_>, attempt_id: Option<String>) -> PopMessageRequestHeader {
    PopMessageRequestHeader {
        consumer_group: q.group.to_owned(),
        topic: q.mq.topic.clone(),
        queue_id: q.mq.queue_id,
        max_msg_nums: q.max.max(1),
        invisible_time: millis(q.invisible),
        poll_time: millis(q.poll),
        born_time: now_ms(),
        init_mode: q.init_mode.code(),
        exp_type: Some(q.filter.expression_type.to_string()),
        exp: Some(q.filter.sub_string.clone()),
        order: Some(q.order),
        attempt_id,
        broker_name: Some(q.mq.broker_name.clone()),
    }
}

/// `d` in milliseconds, saturated.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
