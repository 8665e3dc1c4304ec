//! Time limits for tests, and bounded waits for state that offers no event to await.
//!
//! Every wait here has a limit and fails the test with a message naming what it waited for.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

/// Upper bound for one end-to-end test (the first test of a process may start the broker).
pub const TEST_TIMEOUT: Duration = Duration::from_secs(240);

/// Upper bound for one end-to-end test that also starts, kills or restarts a broker.
pub const LONG_TEST_TIMEOUT: Duration = Duration::from_secs(300);

/// How often [`until`] checks its condition.
pub const CHECK_EVERY: Duration = Duration::from_millis(20);

/// Runs `fut`, failing the test when it takes longer than `limit`.
///
/// # Panics
///
/// When `fut` does not finish in time.
pub async fn within<F: Future>(limit: Duration, fut: F) -> F::Output {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("test did not finish within {limit:?}"),
    }
}

/// Polls `probe` every `every` until it returns `Ok`, for state that offers no event to await
/// (broker-side offsets, consumer lists, another process's output); returns the `Ok` value.
///
/// # Panics
///
/// When `limit` passes; the message names `what` and the last probe's `Err` value.
pub async fn poll_until<T, L, F, Fut>(
    limit: Duration,
    every: Duration,
    what: &str,
    mut probe: F,
) -> T
where
    L: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, L>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(last) => {
                if tokio::time::Instant::now() >= deadline {
                    panic!("{what}: not reached within {limit:?}; last seen: {last:?}");
                }
            }
        }
        tokio::time::sleep(every).await;
    }
}

/// Waits until `check` returns true, checking every [`CHECK_EVERY`].
///
/// # Panics
///
/// When `check` is still false after `limit`; the message names `what`.
pub async fn until<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    poll_until(limit, CHECK_EVERY, what, || {
        let fut = check();
        async move { if fut.await { Ok(()) } else { Err("false") } }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn until_returns_once_true() {
        let n = AtomicUsize::new(0);
        until(Duration::from_secs(1), "third check", || async {
            n.fetch_add(1, Ordering::SeqCst) >= 2
        })
        .await;
        assert_eq!(n.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    #[should_panic(expected = "never: not reached within")]
    async fn until_fails_after_the_limit() {
        until(Duration::from_millis(100), "never", || async { false }).await;
    }
}
