//! Queue choice and latency fault tolerance (Java `MQFaultStrategy`,
//! `LatencyFaultToleranceImpl`, `TopicPublishInfo.selectOneMessageQueue`).
//!
//! Every send attempt records its broker's latency. A broker whose send
//! failed is avoided for [`ISOLATION`]; a slow one for a time that grows with
//! its latency ([`LATENCY_MAX`] → [`NOT_AVAILABLE_DURATION`]). Queue choice
//! is round-robin over the topic's publish queues, skipping unavailable
//! brokers and the brokers that already failed during this send.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmq_protocol::MessageQueue;
use tokio::time::Instant;

/// Latency thresholds in ms (Java `MQFaultStrategy.latencyMax`).
pub(crate) const LATENCY_MAX: [u64; 7] = [50, 100, 550, 1000, 2000, 3000, 15000];

/// How long a broker is avoided after a send with a latency of at least the
/// matching [`LATENCY_MAX`] entry, in ms (Java `notAvailableDuration`).
pub(crate) const NOT_AVAILABLE_DURATION: [u64; 7] = [0, 0, 30000, 60000, 120000, 180000, 600000];

/// Latency charged to a broker whose send failed (Java: `updateFaultItem(..,
/// isolation = true)` computes the duration for 30 000 ms, i.e. 600 s).
pub(crate) const ISOLATION: Duration = Duration::from_millis(30_000);

/// How long a broker with `latency` is avoided (Java
/// `computeNotAvailableDuration`).
pub(crate) fn not_available_for(latency: Duration) -> Duration {
    let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
    LATENCY_MAX
        .iter()
        .zip(NOT_AVAILABLE_DURATION)
        .rev()
        .find(|(max, _)| ms >= **max)
        .map_or(Duration::ZERO, |(_, d)| Duration::from_millis(d))
}

#[derive(Debug, Clone, Copy)]
struct FaultItem {
    /// The broker is avoided until then.
    available_at: Instant,
}

/// Per-broker fault items, shared by all sends of one producer.
///
/// The lock is a plain `RwLock` held only for a map lookup or insert, never
/// across an await.
#[derive(Debug, Default)]
pub(crate) struct FaultTable {
    items: RwLock<HashMap<String, FaultItem>>,
}

impl FaultTable {
    /// Records a send to `broker` that took `latency`; `failed` isolates the
    /// broker as Java does for failures.
    pub(crate) fn update(&self, broker: &str, latency: Duration, failed: bool, now: Instant) {
        let charged = if failed {
            crate::telemetry::broker_isolated(broker);
            ISOLATION
        } else {
            latency
        };
        let item = FaultItem {
            available_at: now + not_available_for(charged),
        };
        let mut items = match self.items.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        match items.get_mut(broker) {
            Some(existing) => *existing = item,
            None => {
                items.insert(broker.to_owned(), item);
            }
        }
    }

    /// Forgets the avoided brokers that `known` no longer knows (gone from
    /// every route): a broker that left the cluster and comes back is sent
    /// to again at once, not only when its isolation (up to 10 min) ends.
    /// Costs one read of the table when no broker is avoided.
    pub(crate) fn forget_gone(&self, now: Instant, known: impl Fn(&str) -> bool) {
        let gone = |broker: &str, item: &FaultItem| now < item.available_at && !known(broker);
        {
            let items = match self.items.read() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            if !items.iter().any(|(b, item)| gone(b, item)) {
                return;
            }
        }
        let mut items = match self.items.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        items.retain(|b, item| !gone(b, item));
    }

    /// Whether `broker` may be sent to at `now` (unknown brokers are).
    pub(crate) fn is_available(&self, broker: &str, now: Instant) -> bool {
        let items = match self.items.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        items
            .get(broker)
            .is_none_or(|item| now >= item.available_at)
    }
}

/// Picks the queue for one send attempt.
///
/// Round-robin from `counter` (one per producer; Java keeps one per thread)
/// over `queues`, in this order of preference:
///
/// 1. a queue whose broker is available (`faults`, when latency fault
///    tolerance is on) and did not fail during this send (`failed`);
/// 2. a queue whose broker did not fail during this send;
/// 3. the next queue in turn.
///
/// `None` only when `queues` is empty.
pub(crate) fn select_queue<'q>(
    queues: &'q [MessageQueue],
    counter: &AtomicUsize,
    failed: &[String],
    faults: Option<&FaultTable>,
    now: Instant,
) -> Option<&'q MessageQueue> {
    let n = queues.len();
    if n == 0 {
        return None;
    }
    let start = counter.fetch_add(1, Ordering::Relaxed);
    let in_turn = || (0..n).filter_map(move |i| queues.get(start.wrapping_add(i) % n));
    let not_failed = |q: &&MessageQueue| !failed.contains(&q.broker_name);
    if let Some(faults) = faults {
        if let Some(q) = in_turn()
            .filter(not_failed)
            .find(|q| faults.is_available(&q.broker_name, now))
        {
            return Some(q);
        }
    }
    in_turn().find(not_failed).or_else(|| queues.get(start % n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_avoided_broker_gone_from_the_routes_is_forgotten() {
        let t = FaultTable::default();
        let now = Instant::now();
        t.update("broker-a", Duration::from_millis(5), false, now);
        t.update("broker-b", Duration::ZERO, true, now);
        t.update("broker-c", Duration::ZERO, true, now);
        assert!(!t.is_available("broker-b", now));
        // broker-c is still routed: it stays avoided; broker-b left every route.
        t.forget_gone(now, |b| b != "broker-b");
        assert!(t.is_available("broker-b", now));
        assert!(!t.is_available("broker-c", now));
        assert!(t.is_available("broker-a", now));
    }

    fn queues(brokers: &[&str], per: i32) -> Vec<MessageQueue> {
        brokers
            .iter()
            .flat_map(|b| (0..per).map(move |i| MessageQueue::new("t", *b, i)))
            .collect()
    }

    #[test]
    fn durations_match_java() {
        let ms = Duration::from_millis;
        assert_eq!(not_available_for(ms(0)), ms(0));
        assert_eq!(not_available_for(ms(549)), ms(0));
        assert_eq!(not_available_for(ms(550)), ms(30_000));
        assert_eq!(not_available_for(ms(1_000)), ms(60_000));
        assert_eq!(not_available_for(ms(2_999)), ms(120_000));
        assert_eq!(not_available_for(ms(3_000)), ms(180_000));
        assert_eq!(not_available_for(ISOLATION), ms(600_000));
        assert_eq!(not_available_for(Duration::MAX), ms(600_000));
    }

    #[test]
    fn round_robin() {
        let qs = queues(&["a", "b"], 2);
        let counter = AtomicUsize::new(0);
        let now = Instant::now();
        let picked: Vec<_> = (0..5)
            .map(|_| select_queue(&qs, &counter, &[], None, now).unwrap().clone())
            .collect();
        assert_eq!(picked[..4], qs[..]);
        assert_eq!(picked[4], qs[0]);
        assert!(select_queue(&[], &counter, &[], None, now).is_none());
    }

    #[test]
    fn avoids_failed_brokers() {
        let qs = queues(&["a", "b"], 2);
        let counter = AtomicUsize::new(0);
        let now = Instant::now();
        let failed = vec!["a".to_owned()];
        for _ in 0..4 {
            let q = select_queue(&qs, &counter, &failed, None, now).unwrap();
            assert_eq!(q.broker_name, "b");
        }
        // Every broker failed: still a queue, in turn.
        let all = vec!["a".to_owned(), "b".to_owned()];
        assert!(select_queue(&qs, &counter, &all, None, now).is_some());
    }

    #[test]
    fn fault_tolerance() {
        let qs = queues(&["a", "b"], 2);
        let counter = AtomicUsize::new(0);
        let faults = FaultTable::default();
        let now = Instant::now();
        faults.update("a", Duration::from_millis(5), true, now);
        assert!(!faults.is_available("a", now));
        assert!(faults.is_available("b", now));
        assert!(faults.is_available("c", now));
        for _ in 0..4 {
            let q = select_queue(&qs, &counter, &[], Some(&faults), now).unwrap();
            assert_eq!(q.broker_name, "b");
        }
        // Both unavailable, "b" failed in this send: prefer "a".
        faults.update("b", Duration::from_millis(5), true, now);
        let failed = vec!["b".to_owned()];
        let q = select_queue(&qs, &counter, &failed, Some(&faults), now).unwrap();
        assert_eq!(q.broker_name, "a");
        // Isolation ends.
        let later = now + Duration::from_secs(601);
        assert!(faults.is_available("a", later));
        // A fast success clears it at once.
        faults.update("a", Duration::from_millis(10), false, now);
        assert!(faults.is_available("a", now));
        // A slow one (≥ 550 ms) isolates for 30 s.
        faults.update("a", Duration::from_millis(600), false, now);
        assert!(!faults.is_available("a", now + Duration::from_secs(29)));
        assert!(faults.is_available("a", now + Duration::from_secs(30)));
    }
}
