//! One listener call under the consume timeout, with a panic caught: what
//! the concurrent and orderly services and CONSUME_MESSAGE_DIRECTLY share.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use rmq_protocol::MessageQueue;
use tracing::{error, warn};

/// Why a listener call gave no result.
pub(crate) enum CallFailure {
    /// It panicked (the payload).
    Panicked(Box<dyn Any + Send>),
    /// It ran longer than the consume timeout and was dropped.
    TimedOut(Duration),
}

impl fmt::Display for CallFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallFailure::Panicked(p) => {
                write!(f, "the listener panicked: {}", panic_message(&**p))
            }
            CallFailure::TimedOut(_) => f.write_str("the listener exceeded the consume timeout"),
        }
    }
}

impl CallFailure {
    /// Logs the failure of a call on `queue` (from `first_offset`), which
    /// the caller counts as `counted_as`.
    pub(crate) fn log(&self, queue: &MessageQueue, first_offset: Option<i64>, counted_as: &str) {
        match self {
            CallFailure::Panicked(p) => error!(
                queue = %queue,
                first_offset,
                panic = panic_message(&**p),
                "the listener panicked; counted as {counted_as}"
            ),
            CallFailure::TimedOut(timeout) => warn!(
                queue = %queue,
                first_offset,
                ?timeout,
                "the listener exceeded the consume timeout; call dropped, counted as {counted_as}"
            ),
        }
    }
}

/// Runs `call` for at most `timeout`, catching a panic.
///
/// # Errors
///
/// [`CallFailure`] when it panicked or timed out.
pub(crate) async fn guarded<T>(
    timeout: Duration,
    call: impl Future<Output = T>,
) -> Result<T, CallFailure> {
    guarded_since(tokio::time::Instant::now(), timeout, call).await
}

/// [`guarded`] for a call that started at `started` (the caller read the
/// clock already): the timeout counts from then.
///
/// The call is polled once before any timer exists: most listeners answer
/// on their first poll, and those cost no timer. One that waits is given
/// the rest of `timeout`; its timer is boxed, so that the future of every
/// call does not carry one.
///
/// # Errors
///
/// [`CallFailure`] when it panicked or timed out.
pub(crate) async fn guarded_since<T>(
    started: tokio::time::Instant,
    timeout: Duration,
    call: impl Future<Output = T>,
) -> Result<T, CallFailure> {
    let mut call = pin!(AssertUnwindSafe(call).catch_unwind());
    if let Poll::Ready(done) = futures::poll!(call.as_mut()) {
        return done.map_err(CallFailure::Panicked);
    }
    let done = match started.checked_add(timeout) {
        Some(deadline) => {
            let mut expired = Box::pin(tokio::time::sleep_until(deadline));
            tokio::select! {
                biased;
                done = call.as_mut() => done,
                () = expired.as_mut() => return Err(CallFailure::TimedOut(timeout)),
            }
        }
        // A timeout beyond the clock's range: no deadline at all.
        None => call.await,
    };
    done.map_err(CallFailure::Panicked)
}

/// The text of a panic payload.
fn panic_message(panic: &(dyn Any + Send)) -> &str {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "<non-string panic payload>"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_payloads() {
        let a: Box<dyn Any + Send> = Box::new("boom");
        assert_eq!(panic_message(&*a), "boom");
        let b: Box<dyn Any + Send> = Box::new(String::from("bang"));
        assert_eq!(panic_message(&*b), "bang");
        let c: Box<dyn Any + Send> = Box::new(5_u8);
        assert!(panic_message(&*c).contains("non-string"));
    }

    #[tokio::test(start_paused = true)]
    async fn panics_and_timeouts_become_failures() {
        let ok = guarded(Duration::from_secs(1), async { 7 }).await;
        assert!(matches!(ok, Ok(7)));
        let panicked = guarded(Duration::from_secs(1), async {
            if true {
                panic!("boom");
            }
        })
        .await;
        let Err(failure) = panicked else {
            panic!("expected a failure")
        };
        assert_eq!(failure.to_string(), "the listener panicked: boom");
        let slow = guarded(Duration::from_secs(1), std::future::pending::<()>()).await;
        assert!(matches!(slow, Err(CallFailure::TimedOut(_))));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_waits_keeps_its_timeout_and_panic_guard() {
        let started = tokio::time::Instant::now();
        let waited = guarded(Duration::from_secs(2), async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            9
        })
        .await;
        assert!(matches!(waited, Ok(9)));
        let late = guarded(Duration::from_secs(2), async {
            tokio::time::sleep(Duration::from_secs(3)).await;
        })
        .await;
        assert!(matches!(late, Err(CallFailure::TimedOut(_))));
        // The deadline counts from the call's start: 1.5 s, then 2 s.
        assert_eq!(started.elapsed(), Duration::from_millis(3500));
        let panicked = guarded(Duration::from_secs(2), async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            if true {
                panic!("late boom");
            }
        })
        .await;
        let Err(failure) = panicked else {
            panic!("expected a failure")
        };
        assert_eq!(failure.to_string(), "the listener panicked: late boom");
    }
}
