//! [`QueueSnapshot`]: what [`PushConsumer::inspect`](crate::PushConsumer::inspect)
//! reports per assigned queue (for tests, metrics and debugging).

use std::time::Duration;

use rmq_protocol::MessageQueue;

use crate::pull::process_queue::PqView;

/// One assigned queue at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueSnapshot {
    /// The queue.
    pub queue: MessageQueue,
    /// Smallest queue offset held (pulled, not yet done), if any.
    pub min_offset: Option<i64>,
    /// Largest queue offset held, if any.
    pub max_offset: Option<i64>,
    /// Messages held (pulled, not consumed nor sent back yet).
    pub count: usize,
    /// Sum of the held messages' body lengths.
    pub bytes: usize,
    /// Listener calls of this queue running now.
    pub in_flight: usize,
    /// The committed consume offset in memory (what the next persist writes):
    /// the next offset to consume. `None` before the first commit.
    pub committed_offset: Option<i64>,
    /// The offset the queue's pull loop pulls next.
    pub next_pull_offset: Option<i64>,
    /// Whether the queue is dropped (being removed).
    pub dropped: bool,
    /// Time since the pull loop last pulled (or checked flow control).
    pub since_last_pull: Duration,
    /// Time since a listener call of this queue last started.
    pub since_last_consume: Duration,
    /// Orderly clustering consumers: whether the queue's broker lock is
    /// held and confirmed within the lock lease (the queue is consumed only
    /// then). `None` for other consumers.
    pub locked: Option<bool>,
}

impl QueueSnapshot {
    pub(crate) fn new(
        queue: MessageQueue,
        view: PqView,
        committed_offset: Option<i64>,
        locked: Option<bool>,
    ) -> Self {
        QueueSnapshot {
            queue,
            min_offset: view.min_offset,
            max_offset: view.max_offset,
            count: view.count,
            bytes: view.bytes,
            in_flight: view.in_flight,
            committed_offset,
            next_pull_offset: view.next_pull_offset,
            dropped: view.dropped,
            since_last_pull: view.since_last_pull,
            since_last_consume: view.since_last_consume,
            locked,
        }
    }

    /// An assignment of a consumer of the proxy: no offsets, no lock.
    pub(crate) fn received(
        queue: MessageQueue,
        count: usize,
        bytes: usize,
        in_flight: usize,
        dropped: bool,
        since_last_pull: Duration,
        since_last_consume: Duration,
    ) -> Self {
        QueueSnapshot {
            queue,
            min_offset: None,
            max_offset: None,
            count,
            bytes,
            in_flight,
            committed_offset: None,
            next_pull_offset: None,
            dropped,
            since_last_pull,
            since_last_consume,
            locked: None,
        }
    }
}
