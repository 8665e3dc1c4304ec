//! One assignment's receive loop (Java `ProcessQueueImpl.receiveMessage`):
//! long-polls `ReceiveMessage` (the engine's [`receive`](engine::receive):
//! auto-renew, the loop's attempt id) while the messages in hand stay
//! under the flow-control thresholds, and hands every batch to the consume
//! service without waiting for it.

use std::sync::Arc;
use std::time::Duration;

use rmq_consumer_base::engine::grpc::{
    self as engine, AttemptId, Hiding, Next, Pauses, ReceiveSpec,
};
use rmq_grpc::proto;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, warn};

use super::policy::{receive_batch, room};
use super::queue::QueueState;
use super::state::GrpcInner;

/// Logs one flow-control warning every this many pauses.
const FLOW_CONTROL_LOG_EVERY: u64 = 1000;

/// The receive loop of one assignment.
pub(super) struct ReceiveLoop {
    inner: Arc<GrpcInner>,
    state: Arc<QueueState>,
    /// The assignment's queue, as the proxy named it.
    queue: proto::MessageQueue,
    filter: proto::FilterExpression,
    cancel: CancellationToken,
    attempt: AttemptId,
    pauses: Pauses,
    flow_controlled: u64,
}

impl ReceiveLoop {
    /// Spawns the loop of `state`'s assignment (`queue`), receiving what
    /// `filter` lets through, until `cancel`.
    pub(super) fn spawn(
        inner: &Arc<GrpcInner>,
        state: Arc<QueueState>,
        queue: proto::MessageQueue,
        filter: proto::FilterExpression,
        cancel: CancellationToken,
    ) {
        let span = rmq_consumer_base::queue_span(&state.mq);
        let cfg = &inner.config;
        let pauses = Pauses {
            empty_at_once: cfg.pull_delay_when_flow_control,
            throttled: cfg.pull_delay_when_broker_flow_control,
            failed: cfg.pull_delay_when_exception,
            delivered: cfg.pull_interval,
        };
        let mut this = ReceiveLoop {
            inner: inner.clone(),
            state,
            queue,
            filter,
            cancel,
            attempt: AttemptId::new(),
            pauses,
            flow_controlled: 0,
        };
        inner
            .tasks
            .spawn(async move { this.run().await }.instrument(span));
    }

    /// Receives until the assignment's token is cancelled. A receive in
    /// flight then still finishes and its messages are consumed (Java):
    /// the proxy would otherwise keep what it popped for it with this
    /// client; only shutdown drops it (the session's end gives those
    /// messages back).
    async fn run(&mut self) {
        let cancel = self.cancel.clone();
        let shutdown = self.inner.stop_receive.clone();
        while !cancel.is_cancelled() {
            let next = tokio::select! {
                next = self.once() => next,
                () = shutdown.cancelled() => break,
            };
            let pause = match next {
                Next::After(pause) => pause,
                Next::Stop => break,
            };
            if pause > Duration::ZERO {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = cancel.cancelled() => break,
                }
            }
        }
        self.state.set_dropped();
        debug!("receive loop stopped");
    }

    /// One receive; answers what comes next.
    async fn once(&mut self) -> Next {
        let inner = self.inner.clone();
        let cfg = &inner.config;
        let room = match room(
            self.state.count(),
            self.state.bytes(),
            cfg.pull_threshold_for_queue,
            cfg.pull_threshold_size_for_queue_mib,
        ) {
            Ok(room) => room,
            Err(reason) => {
                self.state.metrics.flow_controlled(reason);
                self.flow_controlled = self.flow_controlled.wrapping_add(1);
                if self.flow_controlled % FLOW_CONTROL_LOG_EVERY == 1 {
                    warn!(
                        reason,
                        times = self.flow_controlled,
                        count = self.state.count(),
                        bytes = self.state.bytes(),
                        "flow control: the assignment holds too much; receiving paused"
                    );
                }
                return Next::After(cfg.pull_delay_when_flow_control);
            }
        };
        let settings = inner.proxy_settings();
        let spec = ReceiveSpec {
            queue: &self.queue,
            filter: &self.filter,
            batch: receive_batch(room, cfg.pull_batch_size(), settings.receive_batch_size),
            hiding: Hiding::AutoRenew,
            wait: settings.long_polling(cfg.suspend_timeout),
        };
        self.state.touch_receive();
        let received =
            engine::receive(&inner.session, inner.group(), spec, Some(&mut self.attempt)).await;
        let next = self.pauses.next(&received);
        if let Ok(batch) = received {
            let items = batch.messages;
            self.state.metrics.pulled(batch.took, items.len(), -1);
            if !items.is_empty() {
                let bytes = items.iter().map(|r| r.msg.body.len()).sum();
                self.state.hold(items.len(), bytes);
                inner.service.dispatch(&inner, &self.state, items);
            }
        }
        next
    }
}
