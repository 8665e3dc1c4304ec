//! The orderly consume service (Java `ConsumeMessageOrderlyService` +
//! the orderly parts of `RebalancePushImpl`).
//!
//! * One consume loop per assigned queue: it waits for messages, checks
//!   the queue's broker lock (clustering), takes a semaphore permit (the
//!   consume concurrency, shared with every queue) and the queue's consume
//!   lock, takes the first `consume_batch_max_size` held messages, calls
//!   the listener and settles the result — strictly one call at a time,
//!   in offset order.
//! * Suspend: the messages go back with `reconsume_times + 1` and the loop
//!   pauses for the suspend time; past the max reconsume times a message
//!   is sent to `%DLQ%<group>` (CONSUMER_SEND_MSG_BACK, delay level −1)
//!   and counts as consumed.
//! * Removal of a queue waits (bounded) for its call in flight, persists,
//!   then unlocks (lock renewal: `lock_renewal.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_offset_store::PersistMode;
use rmq_protocol::{MessageExt, MessageQueue};
use rmq_rebalance::QueueLocks;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::inner::{Inner, Listener};
use crate::listener::call::guarded;
use crate::listener::concurrent_settle::FailurePolicy;
use crate::listener::orderly::{OrderlyContext, OrderlyListener, OrderlyResult};
use crate::listener::orderly_settle::{Action, action, split_reconsume};
use crate::pull::process_queue::ProcessQueue;
use crate::pull::send_back::send_back;
use crate::telemetry;

/// A queue found not locked is locked again after this (Java
/// `tryLockLaterAndReconsume(.., 10)`).
const RELOCK_DELAY: Duration = Duration::from_millis(10);
/// After a successful re-lock, consume again after this (Java: 10 ms).
const AFTER_RELOCK_OK: Duration = Duration::from_millis(10);
/// After a failed re-lock, try again after this (Java: 3 s).
const AFTER_RELOCK_FAILED: Duration = Duration::from_secs(3);
/// How long a rebalance waits for the listener call in flight of a queue it
/// removes before giving up on committing that call's result (Java tries
/// the queue's consume lock for 500 ms per rebalance and forces the unlock
/// after 20 s).
pub(crate) const DROP_WAIT: Duration = Duration::from_secs(2);
/// Delay level of a CONSUMER_SEND_MSG_BACK that goes straight to the DLQ.
const DLQ_DELAY_LEVEL: i32 = -1;

/// Wakes the consume loop of `pq` (new messages were put in).
pub(crate) fn submit(pq: &ProcessQueue) {
    pq.wakeup.notify_one();
}

/// Spawns the consume loop of `mq` on the consumer's tracker; it ends when
/// `cancel` fires (queue removed, shutdown) or the queue is dropped. A call
/// in flight is only cut by the consumer's `abort`.
pub(crate) fn spawn(
    inner: &Arc<Inner>,
    mq: MessageQueue,
    pq: Arc<ProcessQueue>,
    cancel: CancellationToken,
) {
    let Listener::Orderly(listener) = &inner.listener else {
        return;
    };
    let span = info_span!(parent: None, "orderly", topic = %mq.topic, broker = %mq.broker_name, queue_id = mq.queue_id);
    let consume_lock = inner.queues.consume_lock(&mq);
    let l = OrderlyLoop {
        inner: inner.clone(),
        listener: listener.clone(),
        mq,
        pq,
        cancel,
        consume_lock,
    };
    inner.core.tasks().spawn(l.run().instrument(span));
}

/// Removes an orderly clustering queue (rebalance): stop its pull and
/// consume loops, wait up to [`DROP_WAIT`] for the listener call in flight
/// (its result still commits), mark it dropped, persist its offset, and
/// unlock it — unless `still_assigned` (a stuck queue being recreated keeps
/// its lock). If the call does not finish in time its result is ignored
/// (redelivered later) and the unlock waits for the call to end, so the
/// next owner never overlaps with it.
pub(crate) async fn drop_queue(
    inner: &Arc<Inner>,
    locks: &Arc<QueueLocks>,
    mq: &MessageQueue,
    still_assigned: bool,
) {
    let Some(pq) = inner.queues.take(mq) else {
        return;
    };
    let consume_lock = inner.queues.consume_lock(mq);
    let guard = tokio::time::timeout(DROP_WAIT, consume_lock.clone().lock_owned())
        .await
        .ok();
    if guard.is_none() {
        warn!(
            queue = %mq, waited = ?DROP_WAIT,
            "the removed queue's listener call is still running; its result will be ignored \
             and the queue unlocked once it ends"
        );
    }
    pq.set_dropped();
    if let Err(e) = inner
        .core
        .offset_store()
        .persist(mq, PersistMode::Sync)
        .await
    {
        warn!(queue = %mq, error = %rmq_protocol::ErrorChain(&e), "cannot persist the offset of a dropped queue");
    }
    inner.core.offset_store().remove_offset(mq);
    if still_assigned {
        return;
    }
    match guard {
        Some(_guard) => locks.unlock(std::slice::from_ref(mq), true).await,
        None => {
            let inner2 = inner.clone();
            let locks = locks.clone();
            let mq = mq.clone();
            inner.core.tasks().spawn(async move {
                let inner = inner2;
                let _guard = tokio::select! {
                    g = consume_lock.lock_owned() => g,
                    () = inner.core.cancel().cancelled() => return,
                };
                // Assigned again meanwhile: the new process queue owns the lock.
                if !inner.queues.contains(&mq) {
                    locks.unlock(std::slice::from_ref(&mq), true).await;
                }
            });
        }
    }
}

/// What to do after one round of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Go on at once.
    Continue,
    /// Go on after this pause (suspend, rollback, waiting for the lock).
    Pause(Duration),
    /// End the loop.
    Stop,
}

struct OrderlyLoop {
    inner: Arc<Inner>,
    listener: Arc<dyn OrderlyListener>,
    mq: MessageQueue,
    pq: Arc<ProcessQueue>,
    cancel: CancellationToken,
    consume_lock: Arc<tokio::sync::Mutex<()>>,
}

impl OrderlyLoop {
    async fn run(self) {
        debug!("orderly consume loop started");
        loop {
            if self.stopped() {
                break;
            }
            if !self.pq.has_pending() {
                tokio::select! {
                    () = self.pq.wakeup.notified() => continue,
                    () = self.cancel.cancelled() => break,
                }
            }
            match self.round().await {
                Round::Continue => {}
                Round::Pause(d) => {
                    if !self.pause(d).await {
                        break;
                    }
                }
                Round::Stop => break,
            }
        }
        debug!("orderly consume loop stopped");
    }

    fn stopped(&self) -> bool {
        self.cancel.is_cancelled() || self.pq.is_dropped()
    }

    /// Sleeps `d`; `false` when the queue's token fired meanwhile.
    async fn pause(&self, d: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(d) => !self.cancel.is_cancelled(),
            () = self.cancel.cancelled() => false,
        }
    }

    async fn round(&self) -> Round {
        let guard = tokio::select! {
            g = self.consume_lock.clone().lock_owned() => g,
            () = self.cancel.cancelled() => return Round::Stop,
        };
        if self.stopped() {
            return Round::Stop;
        }
        if let Some(locks) = &self.inner.locks {
            if !locks.is_locked_and_fresh(&self.mq) {
                // Under the consume lock, so a removal's unlock comes after.
                info!(
                    "the queue's lock is missing or expired; consuming paused until it is locked again"
                );
                if !self.pause(RELOCK_DELAY).await {
                    return Round::Stop;
                }
                let ok = !locks.lock(std::slice::from_ref(&self.mq)).await.is_empty();
                drop(guard);
                return Round::Pause(if ok {
                    AFTER_RELOCK_OK
                } else {
                    AFTER_RELOCK_FAILED
                });
            }
        }
        let permit = tokio::select! {
            permit = self.inner.semaphore.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return Round::Stop,
            },
            () = self.cancel.cancelled() => return Round::Stop,
        };
        // The wait for a permit may have been long: check the lease again.
        if self
            .inner
            .locks
            .as_ref()
            .is_some_and(|l| !l.is_locked_and_fresh(&self.mq))
        {
            return Round::Continue;
        }
        let batch = self.inner.config.consume_batch_max_size.max(1);
        let msgs = self.pq.take_messages(batch, Instant::now());
        if msgs.is_empty() {
            return Round::Continue;
        }
        let round = self.consume(msgs).await;
        drop(permit);
        drop(guard);
        round
    }

    /// One listener call and its settlement.
    async fn consume(&self, mut msgs: Vec<MessageExt>) -> Round {
        rmq_consumer_base::mark_consume_start(&mut msgs);
        let cfg = &self.inner.config;
        let queue = self.inner.core.namespace().unwrap_queue(&self.mq);
        let mut ctx = OrderlyContext::new(queue, cfg.suspend_current_queue_time);
        let started = Instant::now();
        self.pq.begin_consume(started);
        self.inner.metrics.queue_call_started();
        let span = telemetry::process_span(self.inner.core.group(), &self.mq, &msgs);
        let result = tokio::select! {
            r = self.call_listener(&msgs, &mut ctx).instrument(span.clone()) => r,
            () = self.inner.core.cancel().cancelled() => {
                self.inner.metrics.queue_call_ended();
                self.pq.end_consume();
                return Round::Stop;
            }
        };
        self.inner.metrics.queue_call_ended();
        self.pq.end_consume();
        let ok = matches!(result, OrderlyResult::Success | OrderlyResult::Commit);
        self.pq.metrics.consumed(
            started.elapsed(),
            msgs.len(),
            if ok { msgs.len() } else { 0 },
        );
        telemetry::processed(&span, orderly_result_name(result));
        self.settle(msgs, result, &ctx).await
    }

    async fn call_listener(&self, msgs: &[MessageExt], ctx: &mut OrderlyContext) -> OrderlyResult {
        call_orderly(&self.inner, &*self.listener, &self.mq, msgs, ctx).await
    }

    async fn settle(
        &self,
        msgs: Vec<MessageExt>,
        result: OrderlyResult,
        ctx: &OrderlyContext,
    ) -> Round {
        let auto_commit = ctx.auto_commit();
        if auto_commit && matches!(result, OrderlyResult::Commit | OrderlyResult::Rollback) {
            warn!(
                ?result,
                "Commit/Rollback need auto_commit = false; counted as Success"
            );
        }
        if matches!(
            result,
            OrderlyResult::SuspendCurrentQueueAMoment | OrderlyResult::Rollback
        ) {
            info!(
                ?result,
                first_offset = msgs.first().map(|m| m.queue_offset),
                count = msgs.len(),
                "orderly consume not OK; the queue pauses"
            );
        }
        match action(result, auto_commit) {
            Action::Commit => {
                self.commit();
                Round::Continue
            }
            Action::Keep => Round::Continue,
            Action::Rollback => {
                self.pq.rollback();
                Round::Pause(ctx.effective_suspend())
            }
            Action::Suspend => {
                let max = self.inner.config.effective_max_reconsume_times();
                let (over, mut again) = split_reconsume(msgs, max);
                for mut msg in over {
                    if !self.to_dlq(&msg).await {
                        // Stays and is delivered again (Java).
                        msg.reconsume_times = msg.reconsume_times.saturating_add(1);
                        again.push(msg);
                    }
                }
                if again.is_empty() {
                    if auto_commit {
                        self.commit();
                    }
                    Round::Continue
                } else {
                    again.sort_by_key(|m| m.queue_offset);
                    self.pq.consume_again(again);
                    Round::Pause(ctx.effective_suspend())
                }
            }
        }
    }

    /// Commits everything taken (Java `commit` + `updateOffset(.., false)`),
    /// unless the queue is dropped.
    fn commit(&self) {
        let store = self.inner.core.offset_store();
        let mq = &self.mq;
        self.pq
            .commit_consuming(|offset| store.update_offset(mq, offset, false));
    }

    /// A message past the max reconsume times leaves for `%DLQ%<group>`
    /// (clustering: CONSUMER_SEND_MSG_BACK with delay level −1; Java
    /// re-publishes to the retry topic, which the broker redirects to the
    /// DLQ while the group holds orderly locks). Broadcasting: logged and
    /// dropped. `true` when the message may count as consumed.
    async fn to_dlq(&self, msg: &MessageExt) -> bool {
        match FailurePolicy::for_model(self.inner.model()) {
            FailurePolicy::SendBack => {
                let ok = send_back(
                    &self.inner,
                    msg,
                    DLQ_DELAY_LEVEL,
                    &self.mq,
                    &self.pq.metrics,
                )
                .await;
                if ok {
                    warn!(
                        offset = msg.queue_offset, msg_id = %msg.msg_id,
                        reconsume_times = msg.reconsume_times,
                        "max reconsume times reached; message sent to the DLQ"
                    );
                }
                ok
            }
            FailurePolicy::Discard => {
                warn!(
                    offset = msg.queue_offset, msg_id = %msg.msg_id,
                    "broadcasting: max reconsume times reached; message dropped"
                );
                true
            }
        }
    }
}

/// One orderly listener call on messages of `mq`, with a panic or the
/// consume timeout counted as a suspend (Java: an exception or `null`
/// status); traced when message trace is on.
pub(crate) async fn call_orderly(
    inner: &Inner,
    listener: &dyn OrderlyListener,
    mq: &MessageQueue,
    msgs: &[MessageExt],
    ctx: &mut OrderlyContext,
) -> OrderlyResult {
    let trace = crate::message_trace::before(inner, msgs);
    let call = guarded(inner.config.consume_timeout, listener.consume(msgs, ctx)).await;
    let traced = crate::message_trace::outcome(&call, |r| {
        matches!(r, OrderlyResult::Success | OrderlyResult::Commit)
    });
    crate::message_trace::after(inner, trace, traced);
    match call {
        Ok(result) => result,
        Err(failure) => {
            let first_offset = msgs.first().map(|m| m.queue_offset);
            failure.log(mq, first_offset, "SuspendCurrentQueueAMoment");
            OrderlyResult::SuspendCurrentQueueAMoment
        }
    }
}

/// The span's name of an orderly result (Java `ConsumeOrderlyStatus`).
pub(crate) fn orderly_result_name(r: OrderlyResult) -> &'static str {
    match r {
        OrderlyResult::Success => "SUCCESS",
        OrderlyResult::SuspendCurrentQueueAMoment => "SUSPEND_CURRENT_QUEUE_A_MOMENT",
        OrderlyResult::Commit => "COMMIT",
        OrderlyResult::Rollback => "ROLLBACK",
    }
}
