//! Listener calls of popped messages and what follows them (Java
//! `ConsumeMessagePopConcurrentlyService`): acks (batched by the pop
//! engine's [`PopAcker`]), a longer invisible time for messages to consume
//! again, the DLQ for messages redelivered too often. The calls themselves
//! are the pop engine's ([`rmq_consumer_base::engine::pop`]).

use std::sync::Arc;
use std::time::Duration;

use rmq_consumer_base::engine::pop::{
    PopAcker, PopHandle, Popped, change_invisible, retry_delay, to_dlq,
};
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::warn;

use crate::concurrent::listener::ConsumeContext;
use crate::concurrent::service::call_listener;
use crate::concurrent::settle::first_failed;
use crate::in_hand::{InHand, body_bytes};
use crate::inner::Inner;

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
    let acker = PopAcker::spawn(wire, inner.core.group().to_owned(), inner.core.tasks());
    Settler {
        inner: inner.clone(),
        acker,
    }
}

impl Settler {
    /// Consumes `batch` (one listener call) in a task: waits for a
    /// concurrency permit, calls the listener, acks what it consumed and
    /// settles the rest. The messages count in `held` until then.
    pub(crate) fn submit(&self, mq: &MessageQueue, held: &Arc<InHand>, batch: Vec<Popped>) {
        let Some(first) = batch.first() else {
            return;
        };
        let queue = MessageQueue::new(
            mq.topic.clone(),
            mq.broker_name.clone(),
            first.handle.ck.queue_id,
        );
        let (mut msgs, handles): (Vec<MessageExt>, Vec<PopHandle>) =
            batch.into_iter().map(|p| (p.msg, p.handle)).unzip();
        let bytes = body_bytes(&msgs);
        held.add(msgs.len(), bytes);
        let this = self.clone();
        let held = held.clone();
        self.inner.core.tasks().spawn(async move {
            let abort = this.inner.core.cancel().clone();
            tokio::select! {
                () = this.consume(queue, &mut msgs, handles) => {}
                () = abort.cancelled() => {}
            }
            held.remove(msgs.len(), bytes);
        });
    }

    async fn consume(&self, queue: MessageQueue, msgs: &mut [MessageExt], handles: Vec<PopHandle>) {
        let inner = &self.inner;
        let permit = tokio::select! {
            permit = inner.semaphore.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return,
            },
            // Not consumed: they come back after their invisible time.
            () = inner.stop_consume.cancelled() => return,
        };
        rmq_consumer_base::mark_consume_start(msgs);
        let mut ctx = ConsumeContext::new(queue);
        let result = call_listener(inner, msgs, &mut ctx).await;
        drop(permit);
        let first_failed = first_failed(result, ctx.ack_index(), msgs.len());
        for (i, h) in handles.into_iter().enumerate() {
            let Some(msg) = msgs.get(i) else {
                continue;
            };
            if i >= first_failed {
                self.later(msg, h, ctx.delay_level_when_next_consume())
                    .await;
            } else {
                self.ack(h).await;
            }
        }
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
