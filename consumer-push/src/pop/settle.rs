//! Listener calls of popped messages and what follows them (Java
//! `ConsumeMessagePopConcurrentlyService`): acks (batched by the pop
//! engine's [`PopAcker`]), a longer invisible time for messages to consume
//! again, the DLQ for messages redelivered too often. The calls themselves
//! are the pop engine's ([`rmq_consumer_base::engine::pop`]).

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use rmq_consumer_base::engine::pop::{
    PopAcker, PopHandle, Popped, change_invisible, retry_delay, to_dlq,
};
use rmq_protocol::{MessageExt, MessageQueue};
use tokio::sync::{SemaphorePermit, TryAcquireError};
use tracing::warn;

use crate::in_hand::{InHand, body_bytes};
use crate::inner::Inner;
use crate::listener::concurrent::ConsumeContext;
use crate::listener::concurrent_settle::first_failed;
use crate::service::concurrent::call_listener;

/// Submits listener calls and settles their messages; cheap to clone.
/// The ack task ends when the last clone is gone.
#[derive(Clone)]
pub(crate) struct Settler {
    inner: Arc<Inner>,
    acker: PopAcker,
}

/// Spawns the ack task; answers the settler feeding it.
pub(crate) fn spawn(inner: &Arc<Inner>) -> Settler {
    let wire = Arc::new(inner.core.instance().clone());
    let counts = inner.metrics.acks().clone();
    let acker = PopAcker::spawn(
        wire,
        inner.core.group().to_owned(),
        inner.core.tasks(),
        Arc::new(move |ok, failed| counts.record(ok, failed)),
    );
    Settler {
        inner: inner.clone(),
        acker,
    }
}

impl Settler {
    /// Consumes one pop's messages in a task of their own: listener calls
    /// of at most `consume_batch_max_size` messages, each with its own
    /// concurrency permit, run side by side; acks what they consumed (one
    /// hand-over to the ack task for the calls that end at once) and
    /// settles the rest. The messages count in `held` until then.
    pub(crate) fn submit(&self, mq: &MessageQueue, held: &Arc<InHand>, batch: Vec<Popped>) {
        if batch.is_empty() {
            return;
        }
        let (msgs, handles): (Vec<MessageExt>, Vec<PopHandle>) =
            batch.into_iter().map(|p| (p.msg, p.handle)).unzip();
        let (count, bytes) = (msgs.len(), body_bytes(&msgs));
        held.add(count, bytes);
        let this = self.clone();
        let held = held.clone();
        let mq = mq.clone();
        // Boxed: the listener calls' state would make the task's future
        // large, and spawning moves a future by value several times.
        let calls = Box::pin(async move { this.consume(&mq, msgs, handles).await });
        let abort = self.inner.core.cancel().clone();
        self.inner.core.tasks().spawn(async move {
            tokio::select! {
                () = calls => {}
                () = abort.cancelled() => {}
            }
            held.remove(count, bytes);
        });
    }

    /// The listener calls of one pop. Each call is polled once right
    /// here: one that ends on its first poll (a listener that does not
    /// wait, the common case) leaves no future behind and hands its permit
    /// to the next call; one that waits joins a set polled concurrently.
    async fn consume(&self, mq: &MessageQueue, mut msgs: Vec<MessageExt>, handles: Vec<PopHandle>) {
        // Taken out as the messages settle (moved to the ack task, not cloned).
        let mut handles: Vec<Option<PopHandle>> = handles.into_iter().map(Some).collect();
        // Shutdown stops new calls: checked once per pop (the token's check
        // takes a lock shared by every queue), and again by a call that had
        // to wait for a permit. Not consumed, the messages come back after
        // their invisible time.
        if self.inner.stop_consume.is_cancelled() {
            return;
        }
        let size = self.inner.config.consume_batch_max_size.max(1);
        rmq_consumer_base::mark_consume_start(&mut msgs);
        let mut queues: Vec<Arc<MessageQueue>> = Vec::new();
        let mut acked = Vec::with_capacity(handles.len());
        let mut waiting = FuturesUnordered::new();
        let mut permit = None;
        for (i, call_msgs) in msgs.chunks_mut(size).enumerate() {
            let first = i.saturating_mul(size);
            let range = first..first.saturating_add(call_msgs.len());
            let queue = queue_of(&mut queues, mq, call_msgs);
            let mut call = Box::pin(self.call(queue, call_msgs, permit.take()));
            match futures::poll!(call.as_mut()) {
                Poll::Ready((ok, p)) => {
                    permit = p;
                    self.settle(&handles, range, ok, &mut acked);
                }
                Poll::Pending => waiting.push(async move { (range, call.await.0) }),
            }
        }
        drop(permit);
        let mut again = Vec::new();
        self.ack_consumed(&mut handles, &mut acked, &mut again)
            .await;
        while let Some((range, ok)) = waiting.next().await {
            self.settle(&handles, range, ok, &mut acked);
            self.ack_consumed(&mut handles, &mut acked, &mut again)
                .await;
        }
        drop(waiting);
        for (i, level) in again {
            if let (Some(msg), Some(h)) = (msgs.get(i), handles.get_mut(i).and_then(Option::take)) {
                self.later(msg, h, level).await;
            }
        }
    }

    /// Acks the consumed messages of `sorted` (one hand-over) and keeps
    /// the others in `again`, with their delay level.
    async fn ack_consumed(
        &self,
        handles: &mut [Option<PopHandle>],
        sorted: &mut Vec<(usize, Option<i32>)>,
        again: &mut Vec<(usize, i32)>,
    ) {
        let mut acks = Vec::with_capacity(sorted.len());
        for (i, level) in sorted.drain(..) {
            match level {
                None => acks.extend(handles.get_mut(i).and_then(Option::take)),
                Some(level) => again.push((i, level)),
            }
        }
        if !acks.is_empty() {
            self.acker.ack_all(acks).await;
        }
    }

    /// Sorts the messages of `range` by how their call ended: the first
    /// `ok.0` consumed (no level), the rest to consume again at level
    /// `ok.1`; nothing when the call did not run (`ok` `None`: the
    /// messages come back after their invisible time).
    fn settle(
        &self,
        handles: &[Option<PopHandle>],
        range: std::ops::Range<usize>,
        ok: Option<(usize, i32)>,
        out: &mut Vec<(usize, Option<i32>)>,
    ) {
        let Some((first_failed, level)) = ok else {
            return;
        };
        let end = range.end.min(handles.len());
        for i in range.clone() {
            if i >= end {
                break;
            }
            let consumed = i - range.start < first_failed;
            out.push((i, (!consumed).then_some(level)));
        }
    }

    /// One listener call of `msgs` (with `permit` if the caller holds
    /// one): answers how many messages from the first it consumed and the
    /// delay level of the rest (`None` when it did not run), and the
    /// permit back.
    async fn call<'a>(
        &'a self,
        queue: Arc<MessageQueue>,
        msgs: &'a mut [MessageExt],
        permit: Option<SemaphorePermit<'a>>,
    ) -> (Option<(usize, i32)>, Option<SemaphorePermit<'a>>) {
        let inner = &self.inner;
        let permit = match permit.map_or_else(|| inner.semaphore.try_acquire(), Ok) {
            Ok(p) => p,
            Err(TryAcquireError::Closed) => return (None, None),
            Err(TryAcquireError::NoPermits) => {
                let permit = tokio::select! {
                    permit = inner.semaphore.acquire() => match permit {
                        Ok(p) => p,
                        Err(_) => return (None, None),
                    },
                    // Not consumed: they come back after their invisible time.
                    () = inner.stop_consume.cancelled() => return (None, None),
                };
                if inner.stop_consume.is_cancelled() {
                    return (None, None);
                }
                rmq_consumer_base::mark_consume_start(msgs);
                permit
            }
        };
        let mut ctx = ConsumeContext::shared(inner.user_queue(&queue));
        let started = tokio::time::Instant::now();
        let result = call_listener(inner, msgs, &mut ctx, started).await;
        let first_failed = first_failed(result, ctx.ack_index(), msgs.len());
        (
            Some((first_failed, ctx.delay_level_when_next_consume())),
            Some(permit),
        )
    }

    /// A message to consume again: hidden for its next delay level's
    /// delay ([`retry_delay`]), then the broker delivers it again; to the
    /// DLQ when `level` is negative or it was delivered max reconsume
    /// times + 1 times. A failed change lets the pop invisible time lapse.
    async fn later(&self, msg: &MessageExt, h: PopHandle, level: i32) {
        if level < 0 || msg.reconsume_times >= self.inner.config.effective_max_reconsume_times() {
            self.dlq(msg, &h).await;
            return;
        }
        self.hide(msg, &h, retry_delay(level, msg.reconsume_times))
            .await;
    }

    /// Hides a popped message for `delay` from now
    /// (CHANGE_MESSAGE_INVISIBLETIME); `false` when the broker did not
    /// take it (the message then comes back after its current invisible
    /// time).
    pub(crate) async fn hide(&self, msg: &MessageExt, h: &PopHandle, delay: Duration) -> bool {
        let inner = &self.inner;
        match change_invisible(inner.core.instance(), inner.core.group(), h, delay).await {
            Ok(_) => true,
            Err(e) => {
                warn!(msg_id = %msg.msg_id, error = %e, "cannot change the invisible time; the message comes back after the pop invisible time");
                false
            }
        }
    }

    /// Queues the ack of a consumed message (the acker batches them);
    /// `false` when the acker stopped (the message then comes back).
    pub(crate) async fn ack(&self, h: PopHandle) -> bool {
        self.acker.ack(h).await
    }

    /// Moves a message to `%DLQ%<group>` and acks it; `false` when it was
    /// not moved (it then comes back after its invisible time).
    pub(crate) async fn dlq(&self, msg: &MessageExt, h: &PopHandle) -> bool {
        let inner = &self.inner;
        let max = inner.config.effective_max_reconsume_times();
        to_dlq(inner.core.instance(), inner.core.group(), max, msg, h).await
    }
}

/// The queue of a call's messages (their first's queue id; `mq` is
/// usually `queueId -1`), shared by the calls of one pop.
fn queue_of(
    queues: &mut Vec<Arc<MessageQueue>>,
    mq: &MessageQueue,
    msgs: &[MessageExt],
) -> Arc<MessageQueue> {
    let queue_id = msgs.first().map_or(mq.queue_id, |m| m.queue_id);
    if let Some(q) = queues.iter().find(|q| q.queue_id == queue_id) {
        return q.clone();
    }
    let q = Arc::new(MessageQueue::new(
        mq.topic.clone(),
        mq.broker_name.clone(),
        queue_id,
    ));
    queues.push(q.clone());
    q
}
