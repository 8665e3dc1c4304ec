//! One assignment as its receive loop and listener calls share it
//! ([`QueueState`]: the messages it holds, received and not settled yet,
//! and its figures), and the ack of a consumed message ([`Ack`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmq_consumer_base::engine::grpc::{Handle, Settled};
use rmq_grpc::Receipt;
use rmq_protocol::{MessageExt, MessageQueue};

use crate::in_hand::InHand;
use crate::inspect::QueueSnapshot;
use crate::telemetry::QueueMetrics;

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

    pub(super) fn hold(&self, n: usize, bytes: usize) {
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

    pub(super) fn touch_receive(&self) {
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

/// A consumed message to ack; it leaves its assignment's count once
/// settled, taken or not.
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

impl Handle for Ack {
    fn topic(&self) -> &str {
        &self.queue.mq.topic
    }

    fn message_id(&self) -> &str {
        &self.msg_id
    }

    fn receipt_handle(&self) -> &str {
        &self.handle
    }
}

impl Settled for Ack {
    fn settled(self, acked: bool) {
        self.queue.metrics.acked(acked);
        self.queue.release(1, self.bytes);
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

    #[test]
    fn an_ack_names_its_assignment_and_leaves_its_count_once_settled() {
        let q = Arc::new(QueueState::new(
            MessageQueue::new("T", "b", -1),
            QueueMetrics::noop(),
        ));
        q.hold(2, 15);
        let mut m = msg(b"0123456789");
        m.msg_id = "ID".into();
        let receipt = Receipt {
            receipt_handle: "RH".into(),
            delivery_attempt: 1,
        };
        let ack = Ack::new(&q, m, receipt);
        assert_eq!(
            (ack.topic(), ack.message_id(), ack.receipt_handle()),
            ("T", "ID", "RH")
        );
        ack.settled(false);
        assert_eq!((q.count(), q.bytes()), (1, 5));
    }
}
