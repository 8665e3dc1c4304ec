//! Settle calls tried until they work ([`retrying`]): a call that fails
//! for a reason worth retrying goes again every [`ROUND_PAUSE`] for
//! [`ROUNDS`] rounds (each with the session's own retries), about half a
//! minute — long enough to outlast a proxy restart. Java retries until it
//! works: a message the proxy renews for this client stays hidden until
//! one of them works (its FIFO queue blocked meanwhile) or the session
//! ends.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// Rounds of a settle call that keeps failing with a retryable error.
pub const ROUNDS: u32 = 30;
/// Pause between rounds.
pub const ROUND_PAUSE: Duration = Duration::from_secs(1);

/// Makes the proxy call `call` about message `msg_id` until it succeeds:
/// again after [`ROUND_PAUSE`] while its error is retryable, for at most
/// [`ROUNDS`] rounds and until `stop` is cancelled. `None` when it never
/// did (logged as `what` failing).
pub async fn retrying<T, F, Fut>(
    what: &str,
    msg_id: &str,
    stop: &CancellationToken,
    mut call: F,
) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = rmq_grpc::Result<T>>,
{
    for round in 1..=ROUNDS {
        match call().await {
            Ok(v) => return Some(v),
            Err(e) if e.is_retryable() && round < ROUNDS && !stop.is_cancelled() => {
                debug!(msg_id, error = %rmq_protocol::ErrorChain(&e), "{what} failed; trying again");
                pause(stop).await;
            }
            Err(e) => {
                warn!(msg_id, error = %rmq_protocol::ErrorChain(&e), "{what} failed for good");
                return None;
            }
        }
    }
    None
}

/// [`ROUND_PAUSE`], cut short by `stop`.
pub(super) async fn pause(stop: &CancellationToken) {
    tokio::select! {
        () = tokio::time::sleep(ROUND_PAUSE) => {}
        () = stop.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use tokio::time::Instant;

    use super::super::script::{refused, timed_out};
    use super::*;

    /// `retrying` over a call that fails `fails` times with `error`.
    async fn run(
        fails: u32,
        error: fn() -> rmq_grpc::Error,
        stop: &CancellationToken,
    ) -> (Option<u32>, u32) {
        let calls = AtomicU32::new(0);
        let got = retrying("calling", "m", stop, || {
            let n = calls.fetch_add(1, Ordering::Relaxed) + 1;
            async move { if n <= fails { Err(error()) } else { Ok(n) } }
        })
        .await;
        (got, calls.load(Ordering::Relaxed))
    }

    #[tokio::test(start_paused = true)]
    async fn a_retryable_failure_is_tried_again_every_round_pause() {
        let stop = CancellationToken::new();
        let started = Instant::now();
        assert_eq!(run(3, timed_out, &stop).await, (Some(4), 4));
        assert_eq!(started.elapsed(), ROUND_PAUSE * 3);
    }

    #[tokio::test(start_paused = true)]
    async fn it_gives_up_after_the_last_round() {
        let stop = CancellationToken::new();
        let started = Instant::now();
        assert_eq!(run(u32::MAX, timed_out, &stop).await, (None, ROUNDS));
        assert_eq!(started.elapsed(), ROUND_PAUSE * (ROUNDS - 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_is_not_tried_again() {
        let stop = CancellationToken::new();
        let started = Instant::now();
        assert_eq!(run(1, refused, &stop).await, (None, 1));
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_ends_the_rounds() {
        let stop = CancellationToken::new();
        let cancel = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ROUND_PAUSE * 2 + ROUND_PAUSE / 2).await;
            cancel.cancel();
        });
        let started = Instant::now();
        // Rounds at 0, 1 s, 2 s; the pause after that one ends at 2.5 s and
        // the round then is the last.
        assert_eq!(run(u32::MAX, timed_out, &stop).await, (None, 4));
        assert_eq!(started.elapsed(), ROUND_PAUSE * 2 + ROUND_PAUSE / 2);
    }
}
