//! [`PopHandle`]: what names a popped message in the calls that settle it
//! (ack, invisible-time change, DLQ); [`Popped`]: a popped message with
//! its handle; [`decode`]: a pop answer's messages as the consumers see
//! them (Java `DefaultMQPushConsumerImpl.processPopResult`).

use rmq_protocol::MessageExt;
use rmq_protocol::body::SubscriptionData;
use rmq_protocol::pop::{ExtraInfo, POP_CK, pop_retry_origin};
use tracing::warn;

/// A popped message as its broker tracks it: the subscribed topic (the
/// message may come from its pop retry topic) and the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PopHandle {
    /// The subscribed topic.
    pub topic: String,
    /// The checkpoint (`POP_CK`): the broker, queue, offsets and the
    /// invisible time granted.
    pub ck: ExtraInfo,
}

/// A popped message and its handle.
#[derive(Debug, Clone)]
pub struct Popped {
    /// The message, with its original topic.
    pub msg: MessageExt,
    /// What settles it.
    pub handle: PopHandle,
}

/// What a pop answered, decoded.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The messages to hand to the consumer.
    pub kept: Vec<Popped>,
    /// The messages whose tag the subscription does not accept (the broker
    /// filters by tag hash code): acked at once, as Java does.
    pub filtered: Vec<PopHandle>,
}

/// Decodes popped messages of `topic` for `group`: a message of the pop
/// retry topic gets its original topic back, a message without a
/// checkpoint is skipped (it comes back after its invisible time), the
/// tags are checked again against `filter`.
pub fn decode(
    msgs: Vec<MessageExt>,
    group: &str,
    topic: &str,
    filter: &SubscriptionData,
) -> Decoded {
    let recheck = !filter.tags_set.is_empty() && !filter.class_filter_mode;
    let mut out = Decoded {
        kept: Vec::with_capacity(msgs.len()),
        filtered: Vec::new(),
    };
    for mut msg in msgs {
        if let Some(origin) = pop_retry_origin(&msg.topic, group) {
            msg.topic = origin.to_owned();
        }
        let Some(ck) = msg.property(POP_CK).and_then(|c| ExtraInfo::parse(c).ok()) else {
            warn!(msg_id = %msg.msg_id, "popped message without a checkpoint; skipped (it comes back after its invisible time)");
            continue;
        };
        let handle = PopHandle {
            topic: topic.to_owned(),
            ck,
        };
        if recheck && !filter.matches_tag(msg.tags()) {
            out.filtered.push(handle);
            continue;
        }
        out.kept.push(Popped { msg, handle });
    }
    out
}
