//! Queue locks of orderly consumers (Java `RebalanceLockManager`): one
//! client per (group, queue), a lease renewed by every lock request and
//! lost after the lease time (60 s by default) without one.

use std::collections::{BTreeSet, HashMap};

use rmq_protocol::MessageQueue;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockEntry {
    pub(crate) client_id: String,
    pub(crate) last_update_ms: i64,
}

#[derive(Debug, Default)]
pub(crate) struct Locks {
    table: HashMap<String, HashMap<MessageQueue, LockEntry>>,
}

impl Locks {
    fn expired(entry: &LockEntry, now_ms: i64, lease_ms: i64) -> bool {
        now_ms.saturating_sub(entry.last_update_ms) > lease_ms
    }

    /// Java `tryLockBatch`: the queues now locked by `client_id` (locked
    /// anew, renewed, or taken over after expiry).
    pub(crate) fn try_lock_batch(
        &mut self,
        group: &str,
        mqs: &BTreeSet<MessageQueue>,
        client_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> BTreeSet<MessageQueue> {
        let entries = self.table.entry(group.to_owned()).or_default();
        let mut locked = BTreeSet::new();
        for mq in mqs {
            let entry = entries.entry(mq.clone()).or_insert_with(|| LockEntry {
                client_id: client_id.to_owned(),
                last_update_ms: now_ms,
            });
            let mine = entry.client_id == client_id;
            if mine || Self::expired(entry, now_ms, lease_ms) {
                // Renewing an expired lock of one's own counts, as in Java:
                // `isLocked` fails, then the expired entry is taken.
                entry.client_id = client_id.to_owned();
                entry.last_update_ms = now_ms;
                locked.insert(mq.clone());
            }
        }
        locked
    }

    /// Java `unlockBatch`: releases the queues `client_id` holds.
    pub(crate) fn unlock_batch(
        &mut self,
        group: &str,
        mqs: &BTreeSet<MessageQueue>,
        client_id: &str,
    ) {
        if let Some(entries) = self.table.get_mut(group) {
            for mq in mqs {
                if entries.get(mq).is_some_and(|e| e.client_id == client_id) {
                    entries.remove(mq);
                }
            }
        }
    }

    /// Java `isLockAllExpired`: no unexpired lock in the group.
    pub(crate) fn all_expired(&self, group: &str, now_ms: i64, lease_ms: i64) -> bool {
        self.table
            .get(group)
            .is_none_or(|entries| entries.values().all(|e| Self::expired(e, now_ms, lease_ms)))
    }

    /// The holder of a queue's unexpired lock.
    pub(crate) fn holder(
        &self,
        group: &str,
        mq: &MessageQueue,
        now_ms: i64,
        lease_ms: i64,
    ) -> Option<String> {
        let entry = self.table.get(group)?.get(mq)?;
        (!Self::expired(entry, now_ms, lease_ms)).then(|| entry.client_id.clone())
    }

    /// Forgets every lock (a broker restart).
    pub(crate) fn clear(&mut self) {
        self.table.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qs(ids: &[i32]) -> BTreeSet<MessageQueue> {
        ids.iter()
            .map(|i| MessageQueue::new("T", "b", *i))
            .collect()
    }

    #[test]
    fn one_holder_per_queue_until_the_lease_ends() {
        let mut l = Locks::default();
        assert_eq!(
            l.try_lock_batch("G", &qs(&[0, 1]), "A", 0, 60_000),
            qs(&[0, 1])
        );
        assert_eq!(
            l.try_lock_batch("G", &qs(&[1, 2]), "B", 1_000, 60_000),
            qs(&[2])
        );
        assert!(!l.all_expired("G", 1_000, 60_000));
        // A renews queue 0 only; queue 1 expires and B takes it.
        assert_eq!(
            l.try_lock_batch("G", &qs(&[0]), "A", 50_000, 60_000),
            qs(&[0])
        );
        assert_eq!(
            l.try_lock_batch("G", &qs(&[1]), "B", 60_001, 60_000),
            qs(&[1])
        );
        assert_eq!(
            l.holder("G", &MessageQueue::new("T", "b", 0), 60_001, 60_000)
                .as_deref(),
            Some("A")
        );
        l.unlock_batch("G", &qs(&[0, 1]), "A");
        assert_eq!(
            l.holder("G", &MessageQueue::new("T", "b", 0), 60_001, 60_000),
            None
        );
        assert_eq!(
            l.holder("G", &MessageQueue::new("T", "b", 1), 60_001, 60_000)
                .as_deref(),
            Some("B")
        );
        assert!(l.all_expired("G", 500_000, 60_000));
        assert!(l.all_expired("other", 0, 60_000));
    }
}
