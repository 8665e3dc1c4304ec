//! The in-memory offset table shared by both stores (Java's
//! `ConcurrentMap<MessageQueue, ControllableOffset>`).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmq_protocol::MessageQueue;

/// One queue's offset and whether it is frozen (Java `ControllableOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    offset: i64,
    frozen: bool,
}

/// The offsets by queue (a per-process seeded fast hash: looked up on every
/// listener call).
type Offsets = HashMap<MessageQueue, Entry, foldhash::fast::RandomState>;

/// The in-memory half of an offset store: queue → next offset to consume,
/// with the Java semantics (increase-only updates, frozen offsets), under
/// one std mutex held only for map operations (never across an `.await`,
/// never while doing I/O). Both built-in stores use it; a store of one's own
/// (see [`OffsetStore`](crate::OffsetStore)) can too, and only add the
/// backing storage.
#[derive(Debug, Default)]
pub struct OffsetTable {
    map: Mutex<Offsets>,
}

impl OffsetTable {
    fn lock(&self) -> MutexGuard<'_, Offsets> {
        // Every critical section leaves the map consistent, so a poisoned
        // lock (a panic elsewhere while holding it) is safe to reuse.
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Java `updateOffset`: inserts when absent; otherwise sets (or raises,
    /// with `increase_only`) unless frozen.
    pub fn update(&self, mq: &MessageQueue, offset: i64, increase_only: bool) {
        let mut map = self.lock();
        match map.get_mut(mq) {
            Some(entry) if entry.frozen => {}
            Some(entry) => {
                entry.offset = if increase_only {
                    entry.offset.max(offset)
                } else {
                    offset
                };
            }
            None => {
                map.insert(
                    mq.clone(),
                    Entry {
                        offset,
                        frozen: false,
                    },
                );
            }
        }
    }

    /// Java `updateAndFreezeOffset`: sets and freezes, frozen or not.
    pub fn update_and_freeze(&self, mq: &MessageQueue, offset: i64) {
        self.lock().insert(
            mq.clone(),
            Entry {
                offset,
                frozen: true,
            },
        );
    }

    /// Replaces the entry (not frozen), frozen or not: what loading a file
    /// does (Java `offsetTable.put`).
    pub fn put(&self, mq: MessageQueue, offset: i64) {
        self.lock().insert(
            mq,
            Entry {
                offset,
                frozen: false,
            },
        );
    }

    /// The offset of `mq`, if any.
    pub fn get(&self, mq: &MessageQueue) -> Option<i64> {
        self.lock().get(mq).map(|e| e.offset)
    }

    /// Forgets `mq` (and its frozen flag); returns its offset.
    pub fn remove(&self, mq: &MessageQueue) -> Option<i64> {
        self.lock().remove(mq).map(|e| e.offset)
    }

    /// A copy of the offsets, of one topic or (`None`) of all.
    pub fn snapshot(&self, topic: Option<&str>) -> HashMap<MessageQueue, i64> {
        self.lock()
            .iter()
            .filter(|(mq, _)| topic.is_none_or(|t| mq.topic == t))
            .map(|(mq, e)| (mq.clone(), e.offset))
            .collect()
    }

    /// The offsets of the queues in `held` (sorted by queue), without
    /// changing the table.
    pub fn offsets_of(&self, held: &HashSet<&MessageQueue>) -> Vec<(MessageQueue, i64)> {
        let mut out: Vec<(MessageQueue, i64)> = self
            .lock()
            .iter()
            .filter(|(mq, _)| held.contains(mq))
            .map(|(mq, e)| (mq.clone(), e.offset))
            .collect();
        out.sort();
        out
    }

    /// Like [`offsets_of`](Self::offsets_of), and removes every entry of a
    /// queue not in `held`; returns (kept offsets, removed queues), both
    /// sorted.
    pub fn retain_held(
        &self,
        held: &HashSet<&MessageQueue>,
    ) -> (Vec<(MessageQueue, i64)>, Vec<MessageQueue>) {
        let mut kept = Vec::new();
        let mut removed = Vec::new();
        self.lock().retain(|mq, e| {
            if held.contains(mq) {
                kept.push((mq.clone(), e.offset));
                true
            } else {
                removed.push(mq.clone());
                false
            }
        });
        kept.sort();
        removed.sort();
        (kept, removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(id: i32) -> MessageQueue {
        MessageQueue::new("T", "broker-a", id)
    }

    #[test]
    fn update_inserts_then_sets_or_raises() {
        let t = OffsetTable::default();
        t.update(&mq(0), 10, true);
        assert_eq!(t.get(&mq(0)), Some(10));
        t.update(&mq(0), 5, true);
        assert_eq!(
            t.get(&mq(0)),
            Some(10),
            "increase-only ignores a smaller value"
        );
        t.update(&mq(0), 12, true);
        assert_eq!(t.get(&mq(0)), Some(12));
        t.update(&mq(0), 3, false);
        assert_eq!(t.get(&mq(0)), Some(3), "a plain update may go back");
        t.update(&mq(1), 7, false);
        assert_eq!(t.get(&mq(1)), Some(7));
    }

    #[test]
    fn frozen_offsets_ignore_updates_until_removed() {
        let t = OffsetTable::default();
        t.update(&mq(0), 10, false);
        t.update_and_freeze(&mq(0), 4);
        t.update(&mq(0), 20, false);
        t.update(&mq(0), 30, true);
        assert_eq!(t.get(&mq(0)), Some(4));
        t.update_and_freeze(&mq(0), 6);
        assert_eq!(t.get(&mq(0)), Some(6), "freezing again sets the value");
        assert_eq!(t.remove(&mq(0)), Some(6));
        t.update(&mq(0), 1, true);
        assert_eq!(t.get(&mq(0)), Some(1), "removal clears the frozen flag");
    }

    #[test]
    fn snapshot_filters_by_topic() {
        let t = OffsetTable::default();
        t.update(&mq(0), 1, false);
        t.update(&MessageQueue::new("U", "broker-a", 0), 2, false);
        assert_eq!(t.snapshot(None).len(), 2);
        let only_t = t.snapshot(Some("T"));
        assert_eq!(only_t, HashMap::from([(mq(0), 1)]));
        assert!(t.snapshot(Some("V")).is_empty());
    }

    #[test]
    fn retain_held_drops_the_rest() {
        let t = OffsetTable::default();
        for id in 0..4 {
            t.update(&mq(id), i64::from(id) * 10, false);
        }
        let held_queues = [mq(1), mq(3), mq(9)];
        let held: HashSet<&MessageQueue> = held_queues.iter().collect();
        assert_eq!(t.offsets_of(&held), vec![(mq(1), 10), (mq(3), 30)]);
        let (kept, removed) = t.retain_held(&held);
        assert_eq!(kept, vec![(mq(1), 10), (mq(3), 30)]);
        assert_eq!(removed, vec![mq(0), mq(2)]);
        assert_eq!(t.snapshot(None).len(), 2);
    }
}
