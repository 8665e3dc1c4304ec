//! The consumers' metric and label names (the table in `METRICS.md` at the
//! repository root). The push consumer reports all of them; the lite pull
//! consumer (no listener) reports [`RECEIVED_MESSAGES`], [`OPERATION_DURATION`],
//! [`LAG`], [`REBALANCES`] and [`REBALANCE_DURATION`]. Both compute the lag
//! with [`lag`].
//!
//! ```
//! assert_eq!(rmq_consumer_base::telemetry::LAG, "messaging.rocketmq.consumer.lag");
//! ```

/// Counter: messages pulled and kept (after tag filtering), labels group,
/// topic.
pub const RECEIVED_MESSAGES: &str = "messaging.rocketmq.consumer.received.messages";
/// Counter: messages handed to the listener, by [`RESULT`] (`success`,
/// `failure`: reconsume later, a panic or the consume timeout).
pub const CONSUMED_MESSAGES: &str = "messaging.client.consumed.messages";
/// Histogram (seconds): one listener call, by [`RESULT`].
pub const PROCESS_DURATION: &str = "messaging.process.duration";
/// Histogram (seconds): one PULL_MESSAGE round trip (includes the
/// broker's long-polling hold), operation `receive`.
pub const OPERATION_DURATION: &str = "messaging.client.operation.duration";
/// Gauge: listener calls running now, label group.
pub const IN_FLIGHT_CALLS: &str = "messaging.rocketmq.consumer.inflight.calls";
/// Gauge: messages held by a queue's process queue, labels group, topic,
/// broker, queue id (set on the persist tick).
pub const PROCESS_QUEUE_MESSAGES: &str = "messaging.rocketmq.consumer.process_queue.messages";
/// Gauge: body bytes held by a queue's process queue (as above).
pub const PROCESS_QUEUE_BYTES: &str = "messaging.rocketmq.consumer.process_queue.bytes";
/// Gauge: a queue's lag: the broker's max offset (from the last pull
/// answer) − the committed consume offset (set on the persist tick).
pub const LAG: &str = "messaging.rocketmq.consumer.lag";
/// Counter: messages sent back to the broker for a retry
/// (CONSUMER_SEND_MSG_BACK), by [`RESULT`] `success` / `failure`
/// (a failed send-back keeps the message, consumed again locally).
pub const SENT_BACK_MESSAGES: &str = "messaging.rocketmq.consumer.sent_back.messages";
/// Counter: acks of consumed messages a push consumer sent in pop mode or
/// through the proxy, by [`RESULT`] `success` (the broker or proxy took
/// them) / `failure` (the message comes back after its invisible time),
/// label group.
pub const ACKED_MESSAGES: &str = "messaging.rocketmq.consumer.acked.messages";
/// Counter: messages sent to the dead-letter queue (past the max
/// reconsume times).
pub const DLQ_MESSAGES: &str = "messaging.rocketmq.consumer.dlq.messages";
/// Counter: pulls skipped by flow control, by [`REASON`].
pub const FLOW_CONTROL_PAUSES: &str = "messaging.rocketmq.consumer.flow_control.pauses";
/// Counter: rebalance runs, label group.
pub const REBALANCES: &str = "messaging.rocketmq.consumer.rebalances";
/// Histogram (seconds): one rebalance run, label group.
pub const REBALANCE_DURATION: &str = "messaging.rocketmq.consumer.rebalance.duration";

/// Label: the consumer group (OpenTelemetry `messaging.consumer.group.name`).
pub const GROUP: &str = "messaging.consumer.group.name";
/// Label: the topic (OpenTelemetry `messaging.destination.name`).
pub const DESTINATION: &str = "messaging.destination.name";
/// Label: the broker name.
pub const BROKER: &str = "messaging.rocketmq.broker.name";
/// Label: the queue id (OpenTelemetry `messaging.destination.partition.id`).
pub const QUEUE_ID: &str = "messaging.destination.partition.id";
/// Label: `success` / `failure`.
pub const RESULT: &str = "messaging.rocketmq.consume.result";
/// Label: the operation (`receive`).
pub const OPERATION: &str = "messaging.operation.name";
/// Label: the flow-control threshold (`message count`, `message size`,
/// `offset span`).
pub const REASON: &str = "messaging.rocketmq.flow_control.reason";

/// A queue's lag as the consumers report it ([`LAG`]): the broker's max
/// offset `max` (from the last pull answer; negative before one) minus
/// the committed offset, or minus the pull position `next` when nothing is
/// committed yet; never negative, 0 before the first pull answer.
///
/// ```
/// use rmq_consumer_base::telemetry::lag;
/// assert_eq!(lag(10, Some(3), Some(8)), 7);
/// assert_eq!(lag(10, None, Some(8)), 2);
/// assert_eq!(lag(-1, Some(3), None), 0);
/// assert_eq!(lag(10, Some(12), None), 0);
/// ```
pub fn lag(max: i64, committed: Option<i64>, next: Option<i64>) -> i64 {
    match committed.or(next) {
        Some(c) if max >= 0 => max.saturating_sub(c).max(0),
        _ => 0,
    }
}
