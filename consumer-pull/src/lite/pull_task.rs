//! One pull task per assigned queue (Java `PullTaskImpl`): wait for buffer
//! room, a turn of the pull engine (a long poll of the broker, the waits
//! after failures), put what arrived into the buffer, repeat. A seek
//! replaces the task with a new one (new generation); a dropped queue
//! cancels it.

use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::body::SubscriptionData;
use rmq_protocol::{MessageExt, MessageQueue};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, trace, warn};

use rmq_consumer_base::engine::pull::{
    Fetched, PullCursor, PullDelays, PullQuery, PullSpec, Step, SubscriptionSource,
};
use rmq_consumer_base::{Expression, offsets, queue_span};
use rmq_protocol::names;

use crate::error::Error;
use crate::lite::buffer::Gate;
use crate::lite::inner::Inner;
use crate::lite::telemetry::QueueMetrics;

/// Spawns the pull task of `mq` (of buffer generation `generation`) on the
/// consumer's tracker.
pub(crate) fn spawn(
    inner: &Arc<Inner>,
    mq: MessageQueue,
    generation: u64,
    cancel: CancellationToken,
    start: Option<i64>,
) {
    let span = queue_span(&mq);
    let task = PullTask {
        inner: inner.clone(),
        metrics: inner.metrics.queue(&mq),
        mq,
        generation,
        cancel,
        all: Arc::new(Expression::all().to_subscription("", 0)),
    };
    inner.core.tasks().spawn(task.run(start).instrument(span));
}

struct PullTask {
    inner: Arc<Inner>,
    /// The queue's metric handles.
    metrics: Arc<QueueMetrics>,
    mq: MessageQueue,
    generation: u64,
    cancel: CancellationToken,
    /// The `*` subscription used in assign mode.
    all: Arc<SubscriptionData>,
}

/// What to do after one pull.
enum Next {
    /// Pull again from this offset.
    Pull(i64),
    /// Pull again from the same offset after this pause.
    Retry(Duration),
    /// The queue is gone (or the task was replaced): end.
    Stop,
}

/// Reserved buffer slots; given back when dropped unless settled by a
/// `put` (so a cancelled or failed pull never leaks capacity).
struct Reservation<'a> {
    task: &'a PullTask,
    slots: usize,
}

impl Reservation<'_> {
    /// Puts `msgs` into the buffer, settling the reservation. `false` when
    /// the queue is gone or the task was replaced.
    fn put(mut self, msgs: Vec<MessageExt>) -> bool {
        let slots = std::mem::take(&mut self.slots);
        let t = self.task;
        let stored = t.inner.state().buffer.put(&t.mq, t.generation, slots, msgs);
        if stored {
            t.inner.msg_ready.notify_waiters();
        }
        // Unused slots of the reservation were returned by `put`.
        t.inner.space.notify_waiters();
        stored
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.slots == 0 {
            return;
        }
        let t = self.task;
        t.inner
            .state()
            .buffer
            .release(&t.mq, t.generation, self.slots);
        t.inner.space.notify_waiters();
    }
}

impl PullTask {
    async fn run(self, start: Option<i64>) {
        let start = match start {
            Some(offset) => Some(offset),
            None => self.start_offset().await,
        };
        let Some(mut offset) = start else {
            return;
        };
        debug!(offset, "pull task started");
        let mut cursor = PullCursor::default();
        loop {
            if self.cancel.is_cancelled() {
                break;
            }
            let Some(slots) = self.wait_for_room().await else {
                break;
            };
            let reservation = Reservation { task: &self, slots };
            match self.pull_once(&mut cursor, offset, reservation).await {
                Next::Pull(next) => offset = next,
                Next::Stop => break,
                Next::Retry(pause) => {
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        () = self.cancel.cancelled() => break,
                    }
                }
            }
        }
        debug!(offset, "pull task stopped");
    }

    /// The queue's start offset (committed, else consume-from), retrying
    /// until it is known or the task is cancelled.
    async fn start_offset(&self) -> Option<i64> {
        let inner = &self.inner;
        loop {
            if inner.config.options.is_clustering() {
                inner.ensure_heartbeat(&self.mq).await;
            }
            let computed = tokio::select! {
                r = offsets::start_offset(
                    inner.core.instance(),
                    &**inner.core.offset_store(),
                    &self.mq,
                    inner.config.consume_from(),
                    names::is_retry_topic(&self.mq.topic),
                ) => r,
                () = self.cancel.cancelled() => return None,
            };
            match computed {
                Ok(offset) => return Some(offset),
                Err(e) => {
                    warn!(error = %rmq_protocol::ErrorChain(&e), "cannot compute the start offset; retrying later");
                    if !e.is_retryable() {
                        inner.report(&self.mq, e);
                    }
                }
            }
            tokio::select! {
                () = tokio::time::sleep(inner.config.pull_delay_when_exception) => {}
                () = self.cancel.cancelled() => return None,
            }
        }
    }

    /// Waits until the queue is not paused and the buffer has room; the
    /// number of slots reserved, `None` when the task must end.
    async fn wait_for_room(&self) -> Option<usize> {
        let want = usize::try_from(self.inner.config.pull_batch_size).unwrap_or(1);
        loop {
            let notified = self.inner.space.notified();
            tokio::pin!(notified);
            // Register before looking: room freed after the look wakes us.
            notified.as_mut().enable();
            let gate = self
                .inner
                .state()
                .buffer
                .reserve(&self.mq, self.generation, want);
            match gate {
                Gate::Granted(n) => return Some(n),
                Gate::Gone => return None,
                Gate::Paused | Gate::Full => {}
            }
            tokio::select! {
                () = &mut notified => {}
                () = self.cancel.cancelled() => return None,
            }
        }
    }

    /// The subscription to pull with: the topic's in subscribe mode, `*`
    /// otherwise.
    fn subscription(&self) -> Arc<SubscriptionData> {
        self.inner
            .state()
            .subscriptions
            .get(&self.mq.topic)
            .cloned()
            .unwrap_or_else(|| self.all.clone())
    }

    /// One pull of up to the reserved number of messages from `offset`: a
    /// turn of the pull engine, then the buffer.
    async fn pull_once(
        &self,
        cursor: &mut PullCursor,
        offset: i64,
        reservation: Reservation<'_>,
    ) -> Next {
        let inner = &self.inner;
        let cfg = &inner.config;
        let sub = self.subscription();
        let slots = reservation.slots;
        let query = PullQuery {
            group: inner.core.group(),
            mq: &self.mq,
            sub: &sub,
            spec: PullSpec {
                offset,
                max: i32::try_from(slots).unwrap_or(i32::MAX),
                hold: Some(cfg.broker_suspend_max_time),
                commit_offset: 0,
                commit: false,
                subscription: SubscriptionSource::InRequest,
                // PULL_MESSAGE, not LITE_PULL_MESSAGE (361): 4.9.x brokers
                // answer 361 with REQUEST_CODE_NOT_SUPPORTED, and both codes
                // read alike.
                lite: false,
            },
            retry_topic: None,
            namespace: inner.core.namespace(),
            timeout: None,
            gate: Some(&inner.heartbeat),
        };
        let delays = PullDelays {
            exception: cfg.pull_delay_when_exception,
            broker_flow_control: cfg.pull_delay_when_broker_flow_control,
        };
        let step = cursor
            .step(inner.core.instance(), &query, delays, &self.cancel)
            .await;
        match step {
            Step::Found(Fetched {
                answer,
                mut messages,
                ..
            }) => {
                // The buffer limit is hard: keep what was reserved and pull
                // the rest again (only an unwrapped 5.x inner batch can
                // bring more than asked for).
                let next = match messages.get(slots) {
                    Some(first_left) => {
                        let at = first_left.queue_offset;
                        messages.truncate(slots);
                        at
                    }
                    None => answer.next_begin_offset,
                };
                trace!(found = messages.len(), next, "found");
                self.metrics
                    .pulled(answer.took, messages.len(), answer.max_offset, next);
                if !reservation.put(messages) {
                    return Next::Stop;
                }
                inner.clear_reported(&self.mq);
                Next::Pull(next)
            }
            Step::Empty(answer) => {
                let next = answer.next_begin_offset;
                self.metrics.pulled(answer.took, 0, answer.max_offset, next);
                inner.clear_reported(&self.mq);
                Next::Pull(next)
            }
            Step::OffsetIllegal(answer) => {
                warn!(
                    offset,
                    next = answer.next_begin_offset,
                    "the pull offset is illegal; continuing from the broker's offset"
                );
                Next::Pull(answer.next_begin_offset)
            }
            Step::Retry { after, cause } => {
                // Reported once through poll/stream: what waiting will not
                // cure (a refused credential or permission, undecodable
                // messages, a rejected request).
                if let Some(e) = cause.into_error() {
                    if !e.is_retryable() && !self.cancel.is_cancelled() {
                        inner.report(
                            &self.mq,
                            Error::Pull {
                                queue: self.mq.clone(),
                                source: e,
                            },
                        );
                    }
                }
                Next::Retry(after)
            }
            Step::Cancelled => Next::Stop,
        }
    }
}
