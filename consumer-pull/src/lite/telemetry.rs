//! The lite pull consumer's metrics (names and labels: the table in
//! `METRICS.md` at the repository root, constants in
//! [`rmq_consumer_base::telemetry`]): messages received and the pull round
//! trip per pulled batch, the lag of every assigned queue when offsets are
//! persisted, the rebalance runs. It has no listener, so the listener's
//! figures (consumed, process duration, in-flight calls) are the
//! application's to count.
//!
//! Hot path: a queue's handles are built once when it is assigned and kept
//! by its pull task; a pull answer costs a few atomic adds, no allocation
//! and no lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram};
use rmq_consumer_base::telemetry::{
    BROKER, DESTINATION, GROUP, LAG, OPERATION, OPERATION_DURATION, QUEUE_ID, REBALANCE_DURATION,
    REBALANCES, RECEIVED_MESSAGES,
};
use rmq_protocol::MessageQueue;

/// The group-level handles and every assigned queue's.
#[derive(Debug)]
pub(crate) struct LiteMetrics {
    group: String,
    rebalances: Counter,
    rebalance_duration: Histogram,
    queues: Mutex<HashMap<MessageQueue, Arc<QueueMetrics>>>,
}

impl LiteMetrics {
    pub(crate) fn new(group: &str) -> Self {
        LiteMetrics {
            group: group.to_owned(),
            rebalances: metrics::counter!(REBALANCES, GROUP => group.to_owned()),
            rebalance_duration: metrics::histogram!(REBALANCE_DURATION, GROUP => group.to_owned()),
            queues: Mutex::new(HashMap::new()),
        }
    }

    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<MessageQueue, Arc<QueueMetrics>>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The handles of `mq` (built when first asked for: the queue was
    /// assigned; a seek's new pull task gets the same ones).
    pub(crate) fn queue(&self, mq: &MessageQueue) -> Arc<QueueMetrics> {
        self.queues()
            .entry(mq.clone())
            .or_insert_with(|| Arc::new(QueueMetrics::new(&self.group, mq)))
            .clone()
    }

    /// `mq` is no longer assigned: its lag reads 0 and its handles go.
    pub(crate) fn forget(&self, mq: &MessageQueue) {
        if let Some(q) = self.queues().remove(mq) {
            q.lag.set(0.0);
        }
    }

    /// A rebalance run took `took`.
    pub(crate) fn rebalanced(&self, took: Duration) {
        self.rebalances.increment(1);
        self.rebalance_duration.record(took.as_secs_f64());
    }

    /// Offsets are being persisted: every assigned queue's lag from the
    /// committed offsets in `committed` (the offset store's table).
    pub(crate) fn refresh_lags(&self, committed: &HashMap<MessageQueue, i64>) {
        let queues: Vec<(MessageQueue, Arc<QueueMetrics>)> = self
            .queues()
            .iter()
            .map(|(mq, q)| (mq.clone(), q.clone()))
            .collect();
        for (mq, q) in queues {
            let lag = q.lag(committed.get(&mq).copied());
            q.lag.set(lag as f64);
        }
    }
}

/// The handles and the last broker figures of one assigned queue.
#[derive(Debug)]
pub(crate) struct QueueMetrics {
    received: Counter,
    pull_duration: Histogram,
    lag: Gauge,
    /// The broker's max offset from the last pull answer; −1 before one.
    broker_max_offset: AtomicI64,
    /// Where the pull task reads next (the lag of a queue not committed
    /// yet counts from there); −1 before the first answer.
    next_offset: AtomicI64,
}

impl QueueMetrics {
    fn new(group: &str, mq: &MessageQueue) -> Self {
        let g = || group.to_owned();
        let t = || mq.topic.clone();
        QueueMetrics {
            received: metrics::counter!(RECEIVED_MESSAGES, GROUP => g(), DESTINATION => t()),
            pull_duration: metrics::histogram!(OPERATION_DURATION, GROUP => g(), DESTINATION => t(), OPERATION => "receive"),
            lag: metrics::gauge!(LAG, GROUP => g(), DESTINATION => t(), BROKER => mq.broker_name.clone(), QUEUE_ID => mq.queue_id.to_string()),
            broker_max_offset: AtomicI64::new(-1),
            next_offset: AtomicI64::new(-1),
        }
    }

    /// One pull answered after `took` with `kept` messages for the
    /// application; the broker's max offset was `max_offset`, the next
    /// pull starts at `next`.
    pub(crate) fn pulled(&self, took: Duration, kept: usize, max_offset: i64, next: i64) {
        self.pull_duration.record(took.as_secs_f64());
        if kept > 0 {
            self.received
                .increment(u64::try_from(kept).unwrap_or(u64::MAX));
        }
        if max_offset >= 0 {
            self.broker_max_offset.store(max_offset, Ordering::Relaxed);
        }
        self.next_offset.store(next, Ordering::Relaxed);
    }

    /// The lag given the committed offset (`None`: nothing committed yet,
    /// counted from the pull position); 0 before the first pull answer.
    fn lag(&self, committed: Option<i64>) -> i64 {
        let next = Some(self.next_offset.load(Ordering::Relaxed)).filter(|n| *n >= 0);
        rmq_consumer_base::telemetry::lag(
            self.broker_max_offset.load(Ordering::Relaxed),
            committed,
            next,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq() -> MessageQueue {
        MessageQueue::new("t", "broker-a", 1)
    }

    #[test]
    fn lag_counts_from_the_commit_else_from_the_pull_position() {
        let m = LiteMetrics::new("g");
        let q = m.queue(&mq());
        assert_eq!(q.lag(Some(3)), 0, "no pull answer yet");
        q.pulled(Duration::from_millis(1), 4, 10, 4);
        assert_eq!(q.lag(Some(3)), 7);
        assert_eq!(q.lag(None), 6, "nothing committed: from the pull position");
        assert_eq!(q.lag(Some(12)), 0, "never negative");
        assert!(
            Arc::ptr_eq(&q, &m.queue(&mq())),
            "one set of handles per queue"
        );
        m.forget(&mq());
        assert!(!Arc::ptr_eq(&q, &m.queue(&mq())), "forgotten, then new");
    }
}
