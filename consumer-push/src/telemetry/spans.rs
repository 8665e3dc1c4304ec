//! The spans (`tracing`, OpenTelemetry messaging field names): `pull`,
//! `process`, `send_back`, `rebalance`, and the calls that record their
//! results.

use rmq_protocol::{MessageExt, MessageQueue};
use tracing::{Span, field};

/// A span named `$name` (built by `tracing::$span!`) of operation `$op` on
/// queue `$mq` of group `$group`: the messaging system, the operation name
/// and type, the group, topic, broker and queue id, then `$fields`.
macro_rules! queue_span {
    ($span:ident, $name:literal, $op:literal, $group:expr, $mq:expr, $($fields:tt)*) => {
        tracing::$span!(
            $name,
            messaging.system = "rocketmq",
            messaging.operation.name = $op,
            "messaging.operation.type" = $op,
            messaging.consumer.group.name = $group,
            messaging.destination.name = $mq.topic.as_str(),
            messaging.rocketmq.broker.name = $mq.broker_name.as_str(),
            messaging.destination.partition.id = $mq.queue_id,
            $($fields)*
        )
    };
}

/// The span of one pull of `mq` from `offset` (debug: one per long poll).
pub(crate) fn pull_span(group: &str, mq: &MessageQueue, offset: i64) -> Span {
    queue_span!(
        debug_span,
        "pull",
        "receive",
        group,
        mq,
        messaging.rocketmq.queue_offset = offset,
        messaging.rocketmq.pull.status = field::Empty,
        messaging.batch.message_count = field::Empty,
    )
}

/// Fills a pull span's answer fields.
pub(crate) fn pull_answered(span: &Span, status: &'static str, found: usize) {
    if !span.is_disabled() {
        span.record("messaging.rocketmq.pull.status", status);
        span.record("messaging.batch.message_count", found);
    }
}

/// The span of one listener call on `msgs` of `mq`: group, topic, queue,
/// message ids (filled only when the span is enabled), reconsume times of
/// the first message; the result is recorded by [`processed`]. With the
/// `opentelemetry` feature the producers' trace contexts are its parent
/// (one message) or links (a batch).
pub(crate) fn process_span(group: &str, mq: &MessageQueue, msgs: &[MessageExt]) -> Span {
    let span = queue_span!(
        info_span,
        "process",
        "process",
        group,
        mq,
        messaging.batch.message_count = msgs.len(),
        messaging.message.id = field::Empty,
        messaging.rocketmq.message.reconsume_times = msgs.first().map_or(0, |m| m.reconsume_times),
        messaging.rocketmq.consume.result = field::Empty,
    );
    if !span.is_disabled() {
        #[cfg(feature = "opentelemetry")]
        rmq_client_core::otel::follow(&span, msgs);
        match msgs {
            [one] => {
                span.record("messaging.message.id", one.msg_id.as_str());
            }
            many => {
                let ids: Vec<&str> = many.iter().map(|m| m.msg_id.as_str()).collect();
                span.record("messaging.message.id", ids.join(",").as_str());
            }
        }
    }
    span
}

/// Records a listener call's result on its span.
pub(crate) fn processed(span: &Span, result: &'static str) {
    if !span.is_disabled() {
        span.record("messaging.rocketmq.consume.result", result);
    }
}

/// The span of one CONSUMER_SEND_MSG_BACK of `msg`.
pub(crate) fn send_back_span(group: &str, mq: &MessageQueue, msg: &MessageExt, delay: i32) -> Span {
    tracing::info_span!(
        "send_back",
        messaging.system = "rocketmq",
        messaging.operation.name = "send_back",
        messaging.consumer.group.name = group,
        messaging.destination.name = mq.topic.as_str(),
        messaging.destination.partition.id = mq.queue_id,
        messaging.message.id = msg.msg_id.as_str(),
        messaging.rocketmq.message.reconsume_times = msg.reconsume_times,
        messaging.rocketmq.delay_level = delay,
        messaging.rocketmq.send_back.result = field::Empty,
    )
}

/// Records a send-back's result on its span.
pub(crate) fn sent_back(span: &Span, ok: bool) {
    if !span.is_disabled() {
        span.record(
            "messaging.rocketmq.send_back.result",
            if ok { "success" } else { "failure" },
        );
    }
}

/// The span of one rebalance run of `group`.
pub(crate) fn rebalance_span(group: &str) -> Span {
    tracing::info_span!(
        "rebalance",
        messaging.system = "rocketmq",
        messaging.operation.name = "rebalance",
        messaging.consumer.group.name = group,
    )
}
