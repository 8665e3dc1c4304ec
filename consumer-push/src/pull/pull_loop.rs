//! One long-polling pull loop per assigned queue (the Rust form of Java's
//! PullRequest / `DefaultMQPushConsumerImpl.pullMessage` cycle).
//!
//! Each iteration: stop if the queue is dropped; flow control (count,
//! bytes, span) with a 50 ms pause; a turn of the pull engine
//! ([`PullCursor::step`]: PULL_MESSAGE with SUSPEND, 15 s hold, tags
//! re-checked, retry topics restored, the waits after failures); on FOUND
//! put into the process queue and hand the new messages to the consume
//! service — never waiting for them to be consumed: the concurrent
//! service's calls run in the loop's own task, polled beside the next pull
//! (and during pauses), so a listener that answers at once costs no task
//! hand-over; orderly consumption runs in tasks of its own. An illegal
//! offset drops the queue, persists the broker's offset and lets the
//! rebalance recreate it there.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use rmq_client_core::PullStatus;
use rmq_consumer_base::engine::pull::{
    Answer, Fetched, PullCursor, PullDelays, PullQuery, PullSpec, RetryCause, Step,
    SubscriptionSource,
};
use rmq_consumer_base::queue_span;
use rmq_offset_store::PersistMode;
use rmq_protocol::body::MessageModel;
use rmq_protocol::{MessageExt, MessageQueue};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, trace, warn};

use crate::inner::Inner;
use crate::pull::process_queue::{FlowState, ProcessQueue};
use crate::telemetry;

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
        cursor: PullCursor::default(),
        flow_controlled: 0,
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
    /// The suggested broker id and the request header, refilled for the
    /// next pull (no allocation per pull).
    cursor: PullCursor,
    flow_controlled: u64,
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
                consuming.push(crate::service::concurrent::consume(inner, pq, mq, fresh));
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
        // The consume offset rides on the pull (clustering, the broker's own
        // store only: an application's store keeps the offsets to itself;
        // the engine drops it when the address is a slave's).
        let commit_offset = match self.inner.model() {
            MessageModel::Clustering if !self.inner.core.has_own_offset_store() => {
                self.inner.memory_offset(&self.mq).unwrap_or(0)
            }
            _ => 0,
        };
        let query = PullQuery {
            group: self.inner.core.group(),
            mq: &self.mq,
            sub: &sub,
            spec: PullSpec {
                offset: self.next_offset,
                max: pull_size(&flow, cfg),
                hold: Some(cfg.suspend_timeout),
                commit_offset,
                commit: commit_offset > 0,
                subscription: SubscriptionSource::Heartbeat { sub_version },
                lite: false,
            },
            retry_topic: Some(&self.inner.retry_topic),
            namespace: self.inner.core.namespace(),
            timeout: None,
            gate: None,
        };
        let delays = PullDelays {
            exception: cfg.pull_delay_when_exception,
            broker_flow_control: cfg.pull_delay_when_broker_flow_control,
        };
        let span = telemetry::pull_span(self.inner.core.group(), &self.mq, self.next_offset);
        let step = self
            .cursor
            .step(self.inner.core.instance(), &query, delays, &self.cancel)
            .instrument(span.clone())
            .await;
        self.on_step(step, &span).await
    }

    async fn on_step(&mut self, step: Step, span: &tracing::Span) -> Next {
        let answered = |a: &Answer| {
            self.pq.metrics.pulled(a.took, 0, a.max_offset);
            telemetry::pull_answered(span, pull_status_name(a.status), 0);
        };
        match step {
            Step::Found(Fetched {
                answer,
                messages,
                pulled,
            }) => {
                self.pq
                    .metrics
                    .pulled(answer.took, messages.len(), answer.max_offset);
                telemetry::pull_answered(span, "FOUND", pulled);
                let next = answer.next_begin_offset;
                trace!(pulled, kept = messages.len(), next, "found");
                self.set_next(next);
                if messages.is_empty() {
                    self.commit_if_idle(next);
                    return Next::After(Duration::ZERO);
                }
                if self.inner.is_orderly() {
                    if self.pq.put_messages(messages) > 0 {
                        crate::service::orderly::submit(&self.pq);
                    }
                } else {
                    // `run` hands them to the listener.
                    self.fresh = self.pq.track_messages(messages);
                }
                Next::After(self.inner.config.pull_interval)
            }
            Step::Empty(answer) => {
                answered(&answer);
                self.set_next(answer.next_begin_offset);
                self.commit_if_idle(answer.next_begin_offset);
                Next::After(Duration::ZERO)
            }
            Step::OffsetIllegal(answer) => {
                answered(&answer);
                self.on_offset_moved(answer.next_begin_offset).await;
                Next::Stop
            }
            Step::Retry { after, cause } => {
                match cause {
                    RetryCause::Status(answer) => answered(&answer),
                    RetryCause::NoBroker(_) | RetryCause::Decode(_) => {}
                    _ => telemetry::pull_answered(span, "error", 0),
                }
                Next::After(after)
            }
            Step::Cancelled => Next::Stop,
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
