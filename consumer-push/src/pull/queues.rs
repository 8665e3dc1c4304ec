//! [`QueueTable`]: the queues a push consumer holds — each one's process
//! queue and pull-loop token — plus the restart offsets recorded for queues
//! being recreated and the orderly consume locks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmq_protocol::MessageQueue;
use tokio_util::sync::CancellationToken;

use crate::pull::process_queue::ProcessQueue;

/// One assigned queue: its process queue and its pull loop's token.
#[derive(Debug)]
pub(crate) struct Assigned {
    pub(crate) pq: Arc<ProcessQueue>,
    pub(crate) cancel: CancellationToken,
}

/// The assigned queues. Lock order: `queues` → a process queue's lock →
/// the offset store's lock; `pending` and `consume_locks` are leaves. No
/// lock is held across `.await`.
#[derive(Debug, Default)]
pub(crate) struct QueueTable {
    queues: Mutex<HashMap<MessageQueue, Assigned>>,
    /// Start offsets decided outside the rebalance (OFFSET_MOVED, offset
    /// reset), used when the queue is (re)created.
    pending: Mutex<HashMap<MessageQueue, i64>>,
    /// Orderly: one async mutex per queue, held by a listener call and its
    /// settlement (Java `MessageQueueLock`); outlives process queues, so a
    /// queue dropped and re-added never runs two calls at once.
    consume_locks: Mutex<HashMap<MessageQueue, Arc<tokio::sync::Mutex<()>>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the maps consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl QueueTable {
    /// How many queues are assigned.
    pub(crate) fn len(&self) -> usize {
        lock(&self.queues).len()
    }

    /// Whether `mq` is assigned now.
    pub(crate) fn contains(&self, mq: &MessageQueue) -> bool {
        lock(&self.queues).contains_key(mq)
    }

    /// Assigned queues, of one topic or all, sorted.
    pub(crate) fn assigned(&self, topic: Option<&str>) -> Vec<MessageQueue> {
        let mut v: Vec<MessageQueue> = lock(&self.queues)
            .keys()
            .filter(|mq| topic.is_none_or(|t| mq.topic == t))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Process queues of `topic` (or all) with their queue, sorted.
    pub(crate) fn process_queues(
        &self,
        topic: Option<&str>,
    ) -> Vec<(MessageQueue, Arc<ProcessQueue>)> {
        let mut v: Vec<_> = lock(&self.queues)
            .iter()
            .filter(|(mq, _)| topic.is_none_or(|t| mq.topic == t))
            .map(|(mq, a)| (mq.clone(), a.pq.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Adds an assigned queue. Returns `false` (and adds nothing) when it
    /// is already held.
    pub(crate) fn insert(&self, mq: MessageQueue, assigned: Assigned) -> bool {
        let mut queues = lock(&self.queues);
        if queues.contains_key(&mq) {
            return false;
        }
        queues.insert(mq, assigned);
        true
    }

    /// Removes `mq` and cancels its token (pull loop, orderly consume loop)
    /// without marking it dropped: the orderly removal lets the call in
    /// flight settle first.
    pub(crate) fn take(&self, mq: &MessageQueue) -> Option<Arc<ProcessQueue>> {
        let assigned = lock(&self.queues).remove(mq)?;
        assigned.cancel.cancel();
        Some(assigned.pq)
    }

    /// Removes `mq` — only if it still holds `pq` when given — stops its
    /// pull loop and marks it dropped. Returns the removed process queue.
    pub(crate) fn detach(
        &self,
        mq: &MessageQueue,
        only: Option<&Arc<ProcessQueue>>,
    ) -> Option<Arc<ProcessQueue>> {
        let assigned = {
            let mut queues = lock(&self.queues);
            match (queues.get(mq), only) {
                (Some(a), Some(pq)) if !Arc::ptr_eq(&a.pq, pq) => return None,
                (None, _) => return None,
                _ => {}
            }
            queues.remove(mq)?
        };
        assigned.cancel.cancel();
        assigned.pq.set_dropped();
        assigned.pq.metrics.set_gauges(0, 0, 0);
        Some(assigned.pq)
    }

    /// Records the offset a queue must restart from when it is recreated.
    pub(crate) fn set_pending_offset(&self, mq: MessageQueue, offset: i64) {
        lock(&self.pending).insert(mq, offset);
    }

    /// Takes the recorded restart offset of `mq`.
    pub(crate) fn take_pending_offset(&self, mq: &MessageQueue) -> Option<i64> {
        lock(&self.pending).remove(mq)
    }

    /// Forgets recorded restart offsets of `topic` except for `keep`.
    pub(crate) fn retain_pending(&self, topic: &str, keep: &[MessageQueue]) {
        lock(&self.pending).retain(|mq, _| mq.topic != topic || keep.contains(mq));
    }

    /// The orderly consume lock of `mq` (created on first use).
    pub(crate) fn consume_lock(&self, mq: &MessageQueue) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.consume_locks)
            .entry(mq.clone())
            .or_default()
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn assigned() -> (Assigned, Arc<ProcessQueue>) {
        let pq = Arc::new(ProcessQueue::new(Instant::now()));
        let a = Assigned {
            pq: pq.clone(),
            cancel: CancellationToken::new(),
        };
        (a, pq)
    }

    #[test]
    fn insert_detach_take() {
        let t = QueueTable::default();
        let a = MessageQueue::new("A", "b", 0);
        let b = MessageQueue::new("B", "b", 0);
        let (first, pq_a) = assigned();
        assert!(t.insert(a.clone(), first));
        assert!(!t.insert(a.clone(), assigned().0), "already held");
        assert!(t.insert(b.clone(), assigned().0));
        assert_eq!(t.assigned(Some("A")), std::slice::from_ref(&a));
        assert_eq!(t.len(), 2);
        // Only the process queue given is detached.
        let other = Arc::new(ProcessQueue::new(Instant::now()));
        assert!(t.detach(&a, Some(&other)).is_none());
        let detached = t.detach(&a, Some(&pq_a)).unwrap();
        assert!(detached.is_dropped());
        assert!(!t.contains(&a));
        let taken = t.take(&b).unwrap();
        assert!(!taken.is_dropped(), "take leaves it to the caller");
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn pending_offsets_and_consume_locks() {
        let t = QueueTable::default();
        let a0 = MessageQueue::new("A", "b", 0);
        let a1 = MessageQueue::new("A", "b", 1);
        t.set_pending_offset(a0.clone(), 5);
        t.set_pending_offset(a1.clone(), 6);
        t.retain_pending("A", std::slice::from_ref(&a1));
        assert_eq!(t.take_pending_offset(&a0), None);
        assert_eq!(t.take_pending_offset(&a1), Some(6));
        assert!(Arc::ptr_eq(&t.consume_lock(&a0), &t.consume_lock(&a0)));
    }
}
