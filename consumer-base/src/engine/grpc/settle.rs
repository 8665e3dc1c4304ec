//! Settling a message other than by an ack: a new invisible time
//! (`ChangeInvisibleDuration`: [`change_invisible`] once, [`hide`] until it
//! works) and the DLQ (`ForwardMessageToDeadLetterQueue`:
//! [`forward_to_dlq`], until it works).

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::calls::ProxyCalls;
use super::handle::{Handle, Named};
use super::rounds::retrying;

/// `ChangeInvisibleDuration` of `msg` for `group`: hidden for `invisible`
/// from now; answers the renewed receipt handle (the old one is stale).
///
/// # Errors
///
/// The call's (e.g. `INVALID_RECEIPT_HANDLE` once the message came back).
pub async fn change_invisible<S: ProxyCalls>(
    session: &S,
    group: &str,
    msg: &impl Handle,
    invisible: Duration,
) -> rmq_grpc::Result<String> {
    session
        .change_invisible_duration(group, Named::of(msg), invisible)
        .await
}

/// Hides `msg` (its `attempt`-th delivery failed) for `delay`: the proxy
/// delivers it again then, with the attempt + 1. Tried until it works (see
/// [`retrying`]); `false` when the proxy never took it.
pub async fn hide<S: ProxyCalls>(
    session: &S,
    group: &str,
    msg: &impl Handle,
    attempt: i32,
    delay: Duration,
    stop: &CancellationToken,
) -> bool {
    let msg_id = msg.message_id();
    let changed = retrying("changing the invisible time", msg_id, stop, || {
        change_invisible(session, group, msg, delay)
    })
    .await
    .is_some();
    if changed {
        debug!(
            msg_id,
            attempt,
            ?delay,
            "consume failed; delivered again later"
        );
    }
    changed
}

/// Moves `msg`, delivered `attempt` times of at most `max_attempts`, to
/// `group`'s DLQ. Tried until it works (see [`retrying`]); `false` when the
/// proxy never took it.
pub async fn forward_to_dlq<S: ProxyCalls>(
    session: &S,
    group: &str,
    msg: &impl Handle,
    attempt: i32,
    max_attempts: i32,
    stop: &CancellationToken,
) -> bool {
    let msg_id = msg.message_id();
    let forwarded = retrying("forwarding to the DLQ", msg_id, stop, || {
        session.forward_to_dead_letter_queue(group, Named::of(msg), attempt, max_attempts)
    })
    .await
    .is_some();
    if forwarded {
        info!(msg_id, attempt, "message moved to the DLQ");
    }
    forwarded
}

#[cfg(test)]
mod tests {
    use super::super::rounds::ROUND_PAUSE;
    use super::super::script::{Call, Script, refused, timed_out};
    use super::*;

    fn names() -> [String; 4] {
        ["T", "G", "m", "h"].map(str::to_owned)
    }

    const MSG: Named<'static> = Named {
        topic: "T",
        message_id: "m",
        receipt_handle: "h",
    };

    #[tokio::test(start_paused = true)]
    async fn a_change_answers_the_renewed_handle() {
        let script = Script::new();
        script.change_answers([Ok("h2".to_owned()), Err(refused())]);
        let d = Duration::from_secs(30);
        assert_eq!(change_invisible(&script, "G", &MSG, d).await.unwrap(), "h2");
        assert!(change_invisible(&script, "G", &MSG, d).await.is_err());
        let calls = script.calls();
        let expected = Call::Change(names(), d);
        assert_eq!(calls, [expected.clone(), expected]);
    }

    #[tokio::test(start_paused = true)]
    async fn hide_and_dlq_go_again_until_taken() {
        let script = Script::new();
        script.change_answers([Err(timed_out()), Ok("h2".to_owned())]);
        script.dlq_answers([Err(timed_out()), Err(timed_out()), Ok(())]);
        let stop = CancellationToken::new();
        let started = tokio::time::Instant::now();
        assert!(hide(&script, "G", &MSG, 2, Duration::from_secs(5), &stop).await);
        assert!(forward_to_dlq(&script, "G", &MSG, 17, 17, &stop).await);
        assert_eq!(started.elapsed(), ROUND_PAUSE * 3);
        let calls = script.calls();
        assert_eq!(calls.len(), 5);
        assert_eq!(calls.last(), Some(&Call::Dlq(names(), 17, 17)));
        // A refusal ends it.
        script.dlq_answers([Err(refused())]);
        assert!(!forward_to_dlq(&script, "G", &MSG, 3, 17, &stop).await);
    }
}
