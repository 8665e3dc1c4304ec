//! [`FakeClock`]: the cluster's clock, the system clock plus an offset a
//! test can move forward.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

/// The clock of a fake cluster: the system clock plus an offset that only
/// grows ([`FakeClock::advance`]).
///
/// It drives everything the broker decides by time: store timestamps, when
/// delayed and retried messages come due (delay levels), queue-lock leases
/// and client expiry. Advancing it delivers every delayed message that is
/// now due at once, so a test of "delay level 3 = 10 s" takes milliseconds:
///
/// ```no_run
/// # async fn demo() -> Result<(), rmq_fake::FakeError> {
/// let cluster = rmq_fake::FakeCluster::builder().start().await?;
/// // ... a consumer fails a message: the broker schedules the retry 10 s ahead ...
/// cluster.clock().advance(std::time::Duration::from_secs(10)); // the retry is delivered now
/// # Ok(()) }
/// ```
///
/// Long polling (a pull held for `suspendTimeoutMillis`) uses real time: the
/// client's own request timeouts run on real time too.
///
/// Clones share the clock.
#[derive(Debug, Clone)]
pub struct FakeClock {
    inner: Arc<ClockInner>,
}

#[derive(Debug)]
struct ClockInner {
    offset_ms: AtomicI64,
    changed: watch::Sender<i64>,
}

impl Default for FakeClock {
    fn default() -> Self {
        Self::new()
    }
}

fn system_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl FakeClock {
    /// A clock reading the system time (offset 0).
    pub fn new() -> Self {
        FakeClock {
            inner: Arc::new(ClockInner {
                offset_ms: AtomicI64::new(0),
                changed: watch::Sender::new(0),
            }),
        }
    }

    /// Now, in milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        system_ms().saturating_add(self.inner.offset_ms.load(Ordering::Acquire))
    }

    /// Now.
    pub fn now(&self) -> SystemTime {
        let ms = u64::try_from(self.now_ms()).unwrap_or(0);
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    /// How far the clock has been moved ahead of the system clock.
    pub fn offset(&self) -> Duration {
        Duration::from_millis(
            u64::try_from(self.inner.offset_ms.load(Ordering::Acquire)).unwrap_or(0),
        )
    }

    /// Moves the clock forward by `by`. Delayed messages that are now due are
    /// delivered, leases that are now expired count as expired.
    pub fn advance(&self, by: Duration) {
        let by = duration_ms(by);
        let new = self
            .inner
            .offset_ms
            .fetch_add(by, Ordering::AcqRel)
            .saturating_add(by);
        self.inner.changed.send_replace(new);
    }

    /// A receiver that changes on every [`advance`](Self::advance).
    pub(crate) fn subscribe(&self) -> watch::Receiver<i64> {
        self.inner.changed.subscribe()
    }

    /// Sleeps until this clock reads at least `deadline_ms`: real time, cut
    /// short by [`advance`](Self::advance).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it holds no state.
    pub(crate) async fn sleep_until_ms(&self, deadline_ms: i64) {
        let mut changes = self.subscribe();
        loop {
            let left = deadline_ms.saturating_sub(self.now_ms());
            if left <= 0 {
                return;
            }
            let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
            tokio::select! {
                () = tokio::time::sleep(left) => {}
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The clock is gone with its cluster; plain sleep.
                        tokio::time::sleep(left).await;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_moves_now_forward() {
        let clock = FakeClock::new();
        let before = clock.now_ms();
        clock.advance(Duration::from_secs(3600));
        assert!(clock.now_ms() >= before + 3_600_000);
        assert_eq!(clock.offset(), Duration::from_secs(3600));
    }

    #[tokio::test]
    async fn advance_wakes_a_sleeper() {
        let clock = FakeClock::new();
        let deadline = clock.now_ms() + 3_600_000;
        let sleeper = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.sleep_until_ms(deadline).await })
        };
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(3600));
        tokio::time::timeout(Duration::from_secs(5), sleeper)
            .await
            .expect("woken by advance")
            .expect("task ran");
    }
}
