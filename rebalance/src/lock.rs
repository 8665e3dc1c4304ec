//! Broker-side queue locks for orderly consumption (Java
//! `RebalanceImpl.lock` / `lockAll` / `unlock` / `unlockAll` and the
//! `locked` / `lastLockTimestamp` fields of `ProcessQueue`).
//!
//! An orderly consumer of a clustering group consumes a queue only while
//! the queue's broker says the queue is locked by this client
//! (LOCK_BATCH_MQ). The broker keeps a lock for 60 s
//! ([`BROKER_LOCK_LEASE`]) unless it is renewed; the client renews every
//! lock it holds every 20 s ([`DEFAULT_LOCK_RENEW_INTERVAL`]) and treats a
//! lock not confirmed for 30 s ([`DEFAULT_LOCK_LEASE`]) as expired, well
//! before the broker would hand the queue to another member.
//!
//! [`QueueLocks`] keeps the local side: which queues are *tracked* (locked
//! once by [`lock`](QueueLocks::lock) and not unlocked since), whether the
//! broker's last answer listed each, and when that was. It owns no task:
//! the consumer calls [`renew_all`](QueueLocks::renew_all) on its own
//! timer.
//!
//! ```no_run
//! use rmq_client_core::{ClientConfig, ClientInstance};
//! use rmq_protocol::MessageQueue;
//! use rmq_rebalance::QueueLocks;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let instance = ClientInstance::get_or_start(ClientConfig::builder().build()?)?;
//! let locks = QueueLocks::new(instance, "orders-consumer");
//! let mq = MessageQueue::new("orders", "broker-a", 0);
//! let granted = locks.lock(std::slice::from_ref(&mq)).await; // LOCK_BATCH_MQ
//! if granted.contains(&mq) {
//!     // pull and consume mq while locks.is_locked_and_fresh(&mq)
//! }
//! locks.renew_all().await;           // every 20 s
//! locks.unlock(&[mq], false).await;  // UNLOCK_BATCH_MQ when the queue goes away
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_client_core::ClientInstance;
use rmq_protocol::MessageQueue;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// How often every held lock is renewed (Java
/// `rocketmq.client.rebalance.lockInterval`, 20 s; Java's first renewal
/// runs 1 s after start).
pub const DEFAULT_LOCK_RENEW_INTERVAL: Duration = Duration::from_secs(20);

/// How long a lock counts as held on the client after the broker last
/// confirmed it (Java `rocketmq.client.rebalance.lockMaxLiveTime`, 30 s).
pub const DEFAULT_LOCK_LEASE: Duration = Duration::from_secs(30);

/// How long the broker keeps a lock that is not renewed (broker property
/// `rocketmq.broker.rebalance.lockMaxLiveTime`, 60 s). A client lease must
/// stay below it, so a client stops before the broker can give the queue
/// to another member.
pub const BROKER_LOCK_LEASE: Duration = Duration::from_secs(60);

/// The local view of one tracked queue's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockState {
    /// Whether the broker's last answer for this queue said "locked by
    /// you" (Java `ProcessQueue.locked`). A failed call (timeout, closed
    /// connection) leaves it as it was: only the lease runs out.
    pub locked: bool,
    /// When the request of the last confirmation was sent (Java
    /// `lastLockTimestamp`, taken there when the answer arrived; the send
    /// time is earlier, so the client lease never outlasts the broker's).
    pub last_lock: Instant,
}

impl LockState {
    /// Locked, and confirmed no longer than `lease` before `now` (Java
    /// `locked && !isLockExpired()`).
    pub fn is_fresh(&self, now: Instant, lease: Duration) -> bool {
        self.locked && now.saturating_duration_since(self.last_lock) <= lease
    }
}

/// Tracked queues and their lock state; pure bookkeeping.
#[derive(Debug, Default)]
struct LockTable {
    entries: HashMap<MessageQueue, LockState>,
}

impl LockTable {
    /// Applies a LOCK_BATCH_MQ answer: queues of `requested` listed in
    /// `granted` become locked as of `sent_at`; the others are marked not
    /// locked. With `track`, granted queues not tracked yet start being
    /// tracked; without it, untracked queues are ignored (a renewal must not
    /// resurrect a queue unlocked meanwhile).
    fn apply(
        &mut self,
        requested: &[MessageQueue],
        granted: &HashSet<MessageQueue>,
        sent_at: Instant,
        track: bool,
    ) -> Vec<MessageQueue> {
        let mut locked = Vec::new();
        for mq in requested {
            if granted.contains(mq) {
                let state = LockState {
                    locked: true,
                    last_lock: sent_at,
                };
                match self.entries.get_mut(mq) {
                    Some(entry) => {
                        // A slower, older answer must not move the time back.
                        entry.locked = true;
                        if entry.last_lock < sent_at {
                            entry.last_lock = sent_at;
                        }
                    }
                    None if track => {
                        self.entries.insert(mq.clone(), state);
                    }
                    None => continue,
                }
                locked.push(mq.clone());
            } else if let Some(entry) = self.entries.get_mut(mq) {
                entry.locked = false;
            }
        }
        locked
    }

    fn remove(&mut self, mqs: &[MessageQueue]) {
        for mq in mqs {
            self.entries.remove(mq);
        }
    }

    fn tracked(&self) -> Vec<MessageQueue> {
        let mut v: Vec<MessageQueue> = self.entries.keys().cloned().collect();
        v.sort();
        v
    }
}

/// Queues grouped by broker name, each group sorted.
fn by_broker(mqs: &[MessageQueue]) -> BTreeMap<String, Vec<MessageQueue>> {
    let mut map: BTreeMap<String, Vec<MessageQueue>> = BTreeMap::new();
    for mq in mqs {
        map.entry(mq.broker_name.clone())
            .or_default()
            .push(mq.clone());
    }
    for group in map.values_mut() {
        group.sort();
        group.dedup();
    }
    map
}

/// The broker-side locks of one consumer group's orderly consumer: lock,
/// renew, check, unlock. See the [module documentation](self).
///
/// Every call goes to the **master** of the queue's broker (Java
/// `findBrokerAddressInSubscribe(brokerName, MASTER_ID, true)`), one
/// request per broker, timeout 1 s. A failed call is logged and changes no
/// local state: the queues' leases simply run out unless a later call
/// succeeds.
///
/// The calls of one `QueueLocks` run one at a time, in the order they were
/// made: a renewal that read the tracked queues before an unlock is
/// answered before that unlock is sent, so it cannot lock again on the
/// broker a queue this client has just released (the broker would keep
/// that lock for [`BROKER_LOCK_LEASE`] and refuse the queue's new owner).
pub struct QueueLocks {
    instance: ClientInstance,
    group: String,
    lease: Duration,
    table: Mutex<LockTable>,
    /// Held by each broker call from its reading of the table to its
    /// answer (fair: calls run in the order they were made).
    calls: tokio::sync::Mutex<()>,
}

impl fmt::Debug for QueueLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueLocks")
            .field("client_id", &self.instance.client_id())
            .field("group", &self.group)
            .field("lease", &self.lease)
            .field("tracked", &self.table().entries.len())
            .finish()
    }
}

impl QueueLocks {
    /// Locks of `group` for the client `instance` (its client id is the
    /// lock owner), with the Java client lease of 30 s.
    pub fn new(instance: ClientInstance, group: impl Into<String>) -> Self {
        QueueLocks {
            instance,
            group: group.into(),
            lease: DEFAULT_LOCK_LEASE,
            table: Mutex::new(LockTable::default()),
            calls: tokio::sync::Mutex::new(()),
        }
    }

    /// Sets the client lease (default [`DEFAULT_LOCK_LEASE`], 30 s). Keep
    /// it well below [`BROKER_LOCK_LEASE`] and above the renewal interval.
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// The client lease.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The consumer group.
    pub fn group(&self) -> &str {
        &self.group
    }

    fn table(&self) -> MutexGuard<'_, LockTable> {
        // Every critical section is a few map updates: a panic cannot leave
        // the table inconsistent.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Locks `mqs` (LOCK_BATCH_MQ to each broker's master) and returns the
    /// queues the brokers granted, sorted (already ours, or newly locked).
    /// Granted queues start being tracked (renewed by
    /// [`renew_all`](Self::renew_all)); tracked queues not granted are
    /// marked not locked. Queues of a broker that could not be reached are
    /// not granted (logged).
    pub async fn lock(&self, mqs: &[MessageQueue]) -> Vec<MessageQueue> {
        let _calls = self.calls.lock().await;
        self.lock_inner(mqs, true).await
    }

    /// Renews the locks of the tracked queues among `mqs` (Java `lock(mq)`
    /// for a held process queue); untracked queues are skipped. Returns
    /// those the brokers confirmed.
    pub async fn renew(&self, mqs: &[MessageQueue]) -> Vec<MessageQueue> {
        let _calls = self.calls.lock().await;
        let tracked: Vec<MessageQueue> = {
            let table = self.table();
            mqs.iter()
                .filter(|mq| table.entries.contains_key(*mq))
                .cloned()
                .collect()
        };
        self.lock_inner(&tracked, false).await
    }

    /// Renews every tracked lock (Java `lockAll`, every 20 s): one
    /// LOCK_BATCH_MQ per broker. Returns the queues confirmed.
    pub async fn renew_all(&self) -> Vec<MessageQueue> {
        let _calls = self.calls.lock().await;
        let tracked = self.table().tracked();
        self.lock_inner(&tracked, false).await
    }

    /// LOCK_BATCH_MQ for `mqs`; the caller holds `calls`.
    async fn lock_inner(&self, mqs: &[MessageQueue], track: bool) -> Vec<MessageQueue> {
        let mut locked = Vec::new();
        for (broker_name, mqs) in by_broker(mqs) {
            let Some(addr) = self.master_addr(&mqs).await else {
                warn!(
                    group = %self.group, broker = broker_name, queues = mqs.len(),
                    "no master address for the broker; cannot lock its queues"
                );
                continue;
            };
            let sent_at = Instant::now();
            match self.instance.lock_batch_mq(&addr, &self.group, &mqs).await {
                Ok(answer) => {
                    let granted: HashSet<MessageQueue> = answer.into_iter().collect();
                    let (now_locked, lost) = {
                        let mut table = self.table();
                        let before: HashSet<MessageQueue> = mqs
                            .iter()
                            .filter(|mq| table.entries.get(*mq).is_some_and(|s| s.locked))
                            .cloned()
                            .collect();
                        let now_locked = table.apply(&mqs, &granted, sent_at, track);
                        let lost: Vec<MessageQueue> = before
                            .into_iter()
                            .filter(|mq| !granted.contains(mq))
                            .collect();
                        (now_locked, lost)
                    };
                    let refused = mqs.len().saturating_sub(granted.len());
                    if refused > 0 {
                        info!(
                            group = %self.group, addr, requested = mqs.len(), refused,
                            "some queues are locked by another client"
                        );
                    }
                    for mq in &lost {
                        warn!(group = %self.group, queue = %mq, "the queue's lock was lost (held by another client now)");
                    }
                    debug!(group = %self.group, addr, locked = now_locked.len(), "LOCK_BATCH_MQ answered");
                    locked.extend(now_locked);
                }
                Err(e) => {
                    warn!(
                        group = %self.group, addr, queues = mqs.len(), error = %rmq_protocol::ErrorChain(&e),
                        "LOCK_BATCH_MQ failed; the locks' leases keep running"
                    );
                }
            }
        }
        locked.sort();
        locked
    }

    /// Stops tracking `mqs` and unlocks them on their brokers
    /// (UNLOCK_BATCH_MQ; `oneway` sends without waiting for the answer, as
    /// Java does when a rebalance removes a queue). Failures are logged; the
    /// broker then frees the lock after its 60 s lease.
    pub async fn unlock(&self, mqs: &[MessageQueue], oneway: bool) {
        let _calls = self.calls.lock().await;
        self.unlock_inner(mqs, oneway).await;
    }

    /// UNLOCK_BATCH_MQ for `mqs`; the caller holds `calls`.
    async fn unlock_inner(&self, mqs: &[MessageQueue], oneway: bool) {
        self.table().remove(mqs);
        for (broker_name, mqs) in by_broker(mqs) {
            let Some(addr) = self.master_addr(&mqs).await else {
                warn!(group = %self.group, broker = broker_name, "no master address; cannot unlock");
                continue;
            };
            match self
                .instance
                .unlock_batch_mq(&addr, &self.group, &mqs, oneway)
                .await
            {
                Ok(()) => {
                    info!(group = %self.group, addr, queues = ?mqs, "queues unlocked");
                }
                Err(e) => warn!(
                    group = %self.group, addr, queues = mqs.len(), error = %rmq_protocol::ErrorChain(&e),
                    "UNLOCK_BATCH_MQ failed; the broker frees the locks after their lease"
                ),
            }
        }
    }

    /// Unlocks every tracked queue (Java `unlockAll`, at shutdown).
    pub async fn unlock_all(&self, oneway: bool) {
        let _calls = self.calls.lock().await;
        let tracked = self.table().tracked();
        if !tracked.is_empty() {
            self.unlock_inner(&tracked, oneway).await;
        }
    }

    /// Stops tracking `mq` without telling the broker (its lock runs out
    /// there after [`BROKER_LOCK_LEASE`]).
    pub fn forget(&self, mq: &MessageQueue) {
        self.table().remove(std::slice::from_ref(mq));
    }

    /// Whether `mq` is tracked and the broker's last answer listed it
    /// (regardless of the lease). Java pulls only while this holds.
    pub fn is_locked(&self, mq: &MessageQueue) -> bool {
        self.table().entries.get(mq).is_some_and(|s| s.locked)
    }

    /// Whether `mq` is locked and its lock was confirmed within the lease
    /// (30 s): the precondition for consuming it. False for an untracked
    /// queue.
    pub fn is_locked_and_fresh(&self, mq: &MessageQueue) -> bool {
        let now = Instant::now();
        self.table()
            .entries
            .get(mq)
            .is_some_and(|s| s.is_fresh(now, self.lease))
    }

    /// The lock state of `mq`, if tracked.
    pub fn state(&self, mq: &MessageQueue) -> Option<LockState> {
        self.table().entries.get(mq).copied()
    }

    /// The tracked queues, sorted.
    pub fn tracked(&self) -> Vec<MessageQueue> {
        self.table().tracked()
    }

    /// The master address of the broker of `mqs` (one broker's queues),
    /// refreshing the route of the first queue's topic once when unknown.
    async fn master_addr(&self, mqs: &[MessageQueue]) -> Option<String> {
        match self.instance.master_addr(mqs.first()?).await {
            Ok(addr) => Some(addr),
            Err(e) => {
                debug!(group = %self.group, error = %rmq_protocol::ErrorChain(&e), "no broker address for the queue lock");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(broker: &str, id: i32) -> MessageQueue {
        MessageQueue::new("T", broker, id)
    }

    fn set(mqs: &[MessageQueue]) -> HashSet<MessageQueue> {
        mqs.iter().cloned().collect()
    }

    #[test]
    fn lease_rules_like_java() {
        let t0 = Instant::now();
        let s = LockState {
            locked: true,
            last_lock: t0,
        };
        assert!(s.is_fresh(t0, DEFAULT_LOCK_LEASE));
        // Java: expired when now - last > 30 s.
        assert!(s.is_fresh(t0 + Duration::from_secs(30), DEFAULT_LOCK_LEASE));
        assert!(!s.is_fresh(t0 + Duration::from_millis(30_001), DEFAULT_LOCK_LEASE));
        let unlocked = LockState { locked: false, ..s };
        assert!(!unlocked.is_fresh(t0, DEFAULT_LOCK_LEASE));
        // A clock that went "back" (older now) counts as fresh.
        assert!(s.is_fresh(t0 - Duration::from_secs(1), DEFAULT_LOCK_LEASE));
        const { assert!(DEFAULT_LOCK_LEASE.as_secs() < BROKER_LOCK_LEASE.as_secs()) };
        const { assert!(DEFAULT_LOCK_RENEW_INTERVAL.as_secs() < DEFAULT_LOCK_LEASE.as_secs()) };
    }

    #[test]
    fn lock_tracks_granted_and_marks_refused() {
        let mut t = LockTable::default();
        let t0 = Instant::now();
        let (a, b, c) = (mq("x", 0), mq("x", 1), mq("x", 2));
        let got = t.apply(
            &[a.clone(), b.clone(), c.clone()],
            &set(&[a.clone(), c.clone()]),
            t0,
            true,
        );
        assert_eq!(got, [a.clone(), c.clone()]);
        assert_eq!(t.tracked(), [a.clone(), c.clone()]);
        assert!(
            !t.entries.contains_key(&b),
            "refused and untracked: not tracked"
        );
        // Renewal: c lost to another client, a renewed later.
        let t1 = t0 + Duration::from_secs(20);
        let got = t.apply(
            &[a.clone(), c.clone()],
            &set(std::slice::from_ref(&a)),
            t1,
            false,
        );
        assert_eq!(got, std::slice::from_ref(&a));
        assert_eq!(t.entries[&a].last_lock, t1);
        assert!(!t.entries[&c].locked);
        assert_eq!(t.entries[&c].last_lock, t0, "a refusal keeps the old time");
        // An older answer arriving late does not move the time back.
        t.apply(
            std::slice::from_ref(&a),
            &set(std::slice::from_ref(&a)),
            t0,
            false,
        );
        assert_eq!(t.entries[&a].last_lock, t1);
    }

    #[test]
    fn renewal_never_resurrects_an_untracked_queue() {
        let mut t = LockTable::default();
        let t0 = Instant::now();
        let a = mq("x", 0);
        t.apply(
            std::slice::from_ref(&a),
            &set(std::slice::from_ref(&a)),
            t0,
            true,
        );
        // Unlocked (queue removed) while a renewal was in flight.
        t.remove(std::slice::from_ref(&a));
        let got = t.apply(
            std::slice::from_ref(&a),
            &set(std::slice::from_ref(&a)),
            t0,
            false,
        );
        assert!(got.is_empty());
        assert!(t.tracked().is_empty());
    }

    #[test]
    fn grouping_by_broker() {
        let g = by_broker(&[mq("b", 1), mq("a", 0), mq("b", 0), mq("b", 1)]);
        assert_eq!(g.len(), 2);
        assert_eq!(g["a"], [mq("a", 0)]);
        assert_eq!(g["b"], [mq("b", 0), mq("b", 1)]);
    }
}
