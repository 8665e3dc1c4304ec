//! FIFO consumption over gRPC (Java `FifoConsumeService` with its consume
//! accelerator, and `ProcessQueueImpl.eraseFifoMessage`): the messages of
//! a receive are split by message group; each group runs in order, one
//! listener call at a time, groups side by side (each call takes a
//! `consume_concurrency` permit). The proxy hands a queue's next messages
//! out only once these are acked, so order holds across receives and
//! members.
//!
//! A failed call (`ReconsumeLater`, `SuspendCurrentQueueAMoment`, a panic,
//! the consume timeout) is tried again here after the proxy's backoff for
//! its delivery attempt, with the attempt and `reconsume_times` + 1,
//! before anything later of its group; once the attempts are used up (or
//! the call asks for `Retry::Dlq`) its messages go to the DLQ and the
//! group moves on. Consumed messages are acked before the group's next
//! call.
//!
//! Orderly listeners with `auto_commit` off: `Success` keeps the messages
//! unacked, `Commit` acks everything kept, `Rollback` consumes everything
//! kept again after the backoff. Messages still kept when the group's
//! messages in hand run out are hidden for the backoff
//! (`ChangeInvisibleDuration`): the proxy then delivers them again, first.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use rmq_consumer_base::Retry;
use rmq_consumer_base::engine::grpc::{Received, ack_all};
use rmq_protocol::MessageExt;
use rmq_protocol::message::property;
use tracing::{Instrument, warn};

use super::consume::{call_ends, call_listener, call_queue, call_starts};
use super::policy::{Failed, on_failure};
use super::queue::{Ack, QueueState};
use super::settle;
use super::state::{ConsumeService, GrpcInner};
use crate::inner::Listener;
use crate::listener::call::guarded;
use crate::listener::concurrent::ConsumeContext;
use crate::listener::concurrent_settle::first_failed;
use crate::listener::orderly::{OrderlyContext, OrderlyResult};
use crate::service::orderly::orderly_result_name;
use crate::telemetry;

/// What a call's result asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The first `ok` messages are consumed; the others failed and come
    /// back as `retry` says.
    Done { ok: usize, retry: Retry },
    /// Orderly, manual commit: consumed, not committed yet.
    Keep,
    /// Orderly, manual commit: everything kept and these are consumed.
    Commit,
    /// Orderly, manual commit: everything kept and these again.
    Rollback,
}

/// The verdict of an orderly call on `len` messages (Java
/// `processConsumeResult`; `Commit` / `Rollback` with auto-commit count as
/// `Success`).
pub(super) fn orderly_verdict(result: OrderlyResult, auto_commit: bool, len: usize) -> Verdict {
    match (result, auto_commit) {
        (OrderlyResult::SuspendCurrentQueueAMoment, _) => Verdict::Done {
            ok: 0,
            retry: Retry::Broker,
        },
        (OrderlyResult::Success, false) => Verdict::Keep,
        (OrderlyResult::Commit, false) => Verdict::Commit,
        (OrderlyResult::Rollback, false) => Verdict::Rollback,
        (r @ (OrderlyResult::Commit | OrderlyResult::Rollback), true) => {
            warn!(result = ?r, "Commit and Rollback need auto_commit = false; counted as Success");
            Verdict::Done {
                ok: len,
                retry: Retry::Broker,
            }
        }
        (OrderlyResult::Success, true) => Verdict::Done {
            ok: len,
            retry: Retry::Broker,
        },
    }
}

/// Splits a receive by message group (`__SHARDINGKEY`), keeping the order
/// within each; messages without a group form one more.
pub(super) fn by_group(items: Vec<Received>) -> Vec<Vec<Received>> {
    let mut index: HashMap<Option<String>, usize> = HashMap::new();
    let mut groups: Vec<Vec<Received>> = Vec::new();
    for r in items {
        let key = r
            .msg
            .property(property::SHARDING_KEY)
            .filter(|g| !g.is_empty());
        let i = match index.get(&key.map(str::to_owned)) {
            Some(&i) => i,
            None => {
                index.insert(key.map(str::to_owned), groups.len());
                groups.push(Vec::new());
                groups.len() - 1
            }
        };
        if let Some(g) = groups.get_mut(i) {
            g.push(r);
        }
    }
    groups
}

/// The FIFO consume service of a listener (concurrent or orderly).
pub(super) struct Fifo(Listener);

impl Fifo {
    pub(super) fn new(listener: Listener) -> Self {
        Fifo(listener)
    }
}

impl ConsumeService for Fifo {
    /// Consumes by message group.
    fn dispatch(&self, inner: &Arc<GrpcInner>, queue: &Arc<QueueState>, items: Vec<Received>) {
        let groups = by_group(items);
        let (task_inner, queue, listener) = (inner.clone(), queue.clone(), self.0.clone());
        inner.spawn_consume(async move {
            let runs = groups
                .into_iter()
                .map(|g| run_group(&task_inner, &listener, &queue, g));
            join_all(runs).await;
        });
    }
}

/// One message group's messages of a receive, in order.
async fn run_group(
    inner: &Arc<GrpcInner>,
    listener: &Listener,
    queue: &Arc<QueueState>,
    items: Vec<Received>,
) {
    let size = inner.config.consume_batch_max_size.max(1);
    let mut pending: VecDeque<Received> = items.into();
    // Consumed with auto-commit off, not committed yet.
    let mut kept: Vec<Received> = Vec::new();
    while !pending.is_empty() {
        let n = size.min(pending.len());
        let (mut msgs, receipts): (Vec<MessageExt>, Vec<_>) =
            pending.drain(..n).map(|r| (r.msg, r.receipt)).unzip();
        let Some(verdict) = call(inner, listener, queue, &mut msgs).await else {
            queue.release_all(msgs.iter().chain(pending.iter().map(|r| &r.msg)));
            // Kept messages were consumed: ack them rather than have them again.
            ack(inner, queue, kept).await;
            return;
        };
        let mut items: Vec<Received> = msgs
            .into_iter()
            .zip(receipts)
            .map(|(msg, receipt)| Received { msg, receipt })
            .collect();
        match verdict {
            Verdict::Keep => kept.append(&mut items),
            Verdict::Commit => {
                kept.append(&mut items);
                ack(inner, queue, std::mem::take(&mut kept)).await;
            }
            Verdict::Rollback => {
                kept.append(&mut items);
                let attempt = kept.first().map_or(1, |r| r.receipt.delivery_attempt);
                for r in kept.drain(..).rev() {
                    pending.push_front(r);
                }
                let delay = inner.proxy_settings().backoff.delay(attempt);
                if !wait(inner, delay).await {
                    queue.release_all(pending.iter().map(|r| &r.msg));
                    return;
                }
            }
            Verdict::Done { ok, retry } => {
                let failed = items.split_off(ok.min(items.len()));
                kept.append(&mut items);
                ack(inner, queue, std::mem::take(&mut kept)).await;
                if failed.is_empty() {
                    continue;
                }
                let attempt = failed
                    .iter()
                    .map(|r| r.receipt.delivery_attempt)
                    .max()
                    .unwrap_or(1);
                let backoff = &inner.proxy_settings().backoff;
                match on_failure(retry, backoff, &inner.broker_levels, attempt, true) {
                    Failed::Dlq => {
                        for r in failed {
                            settle::failed(inner, queue, &r.msg, &r.receipt, Failed::Dlq).await;
                        }
                    }
                    Failed::RetryAfter(delay) | Failed::Hide(delay) => {
                        if !wait(inner, delay).await {
                            queue.release_all(failed.iter().chain(pending.iter()).map(|r| &r.msg));
                            return;
                        }
                        for mut r in failed.into_iter().rev() {
                            r.receipt.delivery_attempt =
                                r.receipt.delivery_attempt.saturating_add(1);
                            r.msg.reconsume_times = r.msg.reconsume_times.saturating_add(1);
                            pending.push_front(r);
                        }
                    }
                }
            }
        }
    }
    if !kept.is_empty() {
        warn!(
            count = kept.len(),
            "an orderly listener left messages uncommitted (auto_commit off, no Commit); they are delivered again"
        );
        let settings = inner.proxy_settings();
        for r in kept {
            let delay = settings.backoff.delay(r.receipt.delivery_attempt);
            settle::failed(inner, queue, &r.msg, &r.receipt, Failed::Hide(delay)).await;
        }
    }
}

/// Waits `delay` before a retry; `false` when consuming stops meanwhile.
async fn wait(inner: &GrpcInner, delay: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(delay) => true,
        () = inner.stop_consume.cancelled() => false,
    }
}

/// Acks consumed messages and waits for the answer (the group's next call
/// comes after).
async fn ack(inner: &GrpcInner, queue: &Arc<QueueState>, items: Vec<Received>) {
    if items.is_empty() {
        return;
    }
    let acks = items
        .into_iter()
        .map(|r| Ack::new(queue, r.msg, r.receipt))
        .collect();
    ack_all(&inner.session, inner.group(), acks, &inner.abort).await;
}

/// One listener call on `msgs` (consecutive messages of one group) under a
/// permit; `None` when consuming stopped before it.
async fn call(
    inner: &GrpcInner,
    listener: &Listener,
    queue: &QueueState,
    msgs: &mut [MessageExt],
) -> Option<Verdict> {
    let permit = tokio::select! {
        permit = inner.semaphore.clone().acquire_owned() => permit.ok(),
        () = inner.stop_consume.cancelled() => None,
    }?;
    let mq = call_queue(queue, msgs);
    let started = Instant::now();
    let verdict = match listener {
        Listener::Concurrent(listener) => {
            let mut ctx = ConsumeContext::new(mq.clone());
            let r = call_listener(inner, queue, &**listener, &mq, msgs, &mut ctx).await;
            Verdict::Done {
                ok: first_failed(r, ctx.ack_index(), msgs.len()),
                retry: ctx.retry(),
            }
        }
        Listener::Orderly(listener) => {
            let mut ctx = OrderlyContext::new(mq.clone(), inner.config.suspend_current_queue_time);
            call_starts(inner, queue, msgs);
            let span = telemetry::process_span(inner.group(), &mq, msgs);
            let call = guarded(
                inner.config.consume_timeout,
                listener.consume(msgs, &mut ctx),
            )
            .instrument(span.clone())
            .await;
            call_ends(inner, queue);
            let result = match call {
                Ok(r) => r,
                Err(failure) => {
                    let first = msgs.first().map(|m| m.queue_offset);
                    failure.log(&mq, first, "SuspendCurrentQueueAMoment");
                    OrderlyResult::SuspendCurrentQueueAMoment
                }
            };
            telemetry::processed(&span, orderly_result_name(result));
            orderly_verdict(result, ctx.auto_commit(), msgs.len())
        }
    };
    drop(permit);
    let ok = match verdict {
        Verdict::Done { ok, .. } => ok,
        Verdict::Keep | Verdict::Commit => msgs.len(),
        Verdict::Rollback => 0,
    };
    queue.metrics.consumed(started.elapsed(), msgs.len(), ok);
    Some(verdict)
}

#[cfg(test)]
mod tests {
    use rmq_grpc::Receipt;
    use rmq_protocol::Message;

    use super::*;

    fn item(group: Option<&str>, body: &str) -> Received {
        let mut m = Message::new("T", body.to_owned());
        if let Some(g) = group {
            m.set_property(property::SHARDING_KEY, g);
        }
        Received {
            msg: MessageExt {
                message: m,
                ..MessageExt::default()
            },
            receipt: Receipt {
                receipt_handle: format!("h-{body}"),
                delivery_attempt: 1,
            },
        }
    }

    fn bodies(g: &[Received]) -> Vec<String> {
        g.iter()
            .map(|r| String::from_utf8_lossy(&r.msg.body).into_owned())
            .collect()
    }

    #[test]
    fn groups_keep_their_order() {
        let items = vec![
            item(Some("a"), "a1"),
            item(Some("b"), "b1"),
            item(None, "x1"),
            item(Some("a"), "a2"),
            item(Some(""), "x2"),
            item(Some("b"), "b2"),
            item(Some("a"), "a3"),
        ];
        let groups = by_group(items);
        let got: Vec<Vec<String>> = groups.iter().map(|g| bodies(g)).collect();
        assert_eq!(
            got,
            [vec!["a1", "a2", "a3"], vec!["b1", "b2"], vec!["x1", "x2"]]
        );
    }

    #[test]
    fn orderly_results() {
        use OrderlyResult::*;
        let done = |ok| Verdict::Done {
            ok,
            retry: Retry::Broker,
        };
        assert_eq!(orderly_verdict(Success, true, 3), done(3));
        assert_eq!(
            orderly_verdict(SuspendCurrentQueueAMoment, true, 3),
            done(0)
        );
        assert_eq!(
            orderly_verdict(SuspendCurrentQueueAMoment, false, 3),
            done(0)
        );
        assert_eq!(orderly_verdict(Commit, true, 2), done(2));
        assert_eq!(orderly_verdict(Rollback, true, 2), done(2));
        assert_eq!(orderly_verdict(Success, false, 2), Verdict::Keep);
        assert_eq!(orderly_verdict(Commit, false, 2), Verdict::Commit);
        assert_eq!(orderly_verdict(Rollback, false, 2), Verdict::Rollback);
    }
}
