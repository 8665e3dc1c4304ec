//! The concurrent consume service (Java `ConsumeMessageConcurrentlyService`):
//! a pulled batch becomes listener calls, each holding one of
//! `consume_concurrency` semaphore permits while it runs, then settled
//! (failures sent back, messages removed from the process queue, offsets
//! committed). A queue's pull loop runs its batches' calls beside its pulls
//! ([`consume`]); local retries run in a task of their own ([`submit`]).

use std::sync::Arc;
use std::task::Poll;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmq_protocol::{MessageExt, MessageQueue};
use tokio::sync::{SemaphorePermit, TryAcquireError};
use tracing::{Instrument, debug, error, warn};

use crate::listener::call::guarded_since;

use crate::inner::{Inner, Listener};
use crate::listener::concurrent::{ConsumeContext, ConsumeResult};
use crate::listener::concurrent_settle::{self as settle, FailurePolicy};
use crate::pull::process_queue::ProcessQueue;
use crate::pull::send_back::send_back;
use crate::telemetry::{self, CallTally};

/// Splits `msgs` into listener calls of at most `consume_batch_max_size`
/// messages and runs them, in a tracked task of their own: the calls run
/// concurrently, each waiting for its own semaphore permit (so at most
/// `consume_concurrency` calls are in flight overall). Never waits. The
/// pull loops run their batches themselves ([`consume`]); this serves the
/// local retries.
pub(crate) fn submit(
    inner: &Arc<Inner>,
    pq: &Arc<ProcessQueue>,
    mq: &Arc<MessageQueue>,
    msgs: Vec<MessageExt>,
) {
    if msgs.is_empty() {
        return;
    }
    let abort = inner.core.cancel().clone();
    // Boxed: the listener calls' state would make this task's future
    // large, and spawning moves a future by value several times.
    let calls = Box::pin(consume(inner.clone(), pq.clone(), mq.clone(), msgs));
    inner.core.tasks().spawn(async move {
        tokio::select! {
            () = calls => {}
            () = abort.cancelled() => {}
        }
    });
}

/// Runs the listener calls of one batch concurrently (owning what they
/// need: the pull loop of `mq` polls this beside its pulls, [`submit`]
/// spawns it); each call borrows its slice of `msgs` (no copy of a
/// message, no list per call).
///
/// Each call is polled once right here: one that ends on its first poll
/// (a listener that does not wait, the common case) leaves no future
/// behind, and the offsets of all such calls that acknowledged everything
/// leave the process queue and reach the offset store together. A call
/// that waits (for a permit or in the listener) joins a set polled
/// concurrently and settles on its own.
pub(crate) async fn consume(
    inner: Arc<Inner>,
    pq: Arc<ProcessQueue>,
    mq: Arc<MessageQueue>,
    mut msgs: Vec<MessageExt>,
) {
    let (inner, pq, mq) = (&inner, &pq, &mq);
    // Shutdown stops new calls: checked once per batch (the token's check
    // takes a lock shared by every queue), and again by a call that had to
    // wait for a permit.
    if inner.stop_consume.is_cancelled() {
        return;
    }
    let size = inner.config.consume_batch_max_size.max(1);
    // Calls that start now (a permit free) share this start time; one that
    // waits for a permit marks its own.
    rmq_consumer_base::mark_consume_start(&mut msgs);
    let offsets: Vec<i64> = msgs.iter().map(|m| m.queue_offset).collect();
    let mut acked = Vec::with_capacity(offsets.len());
    let mut waiting = FuturesUnordered::new();
    // The permit of a call that ended on its first poll serves the next
    // call: calls that run one after the other need one permit between them.
    let mut held = None;
    // The counts of the calls that end on their first poll, added to the
    // topic's totals once for the batch.
    let mut tally = CallTally::default();
    // Calls that end on their first poll run one after the other: one
    // starts when the one before it ended, so one clock read serves as the
    // end of one and the start of the next (a read costs about as much as
    // the rest of a call's bookkeeping).
    let mut clock = tokio::time::Instant::now();
    for (i, batch) in msgs.chunks_mut(size).enumerate() {
        let first = i.saturating_mul(size);
        let range = first..first.saturating_add(batch.len());
        // Boxed: a waiting call moves into the set as a pointer.
        let mut call = Box::pin(consume_batch(inner, pq, mq, batch, held.take(), clock));
        match futures::poll!(call.as_mut()) {
            Poll::Ready(end) => {
                held = end.permit;
                clock = end.ended.unwrap_or_else(tokio::time::Instant::now);
                if let Some((took, n, ok)) = end.figures {
                    pq.metrics.consumed_into(&mut tally, took, n, ok);
                }
                if end.settled == Settled::Acked {
                    acked.extend_from_slice(offsets.get(range).unwrap_or_default());
                }
            }
            Poll::Pending => {
                waiting.push(async move {
                    let end = call.await;
                    if let Some((took, n, ok)) = end.figures {
                        pq.metrics.consumed(took, n, ok);
                    }
                    (range, end.settled)
                });
                clock = tokio::time::Instant::now();
            }
        }
    }
    drop(held);
    pq.metrics.consumed_tally(&tally);
    remove_and_commit(inner, pq, mq, acked);
    while let Some((range, settled)) = waiting.next().await {
        if settled == Settled::Acked {
            let offsets = offsets.get(range).unwrap_or_default();
            remove_and_commit(inner, pq, mq, offsets.iter().copied());
        }
    }
}

/// What [`consume_batch`] hands back to [`consume`].
struct CallEnd<'a> {
    settled: Settled,
    /// The permit, for the next call.
    permit: Option<SemaphorePermit<'a>>,
    /// The clock reading at the call's end; `None` when it did not run.
    ended: Option<tokio::time::Instant>,
    /// How long the call took, its messages and how many it consumed:
    /// for the caller to count (`None` when it did not run).
    figures: Option<(std::time::Duration, usize, usize)>,
}

impl CallEnd<'_> {
    /// Nothing ran.
    fn not_run<'a>(permit: Option<SemaphorePermit<'a>>) -> CallEnd<'a> {
        CallEnd {
            settled: Settled::Done,
            permit,
            ended: None,
            figures: None,
        }
    }
}

/// How a listener call ended, for [`consume`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Every message acknowledged: the caller removes them from the
    /// process queue and commits.
    Acked,
    /// Nothing left to do (settled, or not consumed at all).
    Done,
}

/// Removes acknowledged `offsets` from the process queue and commits the
/// queue's new consume offset.
fn remove_and_commit(
    inner: &Inner,
    pq: &ProcessQueue,
    mq: &MessageQueue,
    offsets: impl IntoIterator<Item = i64>,
) {
    let mut offsets = offsets.into_iter().peekable();
    if offsets.peek().is_none() {
        return;
    }
    let store = inner.core.offset_store();
    pq.remove_and_commit(offsets, |offset| store.update_offset(mq, offset, true));
}

/// Consumes `msgs` again after the local re-consume delay (their
/// send-back failed). Ends early on shutdown or when the queue is dropped.
fn spawn_later(
    inner: &Arc<Inner>,
    pq: Arc<ProcessQueue>,
    mq: Arc<MessageQueue>,
    msgs: Vec<MessageExt>,
) {
    let task_inner = inner.clone();
    inner.core.tasks().spawn(async move {
        let inner = task_inner;
        tokio::select! {
            () = tokio::time::sleep(inner.config.reconsume_delay_when_send_back_failed) => {}
            () = inner.stop_consume.cancelled() => return,
        }
        if !pq.is_dropped() {
            submit(&inner, &pq, &mq, msgs);
        }
    });
}

/// One listener call of `msgs` (with `permit` if the caller holds one) and
/// its settlement, except the removal and commit of a call that
/// acknowledged everything ([`Settled::Acked`]: the caller does it). The
/// permit comes back when the call ended with no send-back to make.
///
/// `now` is the caller's latest clock reading, the call's start unless it
/// has to wait for a permit; the clock reading at the call's end comes
/// back for the next call (`None` when the call did not run).
async fn consume_batch<'a>(
    inner: &'a Arc<Inner>,
    pq: &Arc<ProcessQueue>,
    shared_mq: &Arc<MessageQueue>,
    msgs: &'a mut [MessageExt],
    permit: Option<SemaphorePermit<'a>>,
    now: tokio::time::Instant,
) -> CallEnd<'a> {
    let mq: &MessageQueue = shared_mq;
    // The permit handed over, a free one at once, or wait for one.
    let (permit, started) = match permit.map_or_else(|| inner.semaphore.try_acquire(), Ok) {
        Ok(p) => (p, now),
        Err(TryAcquireError::Closed) => return CallEnd::not_run(None),
        Err(TryAcquireError::NoPermits) => {
            let permit = tokio::select! {
                permit = inner.semaphore.acquire() => match permit {
                    Ok(p) => p,
                    Err(_) => return CallEnd::not_run(None),
                },
                () = inner.stop_consume.cancelled() => return CallEnd::not_run(None),
            };
            // Shutdown may have begun while this call waited (the batch
            // checked before its first call).
            if inner.stop_consume.is_cancelled() {
                return CallEnd::not_run(None);
            }
            rmq_consumer_base::mark_consume_start(msgs);
            (permit, tokio::time::Instant::now())
        }
    };
    if !pq.begin_consume(started.into_std()) {
        debug!(queue = %mq, "queue dropped; not consuming");
        return CallEnd::not_run(Some(permit));
    }
    inner.metrics.queue_call_started();
    let mut ctx = ConsumeContext::shared(inner.user_queue(shared_mq));
    let span = telemetry::process_span(inner.core.group(), mq, msgs);
    let result = call_listener(inner, msgs, &mut ctx, started)
        .instrument(span.clone())
        .await;
    let ended = tokio::time::Instant::now();
    let took = ended.saturating_duration_since(started);
    inner.metrics.queue_call_ended();
    if !pq.end_consume() {
        debug!(queue = %mq, "queue dropped while consuming; result ignored, messages will be redelivered");
        return CallEnd {
            settled: Settled::Done,
            permit: Some(permit),
            ended: Some(ended),
            figures: None,
        };
    }
    let first_failed = settle::first_failed(result, ctx.ack_index(), msgs.len());
    let figures = Some((took, msgs.len(), first_failed));
    telemetry::processed(
        &span,
        if first_failed == msgs.len() {
            "CONSUME_SUCCESS"
        } else {
            "RECONSUME_LATER"
        },
    );
    if first_failed == msgs.len() {
        // Every message acknowledged (the common case): the caller removes
        // and commits them with the batch's other acknowledged calls.
        return CallEnd {
            settled: Settled::Acked,
            permit: Some(permit),
            ended: Some(ended),
            figures,
        };
    }
    // Send-backs can take long: they hold no permit.
    drop(permit);
    let mut sent_back = Vec::new();
    let failed = msgs.get(first_failed..).unwrap_or_default();
    match FailurePolicy::for_model(inner.model()) {
        FailurePolicy::SendBack => {
            for msg in failed {
                // Java: a message no longer in the queue is ignored.
                // Boxed: a send-back's state (a broker call) is large and
                // rare, and would otherwise size every listener call's future.
                let ok = !pq.contains(msg.queue_offset)
                    || Box::pin(send_back(
                        inner,
                        msg,
                        ctx.delay_level_when_next_consume(),
                        mq,
                        &pq.metrics,
                    ))
                    .await;
                sent_back.push(ok);
            }
        }
        FailurePolicy::Discard => {
            for msg in failed {
                warn!(
                    queue = %mq, offset = msg.queue_offset, msg_id = %msg.msg_id,
                    "broadcasting: consume failed, message dropped"
                );
            }
        }
    }
    let settlement = settle::settle(msgs, first_failed, &sent_back);
    remove_and_commit(inner, pq, mq, settlement.remove.iter().copied());
    if !settlement.retry_locally.is_empty() {
        spawn_later(
            inner,
            pq.clone(),
            shared_mq.clone(),
            settlement.retry_locally,
        );
    }
    CallEnd {
        settled: Settled::Done,
        permit: None,
        ended: Some(ended),
        figures,
    }
}

/// One listener call: a panic or exceeding the consume timeout count as
/// `ReconsumeLater`.
pub(crate) async fn call_listener(
    inner: &Inner,
    msgs: &[MessageExt],
    ctx: &mut ConsumeContext,
    started: tokio::time::Instant,
) -> ConsumeResult {
    let Listener::Concurrent(listener) = &inner.listener else {
        // Orderly consumers never submit here (the pull loop dispatches).
        error!(queue = %ctx.queue(), "concurrent consume requested by an orderly consumer");
        return ConsumeResult::ReconsumeLater;
    };
    let trace = crate::message_trace::before(inner, msgs);
    let call = guarded_since(
        started,
        inner.config.consume_timeout,
        listener.consume(msgs, ctx),
    )
    .await;
    let traced = crate::message_trace::outcome(&call, |r| *r == ConsumeResult::Success);
    crate::message_trace::after(inner, trace, traced);
    match call {
        Ok(result) => result,
        Err(failure) => {
            failure.log(
                ctx.queue(),
                msgs.first().map(|m| m.queue_offset),
                "ReconsumeLater",
            );
            ConsumeResult::ReconsumeLater
        }
    }
}
