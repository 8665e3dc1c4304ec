//! Orderly pop (`order=true`): the broker hands each queue's messages to
//! one member at a time, in offset order, and blocks the queue for the
//! whole group until they are acked or their invisible time passes; a
//! message delivered again carries its earlier deliveries as reconsume
//! times (the pop answer's `orderCountInfo`). No queue locks, no
//! rebalance: any number of members share a topic in order.
//!
//! [`OrderlyPop::consume`] runs one pop's messages: each queue's in offset
//! order, one listener call at a time (queues side by side), before the
//! pop loop pops again.
//!
//! - `Success` / `Commit`: acked (the broker's offset moves past them).
//! - `SuspendCurrentQueueAMoment`: the call's messages and every later one
//!   of the queue in hand are hidden for the suspend time
//!   (CHANGE_MESSAGE_INVISIBLETIME); then the broker delivers them again,
//!   in order. A failed message that reached the max reconsume times goes
//!   to `%DLQ%<group>` instead and the queue moves on.
//! - Manual commit (`auto_commit = false`): `Success` keeps the messages
//!   unacked until a `Commit`; `Rollback` hides everything unacked with
//!   the rest. Messages still unacked when the pop's messages of the queue
//!   run out are hidden for the suspend time and delivered again: the
//!   broker does not pop the queue further before they are acked.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use rmq_consumer_base::engine::pop::{PopHandle, Popped};
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::{Instrument, info};

use crate::inner::Inner;
use crate::listener::orderly::{OrderlyContext, OrderlyListener};
use crate::listener::orderly_settle::{Action, action};
use crate::pop::settle::Settler;
use crate::service::orderly::{call_orderly, orderly_result_name};
use crate::telemetry;

/// Consumes orderly-popped messages; cheap to clone.
#[derive(Clone)]
pub(crate) struct OrderlyPop {
    inner: Arc<Inner>,
    listener: Arc<dyn OrderlyListener>,
    settler: Settler,
}

/// How a queue's popped messages ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Everything acked (or moved to the DLQ).
    Done,
    /// Some are hidden until this long from now.
    Hidden(Duration),
    /// Consuming stopped (shutdown): the rest comes back after its
    /// invisible time.
    Stopped,
}

type Item = (MessageExt, PopHandle);

impl OrderlyPop {
    pub(crate) fn new(
        inner: Arc<Inner>,
        listener: Arc<dyn OrderlyListener>,
        settler: Settler,
    ) -> Self {
        OrderlyPop {
            inner,
            listener,
            settler,
        }
    }

    /// Consumes one pop's messages of `mq` (usually `queueId -1`): per
    /// queue in offset order, queues side by side. Answers the shortest
    /// time a queue was hidden for, if any.
    pub(crate) async fn consume(&self, mq: &MessageQueue, popped: Vec<Popped>) -> Option<Duration> {
        let mut by_queue: BTreeMap<i32, Vec<Item>> = BTreeMap::new();
        for p in popped {
            by_queue
                .entry(p.handle.ck.queue_id)
                .or_default()
                .push((p.msg, p.handle));
        }
        let runs = by_queue.into_iter().map(|(queue_id, mut items)| {
            items.sort_by_key(|(m, _)| m.queue_offset);
            let queue = MessageQueue::new(mq.topic.clone(), mq.broker_name.clone(), queue_id);
            async move { self.consume_queue(queue, items).await }
        });
        join_all(runs)
            .await
            .into_iter()
            .filter_map(|o| match o {
                Outcome::Hidden(d) => Some(d),
                Outcome::Done | Outcome::Stopped => None,
            })
            .min()
    }

    /// One queue's messages of a pop, in offset order.
    pub(crate) async fn consume_queue(&self, queue: MessageQueue, items: Vec<Item>) -> Outcome {
        let inner = &self.inner;
        let cfg = &inner.config;
        let size = cfg.consume_batch_max_size.max(1);
        let max = cfg.effective_max_reconsume_times();
        let mut rest = items.into_iter().peekable();
        // Consumed with auto-commit off and not committed yet.
        let mut taken: Vec<Item> = Vec::new();
        let mut suspend = cfg.suspend_current_queue_time;
        while rest.peek().is_some() {
            let (mut msgs, handles): (Vec<MessageExt>, Vec<PopHandle>) =
                rest.by_ref().take(size).unzip();
            let permit = tokio::select! {
                permit = inner.semaphore.clone().acquire_owned() => match permit {
                    Ok(p) => p,
                    Err(_) => return Outcome::Stopped,
                },
                () = inner.stop_consume.cancelled() => return Outcome::Stopped,
            };
            rmq_consumer_base::mark_consume_start(&mut msgs);
            let shown = inner.core.namespace().unwrap_queue(&queue);
            let mut ctx = OrderlyContext::new(shown, cfg.suspend_current_queue_time);
            inner.metrics.call_started();
            let span = telemetry::process_span(inner.core.group(), &queue, &msgs);
            let call = call_orderly(inner, &*self.listener, &queue, &msgs, &mut ctx)
                .instrument(span.clone());
            let result = tokio::select! {
                r = call => r,
                () = inner.core.cancel().cancelled() => {
                    inner.metrics.call_ended();
                    return Outcome::Stopped;
                }
            };
            inner.metrics.call_ended();
            drop(permit);
            telemetry::processed(&span, orderly_result_name(result));
            suspend = ctx.effective_suspend();
            let call: Vec<Item> = msgs.into_iter().zip(handles).collect();
            match action(result, ctx.auto_commit()) {
                Action::Commit => {
                    self.ack(taken.drain(..)).await;
                    self.ack(call).await;
                }
                Action::Keep => taken.extend(call),
                Action::Rollback => {
                    info!(queue = %queue, count = taken.len() + call.len(), "orderly pop: rolled back; delivered again after the suspend time");
                    taken.extend(call);
                    taken.extend(rest);
                    return self.hide(taken, suspend).await;
                }
                Action::Suspend => {
                    let mut again = Vec::new();
                    for (msg, h) in call {
                        // Moved to the DLQ (and acked): the queue moves on.
                        if msg.reconsume_times >= max && self.settler.dlq(&msg, &h).await {
                            continue;
                        }
                        again.push((msg, h));
                    }
                    if again.is_empty() {
                        if ctx.auto_commit() {
                            self.ack(taken.drain(..)).await;
                        }
                        continue;
                    }
                    info!(
                        queue = %queue,
                        first_offset = again.first().map(|(m, _)| m.queue_offset),
                        count = again.len(),
                        ?suspend,
                        "orderly consume not OK; the queue pauses"
                    );
                    taken.extend(again);
                    taken.extend(rest);
                    return self.hide(taken, suspend).await;
                }
            }
        }
        if taken.is_empty() {
            return Outcome::Done;
        }
        info!(queue = %queue, count = taken.len(), "orderly pop: consumed without a commit; delivered again after the suspend time");
        self.hide(taken, suspend).await
    }

    async fn ack(&self, items: impl IntoIterator<Item = Item>) {
        for (_, h) in items {
            self.settler.ack(h).await;
        }
    }

    /// Hides `items` for `delay`, each as the broker tracks it.
    async fn hide(&self, items: Vec<Item>, delay: Duration) -> Outcome {
        join_all(
            items
                .iter()
                .map(|(msg, h)| self.settler.hide(msg, h, delay)),
        )
        .await;
        Outcome::Hidden(delay)
    }
}
