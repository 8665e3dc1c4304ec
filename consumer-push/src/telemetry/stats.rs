//! [`TopicStats`]: one topic's totals and samples, the running info's
//! per-topic figures whatever the metrics recorder.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmq_protocol::body::ConsumeStatus;

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

/// How many totals a topic keeps; the indices below name them.
pub(super) const N_TOTALS: usize = 11;
pub(super) const PULLS: usize = 0;
pub(super) const PULL_US: usize = 1;
pub(super) const RECEIVED: usize = 2;
pub(super) const CALLS: usize = 3;
pub(super) const CALL_US: usize = 4;
pub(super) const CONSUMED_OK: usize = 5;
pub(super) const CONSUMED_FAILED: usize = 6;
pub(super) const SENT_BACK_OK: usize = 7;
pub(super) const SENT_BACK_FAILED: usize = 8;
pub(super) const DLQ: usize = 9;
pub(super) const FLOW_PAUSES: usize = 10;

impl TopicStats {
    pub(super) fn new(now: Instant) -> Self {
        TopicStats {
            totals: Default::default(),
            samples: Mutex::new(VecDeque::from([(now, [0; N_TOTALS])])),
        }
    }

    pub(super) fn add(&self, i: usize, n: u64) {
        if let Some(total) = self.totals.get(i) {
            total.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub(super) fn now(&self) -> [u64; N_TOTALS] {
        std::array::from_fn(|i| {
            self.totals
                .get(i)
                .map_or(0, |total| total.load(Ordering::Relaxed))
        })
    }

    /// Keeps a sample (the persist tick).
    pub(super) fn sample(&self, now: Instant) {
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
    pub(super) fn status(&self, now: Instant) -> ConsumeStatus {
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
