//! Concurrent consumption over gRPC (Java `StandardConsumeService`): a
//! received batch becomes one tracked task whose listener calls (at most
//! `consume_batch_max_size` messages of one queue each) wait for their own
//! `consume_concurrency` permit; consumed messages go to the acker, failed
//! ones are hidden for the backoff of their delivery attempt or go to the
//! DLQ.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmq_consumer_base::engine::grpc::Received;
use rmq_grpc::Receipt;
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::Instrument;

use super::policy::on_failure;
use super::queue::{Ack, QueueState};
use super::settle;
use super::state::{ConsumeService, GrpcInner};
use crate::listener::call::guarded;
use crate::listener::concurrent::{ConsumeContext, ConsumeResult, MessageListener};
use crate::listener::concurrent_settle::first_failed;
use crate::telemetry;

/// The concurrent consume service of a listener.
pub(super) struct Standard(Arc<dyn MessageListener>);

impl Standard {
    pub(super) fn new(listener: Arc<dyn MessageListener>) -> Self {
        Standard(listener)
    }
}

impl ConsumeService for Standard {
    fn dispatch(&self, inner: &Arc<GrpcInner>, queue: &Arc<QueueState>, items: Vec<Received>) {
        let calls = split(items, inner.config.consume_batch_max_size);
        let (task_inner, queue, listener) = (inner.clone(), queue.clone(), self.0.clone());
        inner.spawn_consume(async move { run(&task_inner, &*listener, &queue, calls).await });
    }
}

/// The listener calls of a receive: its messages by queue (a receive of
/// queue id −1 may bring several), in order, at most `size` per call.
pub(super) fn split(mut items: Vec<Received>, size: usize) -> Vec<Vec<Received>> {
    let size = size.max(1);
    items.sort_by_key(|r| r.msg.queue_id);
    let mut calls: Vec<Vec<Received>> = Vec::new();
    for r in items {
        match calls.last_mut() {
            Some(c)
                if c.len() < size
                    && c.first().is_some_and(|f| f.msg.queue_id == r.msg.queue_id) =>
            {
                c.push(r);
            }
            _ => calls.push(vec![r]),
        }
    }
    calls
}

async fn run(
    inner: &Arc<GrpcInner>,
    listener: &dyn MessageListener,
    queue: &Arc<QueueState>,
    calls: Vec<Vec<Received>>,
) {
    if calls.len() == 1 {
        for c in calls {
            call(inner, listener, queue, c).await;
        }
        return;
    }
    let mut running: FuturesUnordered<_> = calls
        .into_iter()
        .map(|c| call(inner, listener, queue, c))
        .collect();
    while running.next().await.is_some() {}
}

/// One listener call on `items` and their settling.
async fn call(
    inner: &Arc<GrpcInner>,
    listener: &dyn MessageListener,
    queue: &Arc<QueueState>,
    items: Vec<Received>,
) {
    let permit = tokio::select! {
        permit = inner.semaphore.clone().acquire_owned() => permit.ok(),
        () = inner.stop_consume.cancelled() => None,
    };
    let Some(permit) = permit else {
        // Not consumed: the proxy gives them back to the group.
        queue.release_all(items.iter().map(|r| &r.msg));
        return;
    };
    let (mut msgs, receipts): (Vec<MessageExt>, Vec<Receipt>) =
        items.into_iter().map(|r| (r.msg, r.receipt)).unzip();
    let mq = call_queue(queue, &msgs);
    let started = Instant::now();
    let mut ctx = ConsumeContext::new(mq.clone());
    let result = call_listener(inner, queue, listener, &mq, &mut msgs, &mut ctx).await;
    drop(permit);
    let took = started.elapsed();
    let first_failed = first_failed(result, ctx.ack_index(), msgs.len());
    queue.metrics.consumed(took, msgs.len(), first_failed);
    let settings = (first_failed < msgs.len()).then(|| inner.proxy_settings());
    let retry = ctx.retry();
    for (i, (msg, receipt)) in msgs.into_iter().zip(receipts).enumerate() {
        match &settings {
            Some(s) if i >= first_failed => {
                let levels = &inner.broker_levels;
                let what = on_failure(retry, &s.backoff, levels, receipt.delivery_attempt, false);
                settle::failed(inner, queue, &msg, &receipt, what).await;
            }
            _ => {
                inner.acker.ack(Ack::new(queue, msg, receipt)).await;
            }
        }
    }
}

/// The queue of a call's messages (the assignment's topic and broker, the
/// first message's queue id).
pub(super) fn call_queue(queue: &QueueState, msgs: &[MessageExt]) -> MessageQueue {
    let id = msgs.first().map_or(queue.mq.queue_id, |m| m.queue_id);
    MessageQueue::new(queue.mq.topic.clone(), queue.mq.broker_name.clone(), id)
}

/// Marks `msgs` with the consume start time and counts a call starting.
pub(super) fn call_starts(inner: &GrpcInner, queue: &QueueState, msgs: &mut [MessageExt]) {
    rmq_consumer_base::mark_consume_start(msgs);
    queue.call_started();
    inner.metrics.call_started();
}

/// Counts a call ending.
pub(super) fn call_ends(inner: &GrpcInner, queue: &QueueState) {
    queue.call_ended();
    inner.metrics.call_ended();
}

/// One concurrent listener call: a panic or exceeding the consume timeout
/// count as `ReconsumeLater`.
pub(super) async fn call_listener(
    inner: &GrpcInner,
    queue: &QueueState,
    listener: &dyn MessageListener,
    mq: &MessageQueue,
    msgs: &mut [MessageExt],
    ctx: &mut ConsumeContext,
) -> ConsumeResult {
    call_starts(inner, queue, msgs);
    let span = telemetry::process_span(inner.group(), mq, msgs);
    let timeout: Duration = inner.config.consume_timeout;
    let call = guarded(timeout, listener.consume(msgs, ctx))
        .instrument(span.clone())
        .await;
    call_ends(inner, queue);
    let result = match call {
        Ok(result) => result,
        Err(failure) => {
            failure.log(mq, msgs.first().map(|m| m.queue_offset), "ReconsumeLater");
            ConsumeResult::ReconsumeLater
        }
    };
    telemetry::processed(
        &span,
        match result {
            ConsumeResult::Success => "CONSUME_SUCCESS",
            ConsumeResult::ReconsumeLater => "RECONSUME_LATER",
        },
    );
    result
}

#[cfg(test)]
mod tests {
    use rmq_protocol::Message;

    use super::*;

    fn item(queue_id: i32, offset: i64) -> Received {
        Received {
            msg: MessageExt {
                message: Message::new("T", "b"),
                queue_id,
                queue_offset: offset,
                ..MessageExt::default()
            },
            receipt: Receipt {
                receipt_handle: String::new(),
                delivery_attempt: 1,
            },
        }
    }

    #[test]
    fn calls_take_one_queue_in_order() {
        let items = vec![
            item(2, 10),
            item(0, 5),
            item(2, 11),
            item(0, 6),
            item(2, 12),
        ];
        let calls: Vec<Vec<(i32, i64)>> = split(items, 2)
            .iter()
            .map(|c| {
                c.iter()
                    .map(|r| (r.msg.queue_id, r.msg.queue_offset))
                    .collect()
            })
            .collect();
        assert_eq!(
            calls,
            [vec![(0, 5), (0, 6)], vec![(2, 10), (2, 11)], vec![(2, 12)]]
        );
        assert_eq!(
            split(vec![item(1, 1), item(1, 2)], 0).len(),
            2,
            "at least one per call"
        );
    }
}
