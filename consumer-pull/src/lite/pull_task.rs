//! One pull task per assigned queue (Java `PullTaskImpl`): wait for buffer
//! room, long-poll the broker (LITE_PULL_MESSAGE), put what arrived into
//! the buffer, repeat. A seek replaces the task with a new one (new
//! generation); a dropped queue cancels it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_client_core::PullStatus;
use rmq_protocol::body::SubscriptionData;
use rmq_protocol::{MessageExt, MessageQueue, ResponseCode};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, trace, warn};

use rmq_consumer_base::{
    Expression, PullSpec, SubscriptionSource, filter_pulled, offsets, pull_header, queue_span,
};
use rmq_protocol::names;

use crate::error::{Error, PullConsumerKind};
use crate::lite::buffer::Gate;
use crate::lite::inner::Inner;
use crate::lite::telemetry::QueueMetrics;

/// Pause after the broker answered FLOW_CONTROL (Java push consumer's
/// `PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL`).
const BROKER_FLOW_CONTROL_DELAY: Duration = Duration::from_millis(20);

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
        broker_id: 0,
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
    /// The broker id the last answer suggested.
    broker_id: i64,
    /// The `*` subscription used in assign mode.
    all: Arc<SubscriptionData>,
}

/// What to do after one pull.
enum Step {
    /// Pull again from this offset.
    Next(i64),
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
    async fn run(mut self, start: Option<i64>) {
        let start = match start {
            Some(offset) => Some(offset),
            None => self.start_offset().await,
        };
        let Some(mut offset) = start else {
            return;
        };
        debug!(offset, "pull task started");
        loop {
            if self.cancel.is_cancelled() {
                break;
            }
            let Some(slots) = self.wait_for_room().await else {
                break;
            };
            let reservation = Reservation { task: &self, slots };
            let (step, broker_id) = self.pull_once(offset, reservation).await;
            if let Some(id) = broker_id {
                self.broker_id = id;
            }
            match step {
                Step::Next(next) => offset = next,
                Step::Stop => break,
                Step::Retry(pause) => {
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

    /// One pull of up to the reserved number of messages from `offset`.
    /// Also returns the broker id the answer suggested.
    async fn pull_once(&self, offset: i64, reservation: Reservation<'_>) -> (Step, Option<i64>) {
        let inner = &self.inner;
        let cfg = &inner.config;
        let sub = self.subscription();
        let instance = inner.core.instance();
        let (addr, _) = match offsets::pull_addr::<PullConsumerKind>(
            instance,
            &self.mq,
            self.broker_id,
        )
        .await
        {
            Ok(found) => found,
            Err(e) => {
                warn!(error = %rmq_protocol::ErrorChain(&e), "no address for the queue's broker; retrying later");
                return (Step::Retry(cfg.pull_delay_when_exception), None);
            }
        };
        inner.heartbeat.ensure(instance, &addr).await;
        let slots = reservation.slots;
        let spec = PullSpec {
            offset,
            max: i32::try_from(slots).unwrap_or(i32::MAX),
            hold: Some(cfg.broker_suspend_max_time),
            commit_offset: 0,
            commit: false,
            subscription: SubscriptionSource::InRequest,
            // PULL_MESSAGE, not LITE_PULL_MESSAGE (361): 4.9.x brokers answer
            // 361 with REQUEST_CODE_NOT_SUPPORTED, and both codes read alike.
            lite: false,
        };
        let header = pull_header(inner.core.group(), &self.mq, &sub, spec);
        trace!(offset, max = slots, addr, "pull");
        let started = Instant::now();
        let pulled = tokio::select! {
            r = instance.pull_message(&addr, &header, None) => r,
            () = self.cancel.cancelled() => return (Step::Stop, None),
        };
        let result = match pulled {
            Ok(result) => result,
            Err(e) => return (self.on_error(e, offset).await, None),
        };
        let took = started.elapsed();
        let suggested = Some(result.suggest_which_broker_id);
        let nbo = result.next_begin_offset;
        let max_offset = result.max_offset;
        let step = match result.status {
            PullStatus::Found => {
                let mut msgs = match result.decode_messages(&self.mq) {
                    Ok(msgs) => msgs,
                    Err(e) => {
                        warn!(offset, error = %rmq_protocol::ErrorChain(&e), "cannot decode pulled messages; retrying later");
                        inner.report(
                            &self.mq,
                            Error::Pull {
                                queue: self.mq.clone(),
                                source: e,
                            },
                        );
                        return (Step::Retry(cfg.pull_delay_when_exception), suggested);
                    }
                };
                filter_pulled(&mut msgs, &sub, None);
                // The buffer limit is hard: keep what was reserved and pull
                // the rest again (only an unwrapped 5.x inner batch can
                // bring more than asked for).
                let next = match msgs.get(slots) {
                    Some(first_left) => {
                        let at = first_left.queue_offset;
                        msgs.truncate(slots);
                        at
                    }
                    None => nbo,
                };
                trace!(found = msgs.len(), next, "found");
                self.metrics.pulled(took, msgs.len(), max_offset, next);
                if !reservation.put(msgs) {
                    return (Step::Stop, suggested);
                }
                inner.clear_reported(&self.mq);
                Step::Next(next)
            }
            PullStatus::NoNewMsg | PullStatus::NoMatchedMsg => {
                self.metrics.pulled(took, 0, max_offset, nbo);
                inner.clear_reported(&self.mq);
                Step::Next(nbo)
            }
            PullStatus::OffsetIllegal => {
                warn!(
                    offset,
                    next = nbo,
                    "the pull offset is illegal; continuing from the broker's offset"
                );
                Step::Next(nbo)
            }
            _ => Step::Retry(cfg.pull_delay_when_exception),
        };
        (step, suggested)
    }

    async fn on_error(&self, e: rmq_client_core::Error, offset: i64) -> Step {
        let inner = &self.inner;
        let mut delay = inner.config.pull_delay_when_exception;
        if e.is_auth() {
            // The one place where the lite consumer observes a refused
            // credential or permission: reported once through poll/stream
            // (below), logged at warn, and the queue backs off longer.
            delay = delay.max(rmq_client_core::AUTH_FAILURE_BACKOFF);
        }
        match e.response_code() {
            Some(ResponseCode::FLOW_CONTROL) => {
                debug!(error = %rmq_protocol::ErrorChain(&e), "broker flow control");
                Step::Retry(BROKER_FLOW_CONTROL_DELAY)
            }
            Some(ResponseCode::SUBSCRIPTION_NOT_EXIST | ResponseCode::SUBSCRIPTION_NOT_LATEST) => {
                debug!(error = %rmq_protocol::ErrorChain(&e), "the broker does not know the group yet; heartbeat");
                inner.core.instance().send_heartbeat_now().await;
                Step::Retry(delay)
            }
            _ => {
                if !self.cancel.is_cancelled() {
                    warn!(offset, error = %rmq_protocol::ErrorChain(&e), "pull failed; retrying later");
                    if !e.is_retryable() {
                        inner.report(
                            &self.mq,
                            Error::Pull {
                                queue: self.mq.clone(),
                                source: e,
                            },
                        );
                    }
                }
                Step::Retry(delay)
            }
        }
    }
}
