//! What follows a listener call over gRPC: acks (the [`Acker`] batches
//! them per topic: `AckMessage`), a longer invisible time for a message to
//! consume again (`ChangeInvisibleDuration`), the DLQ
//! (`ForwardMessageToDeadLetterQueue`). A call that fails for a reason
//! worth retrying is tried again every second for about half a minute
//! (Java retries until it works): a message the proxy renews for this
//! client stays hidden until one of them works — and its FIFO queue
//! blocked — or the session ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use rmq_grpc::{Receipt, Session, proto};
use rmq_protocol::MessageExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, info, info_span, warn};

use super::GrpcInner;
use super::policy::Failed;
use super::receive::QueueState;

/// Acks waiting for the acker (a full queue makes settling wait).
const ACK_QUEUE: usize = 4096;
/// Most acks in one `AckMessage` request.
const ACK_BATCH: usize = 256;
/// Most `AckMessage` requests at once.
const ACKS_IN_FLIGHT: usize = 4;
/// Rounds of a settling call that keeps failing with a retryable error
/// (each with the session's own retries): long enough to outlast a proxy
/// restart.
const ROUNDS: u32 = 30;
/// Pause between rounds.
const ROUND_PAUSE: Duration = Duration::from_secs(1);

/// A consumed message to ack.
#[derive(Debug)]
pub(crate) struct Ack {
    queue: Arc<QueueState>,
    msg_id: String,
    handle: String,
    bytes: usize,
}

impl Ack {
    /// The ack of `msg` (received through `queue`'s assignment).
    pub(crate) fn new(queue: &Arc<QueueState>, msg: MessageExt, receipt: Receipt) -> Self {
        Ack {
            queue: queue.clone(),
            bytes: msg.body.len(),
            msg_id: msg.msg_id,
            handle: receipt.receipt_handle,
        }
    }
}

/// Feeds the acker task; [`finish`](Acker::finish) drains it.
#[derive(Debug)]
pub(crate) struct Acker {
    tx: mpsc::Sender<Ack>,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl Acker {
    /// Spawns the acker of `group`'s session; it stops (after acking what
    /// is queued) when `stop` is cancelled.
    pub(crate) fn spawn(session: Session, group: String, stop: CancellationToken) -> Acker {
        let (tx, rx) = mpsc::channel(ACK_QUEUE);
        let tasks = TaskTracker::new();
        let span = info_span!(parent: None, "grpc_acker", group = %group);
        let token = stop.clone();
        tasks.spawn(async move { run_acker(&session, &group, rx, &token).await }.instrument(span));
        tasks.close();
        Acker { tx, stop, tasks }
    }

    /// Queues the ack of a consumed message (waits while the queue is
    /// full); `false` when the acker stopped (the message comes back).
    pub(crate) async fn ack(&self, ack: Ack) -> bool {
        match self.tx.send(ack).await {
            Ok(()) => true,
            Err(mpsc::error::SendError(ack)) => {
                warn!(msg_id = %ack.msg_id, "the acker stopped; a consumed message comes back");
                ack.queue.release(1, ack.bytes);
                false
            }
        }
    }

    /// Acks what is queued and stops the acker, waiting at most `limit`.
    pub(crate) async fn finish(&self, limit: Duration) {
        self.stop.cancel();
        if tokio::time::timeout(limit, self.tasks.wait())
            .await
            .is_err()
        {
            warn!("acks still running at shutdown; the proxy gives those messages back");
        }
    }
}

/// Acks what comes, batching whatever is queued at that moment (no added
/// latency), with up to [`ACKS_IN_FLIGHT`] requests at once; once stopped,
/// acks what is still queued and ends.
async fn run_acker(
    session: &Session,
    group: &str,
    mut rx: mpsc::Receiver<Ack>,
    stop: &CancellationToken,
) {
    let take_batch = |rx: &mut mpsc::Receiver<Ack>, first: Ack| {
        let mut batch = Vec::with_capacity(ACK_BATCH);
        batch.push(first);
        while batch.len() < ACK_BATCH {
            match rx.try_recv() {
                Ok(a) => batch.push(a),
                Err(_) => break,
            }
        }
        batch
    };
    let mut running = FuturesUnordered::new();
    loop {
        tokio::select! {
            biased;
            Some(()) = running.next(), if !running.is_empty() => {}
            ack = rx.recv(), if running.len() < ACKS_IN_FLIGHT => {
                let Some(first) = ack else {
                    break;
                };
                let batch = take_batch(&mut rx, first);
                running.push(ack_all(session, group, batch, stop));
            }
            () = stop.cancelled() => break,
        }
    }
    rx.close();
    while let Ok(first) = rx.try_recv() {
        let batch = take_batch(&mut rx, first);
        running.push(ack_all(session, group, batch, stop));
    }
    while running.next().await.is_some() {}
    debug!("gRPC acker stopped");
}

/// `AckMessage` for `acks` (one request per topic); acks that failed for a
/// reason worth retrying go again after a pause, a few rounds (one once
/// `stop` is cancelled). Every ack leaves its queue's count.
pub(crate) async fn ack_all(
    session: &Session,
    group: &str,
    mut acks: Vec<Ack>,
    stop: &CancellationToken,
) {
    for round in 1..=ROUNDS {
        let mut by_topic: BTreeMap<String, Vec<Ack>> = BTreeMap::new();
        for a in acks.drain(..) {
            by_topic
                .entry(a.queue.mq.topic.clone())
                .or_default()
                .push(a);
        }
        let mut again = Vec::new();
        for (topic, list) in by_topic {
            let entries = list
                .iter()
                .map(|a| (a.msg_id.clone(), a.handle.clone()))
                .collect();
            match session.ack_message(&topic, group, entries).await {
                Ok(results) => {
                    let failed: HashMap<&str, &proto::Status> = results
                        .iter()
                        .filter_map(|r| {
                            let s = r.status.as_ref()?;
                            (s.code != proto::Code::Ok as i32).then_some((r.message_id.as_str(), s))
                        })
                        .collect();
                    for a in list {
                        match failed.get(a.msg_id.as_str()) {
                            None => a.queue.release(1, a.bytes),
                            Some(s) if retryable_code(s.code) => again.push(a),
                            Some(s) => {
                                warn!(msg_id = %a.msg_id, code = s.code, message = %s.message, "ack refused");
                                a.queue.release(1, a.bytes);
                            }
                        }
                    }
                }
                Err(e) if e.is_retryable() => again.extend(list),
                Err(e) => {
                    warn!(topic, count = list.len(), error = %rmq_protocol::ErrorChain(&e), "ack failed; the messages come back");
                    for a in list {
                        a.queue.release(1, a.bytes);
                    }
                }
            }
        }
        if again.is_empty() {
            return;
        }
        if round == ROUNDS || stop.is_cancelled() {
            warn!(
                count = again.len(),
                "acks failed for good; the messages come back"
            );
            for a in again {
                a.queue.release(1, a.bytes);
            }
            return;
        }
        debug!(count = again.len(), round, "acks failed; trying again");
        tokio::select! {
            () = tokio::time::sleep(ROUND_PAUSE) => {}
            () = stop.cancelled() => {}
        }
        acks = again;
    }
}

/// Whether a per-entry status is worth another try.
fn retryable_code(code: i32) -> bool {
    rmq_grpc::Error::Proxy {
        rpc: "AckMessage",
        code,
        message: String::new(),
    }
    .is_retryable()
}

/// Settles a message its listener call failed: hidden for a while, or to
/// the DLQ ([`Failed::RetryAfter`] is the FIFO service's own). Leaves the
/// queue's count either way.
pub(crate) async fn failed(
    inner: &GrpcInner,
    queue: &QueueState,
    msg: &MessageExt,
    receipt: &Receipt,
    what: Failed,
) {
    match what {
        Failed::Hide(delay) | Failed::RetryAfter(delay) => {
            let ok = hide(inner, queue, msg, receipt, delay).await;
            queue.metrics.sent_back(ok, false);
        }
        Failed::Dlq => {
            dlq(inner, queue, msg, receipt).await;
        }
    }
    queue.release(1, msg.body.len());
}

/// `ChangeInvisibleDuration`: `msg` comes back after `delay` (with its
/// delivery attempt + 1); `false` when the proxy never took it.
async fn hide(
    inner: &GrpcInner,
    queue: &QueueState,
    msg: &MessageExt,
    receipt: &Receipt,
    delay: Duration,
) -> bool {
    let topic = queue.mq.topic.as_str();
    let changed = retrying(inner, msg, "changing the invisible time", || {
        inner.session.change_invisible_duration(
            topic,
            inner.group(),
            &msg.msg_id,
            &receipt.receipt_handle,
            delay,
        )
    })
    .await;
    if changed.is_some() {
        debug!(msg_id = %msg.msg_id, attempt = receipt.delivery_attempt, ?delay, "consume failed; delivered again later");
    }
    changed.is_some()
}

/// `ForwardMessageToDeadLetterQueue` of `msg`; `false` when the proxy never
/// took it.
pub(crate) async fn dlq(
    inner: &GrpcInner,
    queue: &QueueState,
    msg: &MessageExt,
    receipt: &Receipt,
) -> bool {
    let topic = queue.mq.topic.as_str();
    let max = inner.proxy_settings().backoff.max_attempts();
    let forwarded = retrying(inner, msg, "forwarding to the DLQ", || {
        inner.session.forward_to_dead_letter_queue(
            topic,
            inner.group(),
            &msg.msg_id,
            &receipt.receipt_handle,
            receipt.delivery_attempt,
            max,
        )
    })
    .await
    .is_some();
    if forwarded {
        info!(msg_id = %msg.msg_id, attempt = receipt.delivery_attempt, "message moved to the DLQ");
    }
    queue.metrics.sent_back(forwarded, true);
    forwarded
}

/// Makes the proxy call `call` about `msg` until it succeeds: again after
/// [`ROUND_PAUSE`] while its error is retryable, for at most [`ROUNDS`]
/// rounds and until the consumer aborts. `None` when it never did (logged as
/// `what` failing).
async fn retrying<T, F, Fut>(
    inner: &GrpcInner,
    msg: &MessageExt,
    what: &str,
    mut call: F,
) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = rmq_grpc::Result<T>>,
{
    for round in 1..=ROUNDS {
        match call().await {
            Ok(v) => return Some(v),
            Err(e) if e.is_retryable() && round < ROUNDS && !inner.abort.is_cancelled() => {
                debug!(msg_id = %msg.msg_id, error = %rmq_protocol::ErrorChain(&e), "{what} failed; trying again");
                pause(inner).await;
            }
            Err(e) => {
                warn!(msg_id = %msg.msg_id, error = %rmq_protocol::ErrorChain(&e), "{what} failed for good");
                return None;
            }
        }
    }
    None
}

async fn pause(inner: &GrpcInner) {
    tokio::select! {
        () = tokio::time::sleep(ROUND_PAUSE) => {}
        () = inner.abort.cancelled() => {}
    }
}
