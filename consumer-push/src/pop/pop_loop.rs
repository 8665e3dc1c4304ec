//! [`PopLoop`]: pops one assigned queue (usually `queueId -1`: any queue
//! of the broker) while its messages in hand stay under the flow-control
//! thresholds (Java `DefaultMQPushConsumerImpl.popMessage`), through the
//! pop engine ([`rmq_consumer_base::engine::pop`]). A queue of a concurrent
//! consumer has several loops, so that several pops are in flight.

use std::sync::Arc;
use std::time::Duration;

use rmq_consumer_base::engine::pop::{
    InitMode, PopCursor, PopDelays, PopLimits, PopQuery, PopStep, Popped, Room,
};
use rmq_protocol::MessageQueue;
use rmq_protocol::body::SubscriptionData;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, warn};

use crate::config::ConsumeFrom;
use crate::in_hand::{InHand, body_bytes};
use crate::inner::{Inner, Listener};
use crate::pop::orderly::OrderlyPop;
use crate::pop::settle::Settler;

/// Logs one flow-control warning every this many pauses.
const FLOW_CONTROL_LOG_EVERY: u64 = 1000;
/// Orderly pop: the longest poll while a queue is hidden (suspended), so
/// that it is popped again soon after it becomes visible (a long poll is
/// only woken by new messages).
const HIDDEN_POLL: Duration = Duration::from_secs(1);
/// Pops in flight per queue of a concurrent consumer (an orderly one pops
/// a queue once at a time: the broker answers its next messages only after
/// the earlier ones are acked).
pub(crate) const POPS_PER_QUEUE: usize = 8;

pub(crate) struct PopLoop {
    inner: Arc<Inner>,
    mq: MessageQueue,
    filter: Option<SubscriptionData>,
    cancel: CancellationToken,
    settler: Settler,
    /// The messages in hand of the queue (shared by its loops).
    held: Arc<InHand>,
    flow_controlled: u64,
    /// Orderly consumers: pops with `order=true`, consumed before the
    /// next pop.
    orderly: Option<OrderlyPop>,
    cursor: PopCursor,
    /// Orderly pop: a queue is hidden until about then; poll shortly.
    hidden_until: Option<tokio::time::Instant>,
}

impl PopLoop {
    /// Spawns the loops of `mq`: one for an orderly consumer,
    /// [`POPS_PER_QUEUE`] for a concurrent one.
    pub(crate) fn spawn(
        inner: &Arc<Inner>,
        mq: &MessageQueue,
        cancel: &CancellationToken,
        settler: &Settler,
    ) {
        let held = Arc::new(InHand::default());
        let version = inner.core.started_at_ms();
        let filter = inner
            .config
            .subscriptions
            .iter()
            .rev()
            .find(|s| s.topic == mq.topic)
            .map(|s| s.to_data(version));
        let loops = match &inner.listener {
            Listener::Orderly(_) => 1,
            Listener::Concurrent(_) => POPS_PER_QUEUE,
        };
        for _ in 0..loops {
            let orderly = match &inner.listener {
                Listener::Orderly(l) => {
                    Some(OrderlyPop::new(inner.clone(), l.clone(), settler.clone()))
                }
                Listener::Concurrent(_) => None,
            };
            let mut this = PopLoop {
                inner: inner.clone(),
                mq: mq.clone(),
                filter: filter.clone(),
                cancel: cancel.clone(),
                settler: settler.clone(),
                held: held.clone(),
                flow_controlled: 0,
                orderly,
                cursor: PopCursor::new(),
                hidden_until: None,
            };
            let span = rmq_consumer_base::queue_span(mq);
            inner
                .core
                .tasks()
                .spawn(async move { this.run().await }.instrument(span));
        }
    }

    async fn run(&mut self) {
        while !self.cancel.is_cancelled() {
            let pause = self.iteration().await;
            if pause > Duration::ZERO {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = self.cancel.cancelled() => break,
                }
            }
        }
        debug!("pop loop stopped");
    }

    /// One pop; answers the pause before the next.
    async fn iteration(&mut self) -> Duration {
        let inner = self.inner.clone();
        let cfg = &inner.config;
        let limits = PopLimits {
            count: cfg.pull_threshold_for_queue,
            mib: cfg.pull_threshold_size_for_queue_mib,
            batch: cfg.pull_batch_size,
        };
        let max = match limits.room(self.held.count(), self.held.bytes()) {
            Room::Pop(max) => max,
            Room::Full(reason) => {
                self.flow_controlled = self.flow_controlled.wrapping_add(1);
                if self.flow_controlled % FLOW_CONTROL_LOG_EVERY == 1 {
                    warn!(
                        reason,
                        times = self.flow_controlled,
                        "flow control: the queue holds too much; popping paused"
                    );
                }
                return cfg.pull_delay_when_flow_control;
            }
        };
        let Some(filter) = &self.filter else {
            warn!("no subscription for the queue's topic");
            return cfg.pull_delay_when_exception;
        };
        let poll = match self.hidden_until {
            Some(until) => until
                .saturating_duration_since(tokio::time::Instant::now())
                .clamp(Duration::from_millis(100), HIDDEN_POLL)
                .min(cfg.suspend_timeout),
            None => cfg.suspend_timeout,
        };
        let instance = inner.core.instance();
        let orderly = self.orderly.is_some();
        let query = PopQuery {
            group: inner.core.group(),
            client_id: instance.client_id(),
            mq: &self.mq,
            filter,
            max,
            invisible: cfg.pop_invisible_time,
            poll,
            init_mode: match cfg.consume_from() {
                ConsumeFrom::FirstOffset => InitMode::Min,
                _ => InitMode::Max,
            },
            order: orderly,
            // Orderly: checked after a failed call (Java `checkReconsumeTimes`).
            dlq_after: (!orderly).then(|| cfg.effective_max_reconsume_times()),
            namespace: inner.core.namespace(),
        };
        let delays = PopDelays {
            interval: cfg.pull_interval,
            exception: cfg.pull_delay_when_exception,
            broker_flow_control: cfg.pull_delay_when_broker_flow_control,
        };
        match self
            .cursor
            .step(instance, &query, delays, &self.cancel)
            .await
        {
            PopStep::Found { popped, after } => {
                self.hidden_until = None;
                self.dispatch(popped).await;
                after
            }
            PopStep::Empty | PopStep::Cancelled => Duration::ZERO,
            PopStep::Retry { after, .. } => after,
        }
    }

    /// Gives popped messages to the settler (which splits them into
    /// listener calls). Orderly: consumes them before answering.
    async fn dispatch(&mut self, batch: Vec<Popped>) {
        if let Some(orderly) = &self.orderly {
            self.held
                .add(batch.len(), body_bytes(batch.iter().map(|p| &p.msg)));
            let hidden = orderly.consume(&self.mq, batch).await;
            self.held.clear();
            self.hidden_until = hidden.map(|d| tokio::time::Instant::now() + d);
            return;
        }
        self.settler.submit(&self.mq, &self.held, batch);
    }
}
