//! [`ConsumerMetrics`] (group-level handles, the topics' totals, the
//! running info) and [`QueueMetrics`] (the handles of one assigned queue).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram};
use rmq_protocol::MessageQueue;
use rmq_protocol::body::ConsumeStatus;

use super::stats::{
    CALL_US, CALLS, CONSUMED_FAILED, CONSUMED_OK, DLQ, FLOW_PAUSES, N_TOTALS, PULL_US, PULLS,
    RECEIVED, SENT_BACK_FAILED, SENT_BACK_OK, TopicStats,
};
use super::{
    ACKED_MESSAGES, BROKER, CONSUMED_MESSAGES, DESTINATION, DLQ_MESSAGES, FLOW_CONTROL_PAUSES,
    FLOW_REASONS, GROUP, IN_FLIGHT_CALLS, LAG, OPERATION, OPERATION_DURATION, PROCESS_DURATION,
    PROCESS_QUEUE_BYTES, PROCESS_QUEUE_MESSAGES, QUEUE_ID, REASON, REBALANCE_DURATION, REBALANCES,
    RECEIVED_MESSAGES, RESULT, SENT_BACK_MESSAGES,
};

/// Per-topic consume figures of the running info.
type StatusTable = Vec<(String, ConsumeStatus)>;
/// Extra running-info properties (name, value).
type Properties = Vec<(String, String)>;

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The ack outcomes of a consumer in pop mode or over the proxy: the
/// metric ([`ACKED_MESSAGES`]) and the running info's totals. Cheap to
/// clone; clones count together.
#[derive(Debug, Clone)]
pub(crate) struct AckCounts {
    ok: Counter,
    failed: Counter,
    /// Acks taken, acks failed.
    totals: Arc<[AtomicU64; 2]>,
}

impl AckCounts {
    fn new(group: &str) -> Self {
        let g = || group.to_owned();
        AckCounts {
            ok: metrics::counter!(ACKED_MESSAGES, GROUP => g(), RESULT => "success"),
            failed: metrics::counter!(ACKED_MESSAGES, GROUP => g(), RESULT => "failure"),
            totals: Arc::default(),
        }
    }

    /// Counts reporting nowhere.
    #[cfg(test)]
    fn noop() -> Self {
        AckCounts {
            ok: Counter::noop(),
            failed: Counter::noop(),
            totals: Arc::default(),
        }
    }

    /// `ok` acks were taken, `failed` failed.
    pub(crate) fn record(&self, ok: usize, failed: usize) {
        let [taken, lost] = &*self.totals;
        if ok > 0 {
            self.ok.increment(count(ok));
            taken.fetch_add(count(ok), Ordering::Relaxed);
        }
        if failed > 0 {
            self.failed.increment(count(failed));
            lost.fetch_add(count(failed), Ordering::Relaxed);
        }
    }

    /// Acks taken and failed since the start.
    fn totals(&self) -> (u64, u64) {
        let [taken, lost] = &*self.totals;
        (taken.load(Ordering::Relaxed), lost.load(Ordering::Relaxed))
    }
}

/// The group-level handles and the topics' totals of one consumer.
#[derive(Debug)]
pub(crate) struct ConsumerMetrics {
    group: String,
    acks: AckCounts,
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
            acks: AckCounts::new(&g),
            group: g,
        }
    }

    /// The consumer's ack outcomes (pop mode, proxy).
    pub(crate) fn acks(&self) -> &AckCounts {
        &self.acks
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
            acks: self.acks.clone(),
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

    /// A listener call of a process queue starts: the gauge only (the
    /// queue counts its own calls, [`running_info`](Self::running_info)
    /// adds them up), so that calls of different queues share no counter.
    pub(crate) fn queue_call_started(&self) {
        self.in_flight.increment(1.0);
    }

    /// A listener call of a process queue ended (the gauge only).
    pub(crate) fn queue_call_ended(&self) {
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
    /// figures as properties (`rmq.*`, added to Java's); `queue_calls`: the
    /// listener calls in flight that the process queues count.
    pub(crate) fn running_info(
        &self,
        now: Instant,
        lag: i64,
        queue_calls: usize,
    ) -> (StatusTable, Properties) {
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
        let (acked, ack_failures) = self.acks.totals();
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
            ("rmq.ackedMessages", acked.to_string()),
            ("rmq.ackFailures", ack_failures.to_string()),
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
                    .saturating_add(i64::try_from(queue_calls).unwrap_or(i64::MAX))
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

/// Listener calls counted for one update of the totals.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallTally {
    calls: u64,
    micros: u64,
    ok: u64,
    failed: u64,
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
    acks: AckCounts,
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
            acks: AckCounts::noop(),
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

    /// The listener calls of `tally`, added to the totals at once (the
    /// histograms took each call already).
    pub(crate) fn consumed_tally(&self, tally: &CallTally) {
        if tally.calls == 0 {
            return;
        }
        self.stats.add(CALLS, tally.calls);
        self.stats.add(CALL_US, tally.micros);
        if tally.ok > 0 {
            self.consumed_ok.increment(tally.ok);
            self.stats.add(CONSUMED_OK, tally.ok);
        }
        if tally.failed > 0 {
            self.consumed_failed.increment(tally.failed);
            self.stats.add(CONSUMED_FAILED, tally.failed);
        }
    }

    /// One listener call of `n` messages that took `took`, `ok` of them
    /// consumed: its histogram now, its counts into `tally` (the totals
    /// are shared by every queue of the topic: one update per batch).
    pub(crate) fn consumed_into(&self, tally: &mut CallTally, took: Duration, n: usize, ok: usize) {
        let failed = n.saturating_sub(ok);
        if failed == 0 {
            self.process_ok.record(took.as_secs_f64());
        } else {
            self.process_failed.record(took.as_secs_f64());
        }
        tally.calls = tally.calls.saturating_add(1);
        tally.micros = tally.micros.saturating_add(micros(took));
        tally.ok = tally.ok.saturating_add(count(ok));
        tally.failed = tally.failed.saturating_add(count(failed));
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

    /// The ack of a consumed message was taken (`true`) or failed.
    pub(crate) fn acked(&self, ok: bool) {
        if ok {
            self.acks.record(1, 0);
        } else {
            self.acks.record(0, 1);
        }
    }

    /// The queue's lag given its committed offset (`None`: not committed
    /// yet, then counted from the pull position `next`): 0 before the first
    /// pull answer.
    pub(crate) fn lag(&self, committed: Option<i64>, next: Option<i64>) -> i64 {
        super::lag(
            self.broker_max_offset.load(Ordering::Relaxed),
            committed,
            next,
        )
    }

    /// The persist tick: the queue's gauges.
    pub(crate) fn set_gauges(&self, messages: usize, bytes: usize, lag: i64) {
        self.pq_messages.set(messages as f64);
        self.pq_bytes.set(bytes as f64);
        self.lag.set(lag as f64);
    }
}
