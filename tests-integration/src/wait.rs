//! Time limits for tests and bounded polling where no event exists to await.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

/// Upper bound for one test (the first test of a process may start the broker).
pub const TEST_TIMEOUT: Duration = Duration::from_secs(240);

/// Runs `fut`, failing the test when it takes longer than `limit`.
pub async fn within<F: Future>(limit: Duration, fut: F) -> F::Output {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("test did not finish within {limit:?}"),
    }
}

/// Polls `probe` every `every` until it returns `Some`, for state that offers no event to await
/// (broker-side offsets, consumer lists, another process's output). Panics with `what` and the
/// last probe's value when `limit` passes.
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
