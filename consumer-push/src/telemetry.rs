//! The push consumer's metrics, figures and spans: the named call sites
//! the pull loop, the consume services, the send-back, the rebalance and
//! the persist tick call (names and labels: the table in `METRICS.md` at
//! the repository root).
//!
//! Hot path: metric handles are built once per queue when the rebalance
//! assigns it ([`QueueMetrics`], kept in the process queue); the pull loop
//! and the consume services count per pulled batch and per listener call
//! (atomic adds, no allocation, no lock). The gauges of a queue (held
//! messages and bytes, lag) are set on the offset persist tick. The running
//! info ([`TopicStats`]) keeps its own totals, whatever the recorder.
//!
//! Spans (`tracing`, OpenTelemetry messaging field names): `pull` (debug),
//! `process` (one listener call), `send_back`, `rebalance`. A field that
//! costs work (message ids) is filled only when the span is enabled.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram};
use rmq_protocol::body::ConsumeStatus;
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::{Span, field};

/// Per-topic consume figures of the running info.
type StatusTable = Vec<(String, ConsumeStatus)>;
/// Extra running-info properties (name, value).
type Properties = Vec<(String, String)>;

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

/// The flow-control reasons of `pull_loop::over_threshold`, in label order.
const FLOW_REASONS: [&str; 3] = ["message count", "message size", "offset span"];

/// How long the running info's samples reach back.
const SAMPLE_WINDOW: Duration = Duration::from_secs(3600);
/// The window of the running info's rates (Java: per-minute stats).
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// Totals of one topic (the running info's `statusTable` and properties).
#[derive(Debug)]
pub(crate) struct TopicStats {
    totals: [AtomicU64; N_TOTALS],
    /// (when, totals then), oldest first; touched on the persist tick and
    /// by the running info only.
    samples: Mutex<VecDeque<(Instant, [u64; N_TOTALS])>>,
}

const N_TOTALS: usize = 11;
const PULLS: usize = 0;
const PULL_US: usize = 1;
const RECEIVED: usize = 2;
const CALLS: usize = 3;
const CALL_US: usize = 4;
const CONSUMED_OK: usize = 5;
const CONSUMED_FAILED: usize = 6;
const SENT_BACK_OK: usize = 7;
const SENT_BACK_FAILED: usize = 8;
const DLQ: usize = 9;
const FLOW_PAUSES: usize = 10;

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl TopicStats {
    fn new(now: Instant) -> Self {
        TopicStats {
            totals: Default::default(),
            samples: Mutex::new(VecDeque::from([(now, [0; N_TOTALS])])),
        }
    }

    fn add(&self, i: usize, n: u64) {
        if let Some(total) = self.totals.get(i) {
            total.fetch_add(n, Ordering::Relaxed);
        }
    }

    fn now(&self) -> [u64; N_TOTALS] {
        std::array::from_fn(|i| {
            self.totals
                .get(i)
                .map_or(0, |total| total.load(Ordering::Relaxed))
        })
    }

    /// Keeps a sample (the persist tick).
    fn sample(&self, now: Instant) {
        let totals = self.now();
        let mut s = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        s.push_back((now, totals));
        while s.len() > 1
            && s.front()
                .is_some_and(|(t, _)| now.duration_since(*t) > SAMPLE_WINDOW)
        {
            s.pop_front();
        }
    }

    /// Java `ConsumeStatus`: RTs in ms and TPS over about the last minute,
    /// failed messages over about the last hour.
    fn status(&self, now: Instant) -> ConsumeStatus {
        let totals = self.now();
        let s = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        let hour = s.front().map_or([0; N_TOTALS], |(_, t)| *t);
        // The newest sample at least a rate window old, else the oldest.
        let (since, base) = s
            .iter()
            .rev()
            .find(|(t, _)| now.duration_since(*t) >= RATE_WINDOW)
            .or(s.front())
            .map_or((now, [0; N_TOTALS]), |(t, v)| (*t, *v));
        drop(s);
        let d = |i: usize| {
            let now = totals.get(i).copied().unwrap_or(0);
            let then = base.get(i).copied().unwrap_or(0);
            now.saturating_sub(then) as f64
        };
        let secs = now.duration_since(since).as_secs_f64().max(1.0);
        let avg_ms = |sum: usize, n: usize| {
            if d(n) > 0.0 {
                d(sum) / d(n) / 1000.0
            } else {
                0.0
            }
        };
        ConsumeStatus {
            pull_rt: avg_ms(PULL_US, PULLS),
            pull_tps: d(RECEIVED) / secs,
            consume_rt: avg_ms(CALL_US, CALLS),
            consume_ok_tps: d(CONSUMED_OK) / secs,
            consume_failed_tps: d(CONSUMED_FAILED) / secs,
            consume_failed_msgs: i64::try_from(
                totals[CONSUMED_FAILED].saturating_sub(hour[CONSUMED_FAILED]),
            )
            .unwrap_or(i64::MAX),
        }
    }
}

/// The group-level handles and the topics' totals of one consumer.
#[derive(Debug)]
pub(crate) struct ConsumerMetrics {
    group: String,
    in_flight: Gauge,
    in_flight_now: AtomicI64,
    rebalances: Counter,
    rebalances_total: AtomicU64,
    rebalance_duration: Histogram,
    topics: Mutex<HashMap<String, Arc<TopicStats>>>,
}

impl ConsumerMetrics {
    pub(crate) fn new(group: &str) -> Self {
        let g = group.to_owned();
        ConsumerMetrics {
            in_flight: metrics::gauge!(IN_FLIGHT_CALLS, GROUP => g.clone()),
            in_flight_now: AtomicI64::new(0),
            rebalances: metrics::counter!(REBALANCES, GROUP => g.clone()),
            rebalances_total: AtomicU64::new(0),
            rebalance_duration: metrics::histogram!(REBALANCE_DURATION, GROUP => g.clone()),
            topics: Mutex::new(HashMap::new()),
            group: g,
        }
    }

    fn topic(&self, topic: &str) -> Arc<TopicStats> {
        let mut t = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        t.entry(topic.to_owned())
            .or_insert_with(|| Arc::new(TopicStats::new(Instant::now())))
            .clone()
    }

    /// The handles of a newly assigned queue (the rebalance; labels built
    /// here, once).
    pub(crate) fn queue(&self, mq: &MessageQueue) -> QueueMetrics {
        let g = || self.group.clone();
        let t = || mq.topic.clone();
        let q = || mq.queue_id.to_string();
        let b = || mq.broker_name.clone();
        QueueMetrics {
            received: metrics::counter!(RECEIVED_MESSAGES, GROUP => g(), DESTINATION => t()),
            consumed_ok: metrics::counter!(CONSUMED_MESSAGES, GROUP => g(), DESTINATION => t(), RESULT => "success"),
            consumed_failed: metrics::counter!(CONSUMED_MESSAGES, GROUP => g(), DESTINATION => t(), RESULT => "failure"),
            process_ok: metrics::histogram!(PROCESS_DURATION, GROUP => g(), DESTINATION => t(), RESULT => "success"),
            process_failed: metrics::histogram!(PROCESS_DURATION, GROUP => g(), DESTINATION => t(), RESULT => "failure"),
            pull_duration: metrics::histogram!(OPERATION_DURATION, GROUP => g(), DESTINATION => t(), OPERATION => "receive"),
            flow_control: FLOW_REASONS.map(|r| {
                metrics::counter!(FLOW_CONTROL_PAUSES, GROUP => g(), DESTINATION => t(), REASON => r)
            }),
            sent_back_ok: metrics::counter!(SENT_BACK_MESSAGES, GROUP => g(), DESTINATION => t(), RESULT => "success"),
            sent_back_failed: metrics::counter!(SENT_BACK_MESSAGES, GROUP => g(), DESTINATION => t(), RESULT => "failure"),
            dlq: metrics::counter!(DLQ_MESSAGES, GROUP => g(), DESTINATION => t()),
            pq_messages: metrics::gauge!(PROCESS_QUEUE_MESSAGES, GROUP => g(), DESTINATION => t(), BROKER => b(), QUEUE_ID => q()),
            pq_bytes: metrics::gauge!(PROCESS_QUEUE_BYTES, GROUP => g(), DESTINATION => t(), BROKER => b(), QUEUE_ID => q()),
            lag: metrics::gauge!(LAG, GROUP => g(), DESTINATION => t(), BROKER => b(), QUEUE_ID => q()),
            broker_max_offset: AtomicI64::new(-1),
            stats: self.topic(&mq.topic),
        }
    }

    /// A listener call starts.
    pub(crate) fn call_started(&self) {
        self.in_flight_now.fetch_add(1, Ordering::Relaxed);
        self.in_flight.increment(1.0);
    }

    /// A listener call ended.
    pub(crate) fn call_ended(&self) {
        self.in_flight_now.fetch_sub(1, Ordering::Relaxed);
        self.in_flight.decrement(1.0);
    }

    /// A rebalance run took `took`.
    pub(crate) fn rebalanced(&self, took: Duration) {
        self.rebalances_total.fetch_add(1, Ordering::Relaxed);
        self.rebalances.increment(1);
        self.rebalance_duration.record(took.as_secs_f64());
    }

    /// The persist tick: keeps a sample of every topic's totals.
    pub(crate) fn sample(&self, now: Instant) {
        let topics: Vec<Arc<TopicStats>> = self
            .topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for t in topics {
            t.sample(now);
        }
    }

    /// The running info's `statusTable` (per topic) and the consumer's
    /// figures as properties (`rmq.*`, added to Java's).
    pub(crate) fn running_info(&self, now: Instant, lag: i64) -> (StatusTable, Properties) {
        let topics: Vec<(String, Arc<TopicStats>)> = self
            .topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut sum = [0u64; N_TOTALS];
        let mut table = Vec::with_capacity(topics.len());
        for (topic, stats) in topics {
            for (s, v) in sum.iter_mut().zip(stats.now()) {
                *s = s.saturating_add(v);
            }
            table.push((topic, stats.status(now)));
        }
        let props = [
            ("rmq.receivedMessages", sum[RECEIVED].to_string()),
            ("rmq.consumedOkMessages", sum[CONSUMED_OK].to_string()),
            (
                "rmq.consumedFailedMessages",
                sum[CONSUMED_FAILED].to_string(),
            ),
            ("rmq.sentBackMessages", sum[SENT_BACK_OK].to_string()),
            ("rmq.sendBackFailures", sum[SENT_BACK_FAILED].to_string()),
            ("rmq.dlqMessages", sum[DLQ].to_string()),
            ("rmq.flowControlPauses", sum[FLOW_PAUSES].to_string()),
            (
                "rmq.rebalances",
                self.rebalances_total.load(Ordering::Relaxed).to_string(),
            ),
            (
                "rmq.inFlightCalls",
                self.in_flight_now
                    .load(Ordering::Relaxed)
                    .max(0)
                    .to_string(),
            ),
            ("rmq.lag", lag.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        (table, props)
    }
}

/// The handles and figures of one assigned queue.
#[derive(Debug)]
pub(crate) struct QueueMetrics {
    received: Counter,
    consumed_ok: Counter,
    consumed_failed: Counter,
    process_ok: Histogram,
    process_failed: Histogram,
    pull_duration: Histogram,
    flow_control: [Counter; 3],
    sent_back_ok: Counter,
    sent_back_failed: Counter,
    dlq: Counter,
    pq_messages: Gauge,
    pq_bytes: Gauge,
    lag: Gauge,
    /// The broker's max offset of the queue from the last pull answer;
    /// −1 before one.
    broker_max_offset: AtomicI64,
    stats: Arc<TopicStats>,
}

impl QueueMetrics {
    /// Handles reporting nowhere (process queues built without a consumer).
    #[cfg(test)]
    pub(crate) fn noop() -> Self {
        QueueMetrics {
            received: Counter::noop(),
            consumed_ok: Counter::noop(),
            consumed_failed: Counter::noop(),
            process_ok: Histogram::noop(),
            process_failed: Histogram::noop(),
            pull_duration: Histogram::noop(),
            flow_control: [Counter::noop(), Counter::noop(), Counter::noop()],
            sent_back_ok: Counter::noop(),
            sent_back_failed: Counter::noop(),
            dlq: Counter::noop(),
            pq_messages: Gauge::noop(),
            pq_bytes: Gauge::noop(),
            lag: Gauge::noop(),
            broker_max_offset: AtomicI64::new(-1),
            stats: Arc::new(TopicStats::new(Instant::now())),
        }
    }

    /// One pull answered after `took`; `kept` messages go to the listener;
    /// the broker's max offset was `max_offset`.
    pub(crate) fn pulled(&self, took: Duration, kept: usize, max_offset: i64) {
        self.pull_duration.record(took.as_secs_f64());
        self.stats.add(PULLS, 1);
        self.stats.add(PULL_US, micros(took));
        if kept > 0 {
            self.received.increment(count(kept));
            self.stats.add(RECEIVED, count(kept));
        }
        if max_offset >= 0 {
            self.broker_max_offset.store(max_offset, Ordering::Relaxed);
        }
    }

    /// A pull skipped by flow control for `reason`.
    pub(crate) fn flow_controlled(&self, reason: &str) {
        let i = FLOW_REASONS.iter().position(|r| *r == reason).unwrap_or(0);
        if let Some(counter) = self.flow_control.get(i) {
            counter.increment(1);
        }
        self.stats.add(FLOW_PAUSES, 1);
    }

    /// A listener call of `n` messages took `took`; `ok` of them succeeded.
    pub(crate) fn consumed(&self, took: Duration, n: usize, ok: usize) {
        let failed = n.saturating_sub(ok);
        self.stats.add(CALLS, 1);
        self.stats.add(CALL_US, micros(took));
        if ok > 0 {
            self.consumed_ok.increment(count(ok));
            self.stats.add(CONSUMED_OK, count(ok));
        }
        if failed > 0 {
            self.consumed_failed.increment(count(failed));
            self.stats.add(CONSUMED_FAILED, count(failed));
        }
        if failed == 0 {
            self.process_ok.record(took.as_secs_f64());
        } else {
            self.process_failed.record(took.as_secs_f64());
        }
    }

    /// A send-back ended; `dlq`: it sent the message to the DLQ.
    pub(crate) fn sent_back(&self, ok: bool, dlq: bool) {
        if ok {
            self.sent_back_ok.increment(1);
            self.stats.add(SENT_BACK_OK, 1);
            if dlq {
                self.dlq.increment(1);
                self.stats.add(DLQ, 1);
            }
        } else {
            self.sent_back_failed.increment(1);
            self.stats.add(SENT_BACK_FAILED, 1);
        }
    }

    /// The queue's lag given its committed offset (`None`: not committed
    /// yet, then counted from the pull position `next`): 0 before the first
    /// pull answer.
    pub(crate) fn lag(&self, committed: Option<i64>, next: Option<i64>) -> i64 {
        let max = self.broker_max_offset.load(Ordering::Relaxed);
        match committed.or(next) {
            Some(c) if max >= 0 => max.saturating_sub(c).max(0),
            _ => 0,
        }
    }

    /// The persist tick: the queue's gauges.
    pub(crate) fn set_gauges(&self, messages: usize, bytes: usize, lag: i64) {
        self.pq_messages.set(messages as f64);
        self.pq_bytes.set(bytes as f64);
        self.lag.set(lag as f64);
    }
}

/// The span of one pull of `mq` from `offset` (debug: one per long poll).
pub(crate) fn pull_span(group: &str, mq: &MessageQueue, offset: i64) -> Span {
    tracing::debug_span!(
        "pull",
        messaging.system = "rocketmq",
        messaging.operation.name = "receive",
        "messaging.operation.type" = "receive",
        messaging.consumer.group.name = group,
        messaging.destination.name = mq.topic.as_str(),
        messaging.rocketmq.broker.name = mq.broker_name.as_str(),
        messaging.destination.partition.id = mq.queue_id,
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
/// the first message; the result is recorded by [`processed`].
pub(crate) fn process_span(group: &str, mq: &MessageQueue, msgs: &[MessageExt]) -> Span {
    let span = tracing::info_span!(
        "process",
        messaging.system = "rocketmq",
        messaging.operation.name = "process",
        "messaging.operation.type" = "process",
        messaging.consumer.group.name = group,
        messaging.destination.name = mq.topic.as_str(),
        messaging.rocketmq.broker.name = mq.broker_name.as_str(),
        messaging.destination.partition.id = mq.queue_id,
        messaging.batch.message_count = msgs.len(),
        messaging.message.id = field::Empty,
        messaging.rocketmq.message.reconsume_times = msgs.first().map_or(0, |m| m.reconsume_times),
        messaging.rocketmq.consume.result = field::Empty,
    );
    if !span.is_disabled() {
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
