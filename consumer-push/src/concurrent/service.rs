//! The concurrent consume service (Java `ConsumeMessageConcurrentlyService`):
//! batches from the pull loops become tracked tasks that wait for one of
//! `consume_concurrency` semaphore permits, call the listener, then settle
//! the batch (send failures back, remove from the process queue, commit).

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::{Instrument, debug, error, warn};

use crate::call::guarded;

use crate::concurrent::listener::{ConsumeContext, ConsumeResult};
use crate::concurrent::settle::{self, FailurePolicy};
use crate::inner::{Inner, Listener};
use crate::process_queue::ProcessQueue;
use crate::send_back::send_back;
use crate::telemetry;

/// Splits `msgs` into listener calls of at most `consume_batch_max_size`
/// messages and schedules them: one tracked task per submitted batch runs
/// its calls concurrently, each waiting for its own semaphore permit (so at
/// most `consume_concurrency` calls are in flight overall). Never waits.
pub(crate) fn submit(
    inner: &Arc<Inner>,
    pq: &Arc<ProcessQueue>,
    mq: &Arc<MessageQueue>,
    msgs: Vec<MessageExt>,
) {
    if msgs.is_empty() {
        return;
    }
    let task_inner = inner.clone();
    let pq = pq.clone();
    // The pull loop's copy of the queue, shared by the batch's calls and their contexts.
    let mq = mq.clone();
    inner.core.tasks().spawn(async move {
        let inner = task_inner;
        let abort = inner.core.cancel().clone();
        // Boxed: the listener calls' state would make this task's future
        // large, and spawning moves a future by value several times.
        let calls = Box::pin(consume_all(&inner, &pq, &mq, msgs));
        tokio::select! {
            () = calls => {}
            () = abort.cancelled() => {}
        }
    });
}

/// Runs the listener calls of one submitted batch concurrently; each call
/// borrows its slice of `msgs` (no copy of a message, no list per call).
async fn consume_all(
    inner: &Arc<Inner>,
    pq: &Arc<ProcessQueue>,
    mq: &Arc<MessageQueue>,
    mut msgs: Vec<MessageExt>,
) {
    let size = inner.config.consume_batch_max_size.max(1);
    if msgs.len() <= size {
        consume_batch(inner, pq, mq, &mut msgs).await;
        return;
    }
    let mut calls = FuturesUnordered::new();
    for batch in msgs.chunks_mut(size) {
        // Boxed: the set then moves a pointer, not the call's large state.
        calls.push(Box::pin(consume_batch(inner, pq, mq, batch)));
    }
    while calls.next().await.is_some() {}
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

async fn consume_batch(
    inner: &Arc<Inner>,
    pq: &Arc<ProcessQueue>,
    shared_mq: &Arc<MessageQueue>,
    msgs: &mut [MessageExt],
) {
    let mq: &MessageQueue = shared_mq;
    let permit = tokio::select! {
        permit = inner.semaphore.clone().acquire_owned() => match permit {
            Ok(p) => p,
            Err(_) => return,
        },
        () = inner.stop_consume.cancelled() => return,
    };
    if pq.is_dropped() {
        debug!(queue = %mq, "queue dropped; not consuming");
        return;
    }
    rmq_consumer_base::mark_consume_start(msgs);
    let started = Instant::now();
    pq.begin_consume(started);
    inner.metrics.call_started();
    let mut ctx = ConsumeContext::shared(shared_mq.clone());
    let span = telemetry::process_span(inner.core.group(), mq, msgs);
    let result = call_listener(inner, msgs, &mut ctx)
        .instrument(span.clone())
        .await;
    let took = started.elapsed();
    inner.metrics.call_ended();
    pq.end_consume();
    drop(permit);
    if pq.is_dropped() {
        debug!(queue = %mq, "queue dropped while consuming; result ignored, messages will be redelivered");
        return;
    }
    let first_failed = settle::first_failed(result, ctx.ack_index(), msgs.len());
    pq.metrics.consumed(took, msgs.len(), first_failed);
    telemetry::processed(
        &span,
        if first_failed == msgs.len() {
            "CONSUME_SUCCESS"
        } else {
            "RECONSUME_LATER"
        },
    );
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
    let store = inner.core.offset_store();
    let commit = |offset| store.update_offset(mq, offset, true);
    if first_failed == msgs.len() {
        // Every message acknowledged (the common case): nothing to collect.
        pq.remove_and_commit(msgs.iter().map(|m| m.queue_offset), commit);
        return;
    }
    let settlement = settle::settle(msgs, first_failed, &sent_back);
    pq.remove_and_commit(settlement.remove.iter().copied(), commit);
    if !settlement.retry_locally.is_empty() {
        spawn_later(
            inner,
            pq.clone(),
            shared_mq.clone(),
            settlement.retry_locally,
        );
    }
}

/// One listener call: a panic or exceeding the consume timeout count as
/// `ReconsumeLater`.
pub(crate) async fn call_listener(
    inner: &Inner,
    msgs: &[MessageExt],
    ctx: &mut ConsumeContext,
) -> ConsumeResult {
    let Listener::Concurrent(listener) = &inner.listener else {
        // Orderly consumers never submit here (the pull loop dispatches).
        error!(queue = %ctx.queue(), "concurrent consume requested by an orderly consumer");
        return ConsumeResult::ReconsumeLater;
    };
    let trace = crate::trace::before(inner, msgs);
    let call = guarded(inner.config.consume_timeout, listener.consume(msgs, ctx)).await;
    let traced = crate::trace::outcome(&call, |r| *r == ConsumeResult::Success);
    crate::trace::after(inner, trace, traced);
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
