//! One assignment's receive loop (Java `ProcessQueueImpl.receiveMessage`)
//! and what it holds ([`QueueState`]): long-polls `ReceiveMessage` while
//! the messages in hand stay under the flow-control thresholds, and hands
//! every batch to the consume service without waiting for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmq_grpc::{Receipt, proto};
use rmq_protocol::{MessageExt, MessageQueue};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, warn};

use super::GrpcInner;
use super::policy::{receive_batch, room};
use crate::in_hand::InHand;
use crate::inspect::QueueSnapshot;
use crate::telemetry::QueueMetrics;

/// Logs one flow-control warning every this many pauses.
const FLOW_CONTROL_LOG_EVERY: u64 = 1000;

/// An empty receive answered faster than this did not long-poll: the
/// next one waits a little.
const EMPTY_AT_ONCE: Duration = Duration::from_millis(20);

/// Numbers the receive attempts of the process: an attempt id must not be
/// another loop's (the broker answers a repeated id of a FIFO queue with
/// the messages it popped for it).
static ATTEMPTS: AtomicU64 = AtomicU64::new(0);

/// A received message and what settles it.
pub(crate) struct Received {
    pub(crate) msg: MessageExt,
    pub(crate) receipt: Receipt,
}

/// One assignment: its queue, the messages it holds (received, not settled
/// yet) and its figures.
#[derive(Debug)]
pub(crate) struct QueueState {
    /// The assigned queue (queue id −1: every queue of the broker).
    pub(crate) mq: MessageQueue,
    pub(crate) metrics: QueueMetrics,
    in_hand: InHand,
    in_flight: AtomicUsize,
    dropped: AtomicBool,
    born: Instant,
    /// Milliseconds after `born` of the last receive / listener call.
    last_receive_ms: AtomicU64,
    last_call_ms: AtomicU64,
}

impl QueueState {
    pub(crate) fn new(mq: MessageQueue, metrics: QueueMetrics) -> Self {
        QueueState {
            mq,
            metrics,
            in_hand: InHand::default(),
            in_flight: AtomicUsize::new(0),
            dropped: AtomicBool::new(false),
            born: Instant::now(),
            last_receive_ms: AtomicU64::new(0),
            last_call_ms: AtomicU64::new(0),
        }
    }

    /// Messages held.
    pub(crate) fn count(&self) -> usize {
        self.in_hand.count()
    }

    /// Their body bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.in_hand.bytes()
    }

    fn hold(&self, n: usize, bytes: usize) {
        self.in_hand.add(n, bytes);
    }

    /// `n` messages of `bytes` body bytes are settled (or given up).
    pub(crate) fn release(&self, n: usize, bytes: usize) {
        self.in_hand.remove(n, bytes);
    }

    /// Releases `items` unsettled (the proxy gives them back to the group
    /// once the session ends or the proxy stops renewing them).
    pub(crate) fn release_all<'a>(&self, items: impl IntoIterator<Item = &'a MessageExt>) {
        let (n, bytes) = items
            .into_iter()
            .fold((0, 0), |(n, b), m| (n + 1, b + m.body.len()));
        self.release(n, bytes);
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn touch_receive(&self) {
        self.last_receive_ms
            .store(self.elapsed_ms(), Ordering::Relaxed);
    }

    /// A listener call of this assignment starts.
    pub(crate) fn call_started(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.last_call_ms
            .store(self.elapsed_ms(), Ordering::Relaxed);
    }

    /// A listener call of this assignment ended.
    pub(crate) fn call_ended(&self) {
        let _ = self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                Some(c.saturating_sub(1))
            });
    }

    pub(crate) fn set_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
    }

    /// What `inspect` shows of it.
    pub(crate) fn snapshot(&self, now: Instant) -> QueueSnapshot {
        let since = |ms: &AtomicU64| {
            let at = self.born + Duration::from_millis(ms.load(Ordering::Relaxed));
            now.saturating_duration_since(at)
        };
        QueueSnapshot::received(
            self.mq.clone(),
            self.count(),
            self.bytes(),
            self.in_flight.load(Ordering::Acquire),
            self.dropped.load(Ordering::Acquire),
            since(&self.last_receive_ms),
            since(&self.last_call_ms),
        )
    }
}

/// The receive loop of one assignment.
pub(crate) struct ReceiveLoop {
    inner: Arc<GrpcInner>,
    state: Arc<QueueState>,
    /// The assignment's queue, as the proxy named it.
    queue: proto::MessageQueue,
    broker: String,
    filter: proto::FilterExpression,
    cancel: CancellationToken,
    /// The attempt id of a receive that brought nothing (or failed), sent
    /// again (Java): the proxy answers a repeated attempt with what it
    /// popped for it.
    attempt_id: Option<String>,
    flow_controlled: u64,
}

impl ReceiveLoop {
    /// Spawns the loop of `state`'s assignment (`queue`), receiving what
    /// `filter` lets through, until `cancel`.
    pub(crate) fn spawn(
        inner: &Arc<GrpcInner>,
        state: Arc<QueueState>,
        queue: proto::MessageQueue,
        filter: proto::FilterExpression,
        cancel: CancellationToken,
    ) {
        let span = rmq_consumer_base::queue_span(&state.mq);
        let mut this = ReceiveLoop {
            inner: inner.clone(),
            broker: state.mq.broker_name.clone(),
            state,
            queue,
            filter,
            cancel,
            attempt_id: None,
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
            let pause = tokio::select! {
                pause = self.once() => pause,
                () = shutdown.cancelled() => break,
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

    /// One receive; answers the pause before the next.
    async fn once(&mut self) -> Duration {
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
                return cfg.pull_delay_when_flow_control;
            }
        };
        let settings = inner.proxy_settings();
        let client_id = inner.session.client_id();
        let attempt_id = self
            .attempt_id
            .get_or_insert_with(|| {
                let n = ATTEMPTS.fetch_add(1, Ordering::Relaxed);
                format!("{client_id}-{n:x}")
            })
            .clone();
        let request = proto::ReceiveMessageRequest {
            group: Some(rmq_grpc::resource("", inner.group())),
            message_queue: Some(self.queue.clone()),
            filter_expression: Some(self.filter.clone()),
            batch_size: receive_batch(room, cfg.pull_batch_size(), settings.receive_batch_size),
            invisible_duration: None,
            auto_renew: true,
            long_polling_timeout: None,
            attempt_id: Some(attempt_id),
        };
        self.state.touch_receive();
        let started = Instant::now();
        let received = inner
            .session
            .receive_message(request, settings.long_polling(cfg.suspend_timeout))
            .await;
        match received {
            Ok(messages) => {
                let took = started.elapsed();
                if messages.is_empty() {
                    self.state.metrics.pulled(took, 0, -1);
                    // A long poll answered at once with nothing: no tight loop.
                    return if took < EMPTY_AT_ONCE {
                        cfg.pull_delay_when_flow_control
                    } else {
                        Duration::ZERO
                    };
                }
                // Delivered: the next receive is a new attempt.
                self.attempt_id = None;
                let items = self.map(messages);
                self.state.metrics.pulled(took, items.len(), -1);
                if items.is_empty() {
                    return Duration::ZERO;
                }
                let bytes = items.iter().map(|r| r.msg.body.len()).sum();
                self.state.hold(items.len(), bytes);
                if inner.fifo {
                    super::fifo::dispatch(&inner, &self.state, items);
                } else {
                    super::consume::dispatch(&inner, &self.state, items);
                }
                cfg.pull_interval
            }
            Err(rmq_grpc::Error::Shutdown) => {
                self.cancel.cancel();
                Duration::ZERO
            }
            Err(e) => {
                let too_many = e.proxy_code() == Some(proto::Code::TooManyRequests);
                if too_many {
                    debug!(error = %rmq_protocol::ErrorChain(&e), "the proxy asks to receive less often");
                    cfg.pull_delay_when_broker_flow_control
                } else {
                    warn!(error = %rmq_protocol::ErrorChain(&e), "receive failed; trying again");
                    cfg.pull_delay_when_exception
                }
            }
        }
    }

    /// The received messages as [`Received`]; one the mapping refuses is
    /// logged and left to the proxy (delivered again later).
    fn map(&self, messages: Vec<proto::Message>) -> Vec<Received> {
        let mut out = Vec::with_capacity(messages.len());
        for m in messages {
            match rmq_grpc::message_ext(m, &self.broker) {
                Ok((msg, receipt)) => out.push(Received { msg, receipt }),
                Err(e) => {
                    warn!(error = %rmq_protocol::ErrorChain(&e), "a received message cannot be read; left to the proxy")
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::Message;

    use super::*;

    fn msg(body: &'static [u8]) -> MessageExt {
        MessageExt {
            message: Message::new("T", body),
            ..MessageExt::default()
        }
    }

    #[test]
    fn held_messages_are_counted_until_settled() {
        let q = QueueState::new(MessageQueue::new("T", "b", -1), QueueMetrics::noop());
        q.hold(3, 30);
        assert_eq!((q.count(), q.bytes()), (3, 30));
        q.release(1, 10);
        assert_eq!((q.count(), q.bytes()), (2, 20));
        let given_back = [msg(b"0123456789"), msg(b"abcde")];
        q.release_all(&given_back);
        assert_eq!((q.count(), q.bytes()), (0, 5));
        q.release(5, 100);
        assert_eq!((q.count(), q.bytes()), (0, 0), "never below zero");

        q.call_started();
        let s = q.snapshot(Instant::now());
        assert_eq!(s.in_flight, 1);
        assert_eq!((s.committed_offset, s.locked), (None, None));
        assert!(!s.dropped);
        q.call_ended();
        q.call_ended();
        q.set_dropped();
        let s = q.snapshot(Instant::now());
        assert_eq!(s.in_flight, 0);
        assert!(s.dropped);
    }
}
