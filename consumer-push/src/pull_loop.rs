//! One long-polling pull loop per assigned queue (the Rust form of Java's
//! PullRequest / `DefaultMQPushConsumerImpl.pullMessage` cycle).
//!
//! Each iteration: stop if the queue is dropped; flow control (count,
//! bytes, span) with a 50 ms pause; PULL_MESSAGE with SUSPEND (15 s
//! hold); on FOUND filter, restore retry topics, put into the process
//! queue and hand the new messages to the consume service — never waiting
//! for them to be consumed: the concurrent service's calls run in the loop's
//! own task, polled beside the next pull (and during pauses), so a listener
//! that answers at once costs no task hand-over; orderly consumption runs in
//! tasks of its own.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use rmq_client_core::{PullResult, PullStatus};
use rmq_consumer_base::{
    PullSpec, SubscriptionSource, fill_pull_header, filter_pulled, queue_span,
};
use rmq_offset_store::PersistMode;
use rmq_protocol::body::MessageModel;
use rmq_protocol::header::PullMessageRequestHeader;
use rmq_protocol::{MessageExt, MessageQueue, ResponseCode};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, trace, warn};

use crate::inner::Inner;
use crate::process_queue::{FlowState, ProcessQueue};
use crate::telemetry;
use crate::{concurrent, orderly};

/// Log one flow-control event in this many (Java logs every 1000th).
const FLOW_CONTROL_LOG_EVERY: u64 = 1000;

/// Spawns the pull loop of `mq` on the consumer's tracker.
pub(crate) fn spawn(
    inner: &Arc<Inner>,
    mq: MessageQueue,
    pq: Arc<ProcessQueue>,
    next_offset: i64,
    cancel: CancellationToken,
) {
    let span = queue_span(&mq);
    let loop_ = PullLoop {
        inner: inner.clone(),
        mq: Arc::new(mq),
        pq,
        next_offset,
        cancel,
        broker_id: 0,
        flow_controlled: 0,
        header: PullMessageRequestHeader::default(),
        fresh: Vec::new(),
    };
    inner.core.tasks().spawn(loop_.run().instrument(span));
}

struct PullLoop {
    inner: Arc<Inner>,
    /// Shared with the listener calls of its batches.
    mq: Arc<MessageQueue>,
    pq: Arc<ProcessQueue>,
    next_offset: i64,
    cancel: CancellationToken,
    /// The broker id the last answer suggested (Java `pullFromWhichNodeTable`).
    broker_id: i64,
    flow_controlled: u64,
    /// The last request's header, refilled for the next (no allocation per
    /// pull).
    header: PullMessageRequestHeader,
    /// Concurrent consumption: the messages of the last answer that are new
    /// to the process queue, for `run` to consume.
    fresh: Vec<MessageExt>,
}

/// What to do after one iteration.
enum Next {
    /// Pull again after this pause (zero: at once).
    After(Duration),
    /// The queue is gone: end the loop.
    Stop,
}

impl PullLoop {
    async fn run(mut self) {
        debug!(offset = self.next_offset, "pull loop started");
        // The listener calls of this queue's pulled batches (concurrent
        // consumption), run by this task beside its pulls: a call that
        // answers at once costs no task of its own and wakes no other
        // thread; one that waits is polled whenever this task runs.
        let mut consuming = FuturesUnordered::new();
        loop {
            if self.cancel.is_cancelled() || self.pq.is_dropped() {
                break;
            }
            let next = {
                // Pinned here, so that `beside` holds a pointer, not a
                // second copy of the iteration's state.
                let iteration = pin!(self.iteration());
                beside(&mut consuming, iteration).await
            };
            let fresh = std::mem::take(&mut self.fresh);
            if !fresh.is_empty() {
                let (inner, pq, mq) = (self.inner.clone(), self.pq.clone(), self.mq.clone());
                consuming.push(concurrent::service::consume(inner, pq, mq, fresh));
            }
            let pause = match next {
                Next::Stop => break,
                Next::After(d) => d,
            };
            if !pause.is_zero() {
                let cancel = &self.cancel;
                let paused = pin!(async {
                    tokio::select! {
                        () = tokio::time::sleep(pause) => true,
                        () = cancel.cancelled() => false,
                    }
                });
                if !beside(&mut consuming, paused).await {
                    break;
                }
            }
        }
        // The calls in flight end (a dropped queue's results are ignored);
        // shutdown aborts them after its await timeout.
        if !consuming.is_empty() {
            let abort = self.inner.core.cancel().clone();
            tokio::select! {
                () = async { while consuming.next().await.is_some() {} } => {}
                () = abort.cancelled() => {}
            }
        }
        debug!(offset = self.next_offset, "pull loop stopped");
    }

    async fn iteration(&mut self) -> Next {
        let cfg = &self.inner.config;
        self.pq.touch_pull(Instant::now());
        let flow = self.pq.flow_state();
        if let Some(reason) = over_threshold(&flow, cfg) {
            self.pq.metrics.flow_controlled(reason);
            self.flow_controlled = self.flow_controlled.wrapping_add(1);
            if self.flow_controlled % FLOW_CONTROL_LOG_EVERY == 1 {
                warn!(
                    reason,
                    times = self.flow_controlled,
                    "flow control: the queue holds too much; pulling paused"
                );
            }
            return Next::After(cfg.pull_delay_when_flow_control);
        }
        // Orderly clustering: pull only while the broker lock is ours (Java).
        if let Some(locks) = &self.inner.locks {
            if !locks.is_locked(&self.mq) {
                debug!("the queue is not locked; pulling later");
                return Next::After(cfg.pull_delay_when_exception);
            }
        }
        let Some((sub, sub_version)) = self.inner.subscriptions.for_pull(&self.mq.topic) else {
            warn!("no subscription for the queue's topic");
            return Next::After(cfg.pull_delay_when_exception);
        };
        let Some(addr) = self.broker_addr().await else {
            warn!("no address for the queue's broker; retrying later");
            return Next::After(cfg.pull_delay_when_exception);
        };
        let (addr, is_slave) = addr;
        // The consume offset rides on the pull (clustering, the broker's own
        // store only: an application's store keeps the offsets to itself).
        let commit_offset = match self.inner.model() {
            MessageModel::Clustering if !self.inner.core.has_own_offset_store() => {
                self.inner.memory_offset(&self.mq).unwrap_or(0)
            }
            _ => 0,
        };
        let spec = PullSpec {
            offset: self.next_offset,
            max: pull_size(&flow, cfg),
            hold: Some(cfg.suspend_timeout),
            commit_offset,
            commit: commit_offset > 0 && !is_slave,
            subscription: SubscriptionSource::Heartbeat { sub_version },
            lite: false,
        };
        fill_pull_header(
            &mut self.header,
            self.inner.core.group(),
            &self.mq,
            &sub,
            spec,
        );
        trace!(offset = self.next_offset, addr, "pull");
        let span = telemetry::pull_span(self.inner.core.group(), &self.mq, self.next_offset);
        let started = Instant::now();
        let pulled = tokio::select! {
            r = self.inner.core.instance().pull_message(&addr, &self.header, None).instrument(span.clone()) => r,
            () = self.cancel.cancelled() => return Next::Stop,
        };
        let took = started.elapsed();
        match pulled {
            Ok(result) => {
                self.broker_id = result.suggest_which_broker_id;
                self.on_result(result, &sub, took, &span).await
            }
            Err(e) => {
                telemetry::pull_answered(&span, "error", 0);
                self.on_error(e).await
            }
        }
    }

    /// The address to pull from (Java `findBrokerAddressInSubscribe` with
    /// the suggested broker id), refreshing the route once when unknown.
    async fn broker_addr(&self) -> Option<(String, bool)> {
        match self
            .inner
            .core
            .instance()
            .subscribe_addr(&self.mq, self.broker_id, false)
            .await
        {
            Ok(found) => Some(found),
            Err(e) => {
                debug!(error = %rmq_protocol::ErrorChain(&e), "no broker address to pull from");
                None
            }
        }
    }

    async fn on_result(
        &mut self,
        result: PullResult,
        sub: &rmq_protocol::body::SubscriptionData,
        took: Duration,
        span: &tracing::Span,
    ) -> Next {
        let inner = self.inner.clone();
        let cfg = &inner.config;
        let nbo = result.next_begin_offset;
        if !matches!(result.status, PullStatus::Found) {
            self.pq.metrics.pulled(took, 0, result.max_offset);
            telemetry::pull_answered(span, pull_status_name(result.status), 0);
        }
        match result.status {
            PullStatus::Found => {
                let mut msgs = match result.decode_messages(&self.mq) {
                    Ok(m) => m,
                    Err(e) => {
                        warn!(offset = self.next_offset, error = %rmq_protocol::ErrorChain(&e), "cannot decode pulled messages");
                        return Next::After(cfg.pull_delay_when_exception);
                    }
                };
                let pulled = msgs.len();
                filter_pulled(&mut msgs, sub, Some(&self.inner.retry_topic));
                self.pq.metrics.pulled(took, msgs.len(), result.max_offset);
                telemetry::pull_answered(span, "FOUND", pulled);
                trace!(pulled, kept = msgs.len(), next = nbo, "found");
                self.set_next(nbo);
                if msgs.is_empty() {
                    self.commit_if_idle(nbo);
                    return Next::After(Duration::ZERO);
                }
                if self.inner.is_orderly() {
                    if self.pq.put_messages(msgs) > 0 {
                        orderly::service::submit(&self.pq);
                    }
                } else {
                    // `run` hands them to the listener.
                    self.fresh = self.pq.track_messages(msgs);
                }
                Next::After(cfg.pull_interval)
            }
            PullStatus::NoNewMsg | PullStatus::NoMatchedMsg => {
                self.set_next(nbo);
                self.commit_if_idle(nbo);
                Next::After(Duration::ZERO)
            }
            PullStatus::OffsetIllegal => {
                self.on_offset_moved(nbo).await;
                Next::Stop
            }
            _ => Next::After(cfg.pull_delay_when_exception),
        }
    }

    fn set_next(&mut self, offset: i64) {
        self.next_offset = offset;
        self.pq.set_next_offset(offset);
    }

    /// Nothing held: the queue is consumed up to `offset` (Java
    /// `correctTagsOffset`).
    fn commit_if_idle(&self, offset: i64) {
        let store = self.inner.core.offset_store();
        let mq = &self.mq;
        self.pq
            .commit_if_empty(offset, |o| store.update_offset(mq, o, true));
    }

    /// PULL_OFFSET_MOVED: the broker says the offset is illegal (deleted,
    /// beyond the end, or reset by an admin). Drop the process queue, set
    /// and persist the broker's offset, and let the rebalance recreate the
    /// queue from it.
    async fn on_offset_moved(&mut self, nbo: i64) {
        info!(
            from = self.next_offset,
            to = nbo,
            "offset moved (illegal offset or admin reset); restarting the queue"
        );
        self.inner.queues.detach(&self.mq, Some(&self.pq));
        self.pq.set_dropped();
        let store = self.inner.core.offset_store();
        store.update_and_freeze_offset(&self.mq, nbo);
        if let Err(e) = store.persist(&self.mq, PersistMode::Sync).await {
            warn!(error = %rmq_protocol::ErrorChain(&e), "cannot persist the moved offset");
        }
        store.remove_offset(&self.mq);
        self.inner
            .queues
            .set_pending_offset(MessageQueue::clone(&self.mq), nbo);
        self.inner.trigger.notify();
    }

    async fn on_error(&mut self, e: rmq_client_core::Error) -> Next {
        let cfg = &self.inner.config;
        if e.is_auth() {
            return self.on_auth_failure(&e);
        }
        match e.response_code() {
            Some(ResponseCode::FLOW_CONTROL) => {
                debug!(error = %rmq_protocol::ErrorChain(&e), "broker flow control");
                Next::After(cfg.pull_delay_when_broker_flow_control)
            }
            Some(ResponseCode::SUBSCRIPTION_NOT_EXIST | ResponseCode::SUBSCRIPTION_NOT_LATEST) => {
                debug!(error = %rmq_protocol::ErrorChain(&e), "the broker does not know our subscription yet; heartbeat");
                self.inner.core.instance().send_heartbeat_now().await;
                Next::After(cfg.pull_delay_when_exception)
            }
            _ => {
                if !self.cancel.is_cancelled() {
                    warn!(offset = self.next_offset, error = %rmq_protocol::ErrorChain(&e), "pull failed; retrying later");
                }
                Next::After(cfg.pull_delay_when_exception)
            }
        }
    }
}

impl PullLoop {
    /// The one place where the push consumer observes a refused credential
    /// or permission: logged at warn (the text names the access key, topic
    /// and group), then the queue backs off for
    /// [`AUTH_FAILURE_BACKOFF`](rmq_client_core::AUTH_FAILURE_BACKOFF).
    fn on_auth_failure(&self, e: &rmq_client_core::Error) -> Next {
        if !self.cancel.is_cancelled() {
            warn!(
                offset = self.next_offset,
                error = %rmq_protocol::ErrorChain(e),
                backoff = ?rmq_client_core::AUTH_FAILURE_BACKOFF,
                "pull refused: not authenticated or not authorized; backing off"
            );
        }
        Next::After(rmq_client_core::AUTH_FAILURE_BACKOFF)
    }
}

/// The span's name of a pull status (Java `PullStatus`).
fn pull_status_name(status: PullStatus) -> &'static str {
    match status {
        PullStatus::Found => "FOUND",
        PullStatus::NoNewMsg => "NO_NEW_MSG",
        PullStatus::NoMatchedMsg => "NO_MATCHED_MSG",
        PullStatus::OffsetIllegal => "OFFSET_ILLEGAL",
        _ => "OTHER",
    }
}

/// Polls `fut` to its end, running `calls` whenever this task is polled
/// (their outputs are discarded; a finished call leaves the set).
async fn beside<F: Future>(
    calls: &mut FuturesUnordered<impl Future<Output = ()>>,
    mut fut: Pin<&mut F>,
) -> F::Output {
    poll_fn(|cx| {
        let out = fut.as_mut().poll(cx);
        while let Poll::Ready(Some(())) = calls.poll_next_unpin(cx) {}
        out
    })
    .await
}

/// Which flow-control threshold stops the queue's next pull, if any (Java
/// `pullMessage`'s three checks; size compared in whole MiB like Java).
/// Unlike Java, the count threshold is a hard limit: pulling stops at the
/// threshold (not above it) and [`pull_size`] asks for no more than fits.
pub(crate) fn over_threshold(
    flow: &FlowState,
    cfg: &crate::config::PushConsumerConfig,
) -> Option<&'static str> {
    if flow.count >= cfg.pull_threshold_for_queue {
        return Some("message count");
    }
    if flow.bytes / (1024 * 1024) > cfg.pull_threshold_size_for_queue_mib {
        return Some("message size");
    }
    // Orderly consumption has no span limit (Java): it consumes in order.
    if !cfg.orderly && flow.span > cfg.consume_concurrently_max_span {
        return Some("offset span");
    }
    None
}

/// Messages to ask for: the pull batch size, but no more than the count
/// threshold leaves room for.
pub(crate) fn pull_size(flow: &FlowState, cfg: &crate::config::PushConsumerConfig) -> i32 {
    let room = cfg
        .pull_threshold_for_queue
        .saturating_sub(flow.count)
        .max(1);
    i32::try_from(room).map_or(cfg.pull_batch_size, |r| r.min(cfg.pull_batch_size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PushConsumerConfig;

    #[test]
    fn thresholds_like_java() {
        let cfg = PushConsumerConfig::default();
        let ok = FlowState {
            count: 999,
            bytes: 100 * 1024 * 1024 + 1024 * 1024 - 1,
            span: 2000,
        };
        assert_eq!(over_threshold(&ok, &cfg), None);
        let count = FlowState { count: 1000, ..ok };
        assert_eq!(over_threshold(&count, &cfg), Some("message count"));
        assert_eq!(pull_size(&ok, &cfg), 1);
        assert_eq!(pull_size(&FlowState { count: 0, ..ok }, &cfg), 32);
        assert_eq!(pull_size(&FlowState { count: 990, ..ok }, &cfg), 10);
        assert_eq!(pull_size(&FlowState { count: 5000, ..ok }, &cfg), 1);
        let size = FlowState {
            bytes: 101 * 1024 * 1024,
            ..ok
        };
        assert_eq!(over_threshold(&size, &cfg), Some("message size"));
        let span = FlowState { span: 2001, ..ok };
        assert_eq!(over_threshold(&span, &cfg), Some("offset span"));
        let orderly = PushConsumerConfig {
            orderly: true,
            ..PushConsumerConfig::default()
        };
        assert_eq!(over_threshold(&span, &orderly), None);
    }
}
