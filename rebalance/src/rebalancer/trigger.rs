//! [`RebalanceTrigger`]: when a consumer should rebalance (Java
//! `RebalanceService`'s timing).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Default period between rebalances: 20 s (Java system property
/// `rocketmq.client.rebalance.waitInterval`).
pub const DEFAULT_REBALANCE_INTERVAL: Duration = Duration::from_secs(20);

/// Default minimum spacing between two rebalances: 1 s (Java system
/// property `rocketmq.client.rebalance.minInterval`).
pub const DEFAULT_MIN_REBALANCE_INTERVAL: Duration = Duration::from_secs(1);

/// Far enough to never fire, small enough to never overflow `Instant`.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Decides when a rebalance runs: every `interval` after the last run, at
/// once after [`notify`](Self::notify) (NOTIFY_CONSUMER_IDS_CHANGED, start,
/// a failed run that should be retried soon), and never two runs closer than
/// `min_interval` (measured between the starts of the runs).
///
/// A new trigger is due at once: the first [`wait`](Self::wait) returns
/// immediately (the rebalance at start).
///
/// Meant for one waiting task (the consumer's rebalance loop); `notify` may
/// be called from anywhere (it is cheap and never blocks).
///
/// ```
/// use std::time::Duration;
/// use rmq_rebalance::RebalanceTrigger;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let trigger = RebalanceTrigger::new();
/// trigger.wait().await;                     // at once: the start-up rebalance
/// let start = tokio::time::Instant::now();
/// trigger.notify();                         // e.g. the group's membership changed
/// trigger.wait().await;                     // after the 1 s minimum spacing
/// assert_eq!(start.elapsed(), Duration::from_secs(1));
/// trigger.wait().await;                     // then every 20 s
/// assert_eq!(start.elapsed(), Duration::from_secs(21));
/// # }
/// ```
#[derive(Debug)]
pub struct RebalanceTrigger {
    interval: Duration,
    min_interval: Duration,
    state: Mutex<State>,
    wakeup: Notify,
}

#[derive(Debug)]
struct State {
    /// A run was requested with `notify` (or this is a new trigger).
    pending: bool,
    /// When the last run was released by `wait`.
    last_run: Option<Instant>,
}

impl Default for RebalanceTrigger {
    fn default() -> Self {
        Self::new()
    }
}

impl RebalanceTrigger {
    /// A trigger with the Java defaults: every 20 s, at least 1 s apart.
    pub fn new() -> Self {
        Self::with_intervals(DEFAULT_REBALANCE_INTERVAL, DEFAULT_MIN_REBALANCE_INTERVAL)
    }

    /// A trigger that fires every `interval` and at most once per
    /// `min_interval`. An `interval` below `min_interval` effectively
    /// becomes `min_interval`.
    pub fn with_intervals(interval: Duration, min_interval: Duration) -> Self {
        RebalanceTrigger {
            interval,
            min_interval,
            state: Mutex::new(State {
                pending: true,
                last_run: None,
            }),
            wakeup: Notify::new(),
        }
    }

    /// The period between rebalances.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The minimum spacing between two rebalances.
    pub fn min_interval(&self) -> Duration {
        self.min_interval
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is two plain fields, consistent after every statement.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Requests a rebalance as soon as the minimum spacing allows. Several
    /// requests before the next run cause one run. Cheap, never blocks.
    pub fn notify(&self) {
        self.lock().pending = true;
        self.wakeup.notify_waiters();
    }

    /// Whether a [`notify`](Self::notify) is waiting for the next run.
    pub fn is_pending(&self) -> bool {
        self.lock().pending
    }

    /// Waits until a rebalance should run, then counts it as run (the next
    /// periodic run is due `interval` from now).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the trigger's state only changes in the final,
    /// synchronous step before it returns, so a `wait` dropped in a
    /// `select!` loses no request and counts no run.
    pub async fn wait(&self) {
        loop {
            let notified = self.wakeup.notified();
            tokio::pin!(notified);
            // Register before reading the state: a `notify` after the read
            // still wakes us.
            notified.as_mut().enable();
            let now = Instant::now();
            let due = {
                let mut state = self.lock();
                let due = self.due(&state, now);
                if due <= now {
                    state.pending = false;
                    state.last_run = Some(now);
                    return;
                }
                due
            };
            tokio::select! {
                () = tokio::time::sleep_until(due) => {}
                () = &mut notified => {}
            }
        }
    }

    /// When the next run is due, given the state at `now`.
    fn due(&self, state: &State, now: Instant) -> Instant {
        let Some(last) = state.last_run else {
            // Never ran: due at once when requested (a new trigger is).
            return if state.pending {
                now
            } else {
                later(now, self.interval)
            };
        };
        let earliest = later(last, self.min_interval);
        let wanted = if state.pending {
            now
        } else {
            later(last, self.interval)
        };
        wanted.max(earliest)
    }
}

fn later(t: Instant, d: Duration) -> Instant {
    t.checked_add(d)
        .or_else(|| t.checked_add(FAR_FUTURE))
        .unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[tokio::test(start_paused = true)]
    async fn first_wait_is_immediate_then_periodic() {
        let t = RebalanceTrigger::new();
        let start = Instant::now();
        t.wait().await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        t.wait().await;
        assert_eq!(start.elapsed(), secs(20));
        t.wait().await;
        assert_eq!(start.elapsed(), secs(40));
        assert!(!t.is_pending());
    }

    #[tokio::test(start_paused = true)]
    async fn notify_runs_at_once_when_spacing_allows() {
        let t = RebalanceTrigger::new();
        t.wait().await;
        tokio::time::sleep(secs(5)).await;
        let start = Instant::now();
        t.notify();
        assert!(t.is_pending());
        t.wait().await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        // The period restarts from the notified run.
        t.wait().await;
        assert_eq!(start.elapsed(), secs(20));
    }

    #[tokio::test(start_paused = true)]
    async fn notify_during_wait_wakes_the_waiter() {
        let t = Arc::new(RebalanceTrigger::new());
        t.wait().await;
        let start = Instant::now();
        let waiter = tokio::spawn({
            let t = Arc::clone(&t);
            async move {
                t.wait().await;
                Instant::now()
            }
        });
        tokio::time::sleep(secs(7)).await;
        t.notify();
        let woke = waiter.await.unwrap();
        assert_eq!(woke - start, secs(7));
    }

    #[tokio::test(start_paused = true)]
    async fn notifications_are_spaced_and_coalesced() {
        let t = RebalanceTrigger::new();
        let start = Instant::now();
        t.wait().await;
        // A burst right after a run: one run, 1 s after the previous one.
        for _ in 0..5 {
            t.notify();
        }
        t.wait().await;
        assert_eq!(start.elapsed(), secs(1));
        // Nothing pending any more: the next run is periodic.
        t.wait().await;
        assert_eq!(start.elapsed(), secs(21));
        // A request 300 ms after a run waits for the rest of the spacing.
        tokio::time::sleep(Duration::from_millis(300)).await;
        t.notify();
        t.wait().await;
        assert_eq!(start.elapsed(), secs(22));
    }

    #[tokio::test(start_paused = true)]
    async fn cancelled_wait_loses_nothing() {
        let t = RebalanceTrigger::new();
        t.wait().await;
        let start = Instant::now();
        t.notify();
        // Dropped before the spacing allowed the run: still pending.
        let r = tokio::time::timeout(Duration::from_millis(500), t.wait()).await;
        assert!(r.is_err());
        assert!(t.is_pending());
        t.wait().await;
        assert_eq!(start.elapsed(), secs(1));
        // Dropped during a periodic wait: the period is not reset.
        let r = tokio::time::timeout(secs(10), t.wait()).await;
        assert!(r.is_err());
        t.wait().await;
        assert_eq!(start.elapsed(), secs(21));
    }

    #[tokio::test(start_paused = true)]
    async fn custom_intervals() {
        let t = RebalanceTrigger::with_intervals(Duration::from_millis(100), secs(2));
        assert_eq!(t.interval(), Duration::from_millis(100));
        assert_eq!(t.min_interval(), secs(2));
        let start = Instant::now();
        t.wait().await;
        t.wait().await;
        assert_eq!(start.elapsed(), secs(2), "interval below the spacing");
        let huge = RebalanceTrigger::with_intervals(Duration::MAX, Duration::MAX);
        huge.wait().await; // first run still immediate, no overflow
        assert!(
            tokio::time::timeout(secs(3600), huge.wait()).await.is_err(),
            "never again within an hour"
        );
    }
}
