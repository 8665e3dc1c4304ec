//! [`ProcessQueue`]: the messages of one assigned queue between pull and
//! commit (Java `ProcessQueue`).
//!
//! The pull loop puts every pulled batch in; listener calls take their
//! messages out once they are done (consumed, or handed back to the
//! broker). The commit offset is the smallest offset still held, or one
//! past the largest ever held when nothing is left — so it never passes a
//! message that is neither done nor safely handed back.
//!
//! One `std::sync::Mutex` per queue guards the state; every operation is a
//! batch operation under one short lock, never held across an `.await`.
//!
//! Orderly consumption (Java's `consumingMsgOrderlyTreeMap`) moves taken
//! messages into a second map, `consuming`, until the call's result:
//! [`commit_consuming`](ProcessQueue::commit_consuming) drops them and
//! yields (largest taken offset + 1), [`consume_again`](ProcessQueue::consume_again)
//! / [`rollback`](ProcessQueue::rollback) move them back. Both maps count
//! for flow control and for "is the queue empty".

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rmq_protocol::MessageExt;
use tokio::sync::Notify;

use crate::pull::offset_map::OffsetMap;
use crate::telemetry::QueueMetrics;

/// The held messages and counters of one queue.
#[derive(Debug)]
pub(crate) struct ProcessQueue {
    state: Mutex<State>,
    /// Wakes the queue's orderly consume loop when messages arrive (a
    /// stored permit means no wake-up is lost). Unused in concurrent mode.
    pub(crate) wakeup: Notify,
    /// The queue's metric handles and figures (built once, at assignment).
    pub(crate) metrics: QueueMetrics,
}

#[derive(Debug)]
struct State {
    /// Queue offset → held message, ordered.
    msgs: OffsetMap<Held>,
    /// Orderly mode: messages taken by a listener call and not committed
    /// yet (Java `consumingMsgOrderlyTreeMap`). Always empty otherwise.
    consuming: BTreeMap<i64, Box<MessageExt>>,
    /// Sum of the held bodies' lengths.
    bytes: usize,
    /// Largest offset ever inserted (Java `queueOffsetMax`).
    max_offset: Option<i64>,
    dropped: bool,
    /// Listener calls of this queue in flight.
    in_flight: usize,
    last_pull: Instant,
    last_consume: Instant,
    /// The offset the pull loop pulls next (for inspection).
    next_pull_offset: Option<i64>,
}

/// One held message: its body length (for the byte count) and, in orderly
/// mode, the message itself (concurrent listener calls own their messages,
/// so the queue only tracks offsets and sizes there, without copies). Boxed,
/// so the map's nodes stay small and inserts and removals move 16 bytes.
#[derive(Debug)]
struct Held {
    body_len: usize,
    msg: Option<Box<MessageExt>>,
}

/// What flow control looks at, read under one lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowState {
    pub(crate) count: usize,
    pub(crate) bytes: usize,
    pub(crate) span: i64,
}

/// A point-in-time view of a process queue (used by inspection and the
/// running info).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PqView {
    pub(crate) min_offset: Option<i64>,
    pub(crate) max_offset: Option<i64>,
    pub(crate) count: usize,
    pub(crate) bytes: usize,
    pub(crate) in_flight: usize,
    pub(crate) dropped: bool,
    pub(crate) since_last_pull: Duration,
    pub(crate) since_last_consume: Duration,
    pub(crate) next_pull_offset: Option<i64>,
}

impl ProcessQueue {
    /// An empty queue; `now` starts the idle clocks.
    #[cfg(test)]
    pub(crate) fn new(now: Instant) -> Self {
        Self::with_metrics(now, QueueMetrics::noop())
    }

    /// An empty queue reporting to `metrics`.
    pub(crate) fn with_metrics(now: Instant, metrics: QueueMetrics) -> Self {
        ProcessQueue {
            state: Mutex::new(State {
                msgs: OffsetMap::default(),
                consuming: BTreeMap::new(),
                bytes: 0,
                max_offset: None,
                dropped: false,
                in_flight: 0,
                last_pull: now,
                last_consume: now,
                next_pull_offset: None,
            }),
            wakeup: Notify::new(),
            metrics,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent even if a holder panicked: every
        // critical section only updates plain counters and the map.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Orderly: inserts `msgs` by queue offset, keeping the messages (the
    /// consume loop takes them from here); messages whose offset is already
    /// held are ignored. Returns how many were inserted. Nothing is
    /// inserted into a dropped queue.
    pub(crate) fn put_messages(&self, msgs: Vec<MessageExt>) -> usize {
        let mut st = self.lock();
        if st.dropped {
            return 0;
        }
        let mut inserted = 0_usize;
        for msg in msgs {
            if Self::track_locked(&mut st, &msg) {
                let body_len = msg.body.len();
                st.msgs.insert(
                    msg.queue_offset,
                    Held {
                        body_len,
                        msg: Some(Box::new(msg)),
                    },
                );
                inserted = inserted.saturating_add(1);
            }
        }
        inserted
    }

    /// Concurrent: records `msgs` by queue offset (offset and body size
    /// only; the caller keeps the messages); messages whose offset is
    /// already held are ignored. Returns the newly recorded ones (what must
    /// be consumed). Nothing is recorded for a dropped queue.
    pub(crate) fn track_messages(&self, mut msgs: Vec<MessageExt>) -> Vec<MessageExt> {
        let mut st = self.lock();
        if st.dropped {
            return Vec::new();
        }
        msgs.retain(|msg| {
            if !Self::track_locked(&mut st, msg) {
                return false;
            }
            st.msgs.insert(
                msg.queue_offset,
                Held {
                    body_len: msg.body.len(),
                    msg: None,
                },
            );
            true
        });
        msgs
    }

    /// Whether `msg`'s offset is new; if so, counts its bytes and offset
    /// (the caller inserts it into `msgs`).
    fn track_locked(st: &mut State, msg: &MessageExt) -> bool {
        let offset = msg.queue_offset;
        if st.msgs.contains_key(offset) || st.consuming.contains_key(&offset) {
            return false;
        }
        st.bytes = st.bytes.saturating_add(msg.body.len());
        st.max_offset = Some(st.max_offset.map_or(offset, |m| m.max(offset)));
        true
    }

    /// Removes the messages at `offsets` (Java `removeMessage`) and returns
    /// the commit offset: the smallest offset still held, or the largest
    /// ever held + 1 when none is left; `None` when the queue held nothing
    /// before the call (nothing to commit).
    #[cfg(test)]
    pub(crate) fn remove_messages(&self, offsets: &[i64]) -> Option<i64> {
        let mut st = self.lock();
        Self::remove_locked(&mut st, offsets.iter().copied())
    }

    /// [`remove_messages`](Self::remove_messages), then — unless the queue
    /// is dropped — `commit(offset)` under the same lock, so a concurrent
    /// [`set_dropped`](Self::set_dropped) (rebalance, OFFSET_MOVED) is
    /// ordered strictly before or after the commit. Returns the offset
    /// committed.
    pub(crate) fn remove_and_commit(
        &self,
        offsets: impl IntoIterator<Item = i64>,
        commit: impl FnOnce(i64),
    ) -> Option<i64> {
        let mut st = self.lock();
        let offset = Self::remove_locked(&mut st, offsets)?;
        if st.dropped {
            return None;
        }
        commit(offset);
        Some(offset)
    }

    fn remove_locked(st: &mut State, offsets: impl IntoIterator<Item = i64>) -> Option<i64> {
        if st.msgs.is_empty() {
            return None;
        }
        for offset in offsets {
            if let Some(held) = st.msgs.remove(offset) {
                st.bytes = st.bytes.saturating_sub(held.body_len);
            }
        }
        match st.msgs.first() {
            Some((first, _)) => Some(first),
            None => st.max_offset.map(|m| m.saturating_add(1)),
        }
    }

    /// When nothing is held and the queue is not dropped, `commit(offset)`
    /// under the lock (Java `correctTagsOffset`: a pull found nothing to
    /// consume, so the queue is consumed up to `offset`). Returns whether
    /// it committed.
    pub(crate) fn commit_if_empty(&self, offset: i64, commit: impl FnOnce(i64)) -> bool {
        let st = self.lock();
        if st.dropped || !st.msgs.is_empty() || !st.consuming.is_empty() {
            return false;
        }
        commit(offset);
        true
    }

    /// Records the offset the pull loop pulls next.
    pub(crate) fn set_next_offset(&self, offset: i64) {
        self.lock().next_pull_offset = Some(offset);
    }

    /// Whether the message at `offset` is still held.
    pub(crate) fn contains(&self, offset: i64) -> bool {
        self.lock().msgs.contains_key(offset)
    }

    /// Count, bytes and span of the held messages.
    pub(crate) fn flow_state(&self) -> FlowState {
        let st = self.lock();
        FlowState {
            count: st.msgs.len().saturating_add(st.consuming.len()),
            bytes: st.bytes,
            span: Self::span(&st),
        }
    }

    fn span(st: &State) -> i64 {
        match (st.msgs.first(), st.msgs.last()) {
            (Some((first, _)), Some((last, _))) => last.saturating_sub(first),
            _ => 0,
        }
    }

    /// Last held offset − first held offset (Java `getMaxSpan`), 0 when
    /// empty.
    #[cfg(test)]
    pub(crate) fn max_span(&self) -> i64 {
        Self::span(&self.lock())
    }

    /// Number of held messages.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.lock().msgs.len()
    }

    /// Marks the queue dropped (no longer assigned, or its offset moved):
    /// no more puts, no more commits, its pull loop stops. Returns whether
    /// it was already dropped.
    pub(crate) fn set_dropped(&self) -> bool {
        let mut st = self.lock();
        std::mem::replace(&mut st.dropped, true)
    }

    /// Whether the queue is dropped.
    pub(crate) fn is_dropped(&self) -> bool {
        self.lock().dropped
    }

    /// Records a pull (or a flow-control check) at `now`.
    pub(crate) fn touch_pull(&self, now: Instant) {
        self.lock().last_pull = now;
    }

    /// Whether no pull happened for longer than `max_idle` (Java
    /// `isPullExpired`).
    pub(crate) fn is_pull_expired(&self, now: Instant, max_idle: Duration) -> bool {
        now.saturating_duration_since(self.lock().last_pull) > max_idle
    }

    /// A listener call of this queue starts at `now`, unless the queue is
    /// dropped: returns whether it started.
    pub(crate) fn begin_consume(&self, now: Instant) -> bool {
        let mut st = self.lock();
        if st.dropped {
            return false;
        }
        st.in_flight = st.in_flight.saturating_add(1);
        st.last_consume = now;
        true
    }

    /// A listener call of this queue ended; returns whether the queue is
    /// still assigned (not dropped meanwhile).
    pub(crate) fn end_consume(&self) -> bool {
        let mut st = self.lock();
        st.in_flight = st.in_flight.saturating_sub(1);
        !st.dropped
    }

    /// Listener calls of this queue in flight.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// Orderly: whether messages wait to be taken (not counting the ones
    /// a call has taken).
    pub(crate) fn has_pending(&self) -> bool {
        !self.lock().msgs.is_empty()
    }

    /// Orderly: takes the first `n` held messages in offset order into the
    /// consuming map and returns copies (Java `takeMessages`). Empty for a
    /// dropped queue.
    pub(crate) fn take_messages(&self, n: usize, now: Instant) -> Vec<MessageExt> {
        let mut st = self.lock();
        st.last_consume = now;
        if st.dropped {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(n.min(st.msgs.len()));
        while out.len() < n {
            // Orderly puts always keep the message; an entry without one
            // (never expected) stays held rather than being lost.
            if st.msgs.first().is_none_or(|(_, held)| held.msg.is_none()) {
                break;
            }
            let Some((offset, held)) = st.msgs.pop_first() else {
                break;
            };
            if let Some(msg) = held.msg {
                out.push(MessageExt::clone(&msg));
                st.consuming.insert(offset, msg);
            }
        }
        out
    }

    /// Orderly: the taken messages are done (Java `commit`): they leave
    /// the queue and, unless the queue is dropped, `commit(offset)` runs
    /// under the lock with offset = largest taken offset + 1. Returns that
    /// offset; `None` when nothing was taken.
    pub(crate) fn commit_consuming(&self, commit: impl FnOnce(i64)) -> Option<i64> {
        let mut st = self.lock();
        let (last, _) = st.consuming.last_key_value()?;
        let offset = last.saturating_add(1);
        let taken = std::mem::take(&mut st.consuming);
        let freed: usize = taken.values().map(|m| m.body.len()).sum();
        st.bytes = st.bytes.saturating_sub(freed);
        if st.dropped {
            return None;
        }
        commit(offset);
        Some(offset)
    }

    /// Orderly: `msgs` (taken earlier, possibly with updated reconsume
    /// times) go back to the held messages, to be taken again first (Java
    /// `makeMessageToConsumeAgain`).
    pub(crate) fn consume_again(&self, msgs: Vec<MessageExt>) {
        let mut st = self.lock();
        for msg in msgs {
            let offset = msg.queue_offset;
            st.consuming.remove(&offset);
            let held = Held {
                body_len: msg.body.len(),
                msg: Some(Box::new(msg)),
            };
            st.msgs.insert(offset, held);
        }
    }

    /// Orderly, manual commit: every taken message goes back (Java
    /// `rollback`).
    pub(crate) fn rollback(&self) {
        let mut st = self.lock();
        let taken = std::mem::take(&mut st.consuming);
        for (offset, msg) in taken {
            let body_len = msg.body.len();
            st.msgs.insert(
                offset,
                Held {
                    body_len,
                    msg: Some(msg),
                },
            );
        }
    }

    /// A consistent view of the queue at `now`.
    pub(crate) fn view(&self, now: Instant) -> PqView {
        let st = self.lock();
        PqView {
            min_offset: match (st.msgs.first().map(|(k, _)| k), first_key(&st.consuming)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            max_offset: st.msgs.last().map(|(k, _)| k).max(last_key(&st.consuming)),
            count: st.msgs.len().saturating_add(st.consuming.len()),
            bytes: st.bytes,
            in_flight: st.in_flight,
            dropped: st.dropped,
            since_last_pull: now.saturating_duration_since(st.last_pull),
            since_last_consume: now.saturating_duration_since(st.last_consume),
            next_pull_offset: st.next_pull_offset,
        }
    }
}

fn first_key<V>(m: &BTreeMap<i64, V>) -> Option<i64> {
    m.first_key_value().map(|(k, _)| *k)
}

fn last_key<V>(m: &BTreeMap<i64, V>) -> Option<i64> {
    m.last_key_value().map(|(k, _)| *k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::Message;

    fn msg(offset: i64, body: &str) -> MessageExt {
        MessageExt {
            message: Message::new("T", body.to_owned()),
            queue_offset: offset,
            ..MessageExt::default()
        }
    }

    fn pq() -> ProcessQueue {
        ProcessQueue::new(Instant::now())
    }

    #[test]
    fn put_ignores_duplicates_and_counts() {
        let q = pq();
        let fresh = q.track_messages(vec![msg(5, "ab"), msg(6, "cde"), msg(7, "")]);
        assert_eq!(fresh.len(), 3);
        assert_eq!(q.put_messages(vec![msg(7, "")]), 0);
        let fresh = q.track_messages(vec![msg(6, "zzzz"), msg(8, "x")]);
        assert_eq!(
            fresh.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
            [8]
        );
        assert_eq!(
            q.flow_state(),
            FlowState {
                count: 4,
                bytes: 6,
                span: 3
            }
        );
        assert!(q.contains(6));
        assert!(!q.contains(9));
    }

    #[test]
    fn commit_offset_is_smallest_held_or_max_plus_one() {
        let q = pq();
        // Empty before: nothing to commit (Java -1).
        assert_eq!(q.remove_messages(&[1]), None);
        q.put_messages(vec![msg(10, "a"), msg(11, "b"), msg(12, "c")]);
        // The last one finishes first: the commit offset stays at 10.
        assert_eq!(q.remove_messages(&[12]), Some(10));
        assert_eq!(q.remove_messages(&[10]), Some(11));
        // Unknown offsets change nothing.
        assert_eq!(q.remove_messages(&[99]), Some(11));
        // Empty now: one past the largest ever held, even though 12 left first.
        assert_eq!(q.remove_messages(&[11]), Some(13));
        assert_eq!(q.flow_state().bytes, 0);
        assert_eq!(q.remove_messages(&[11]), None);
        // A later batch continues from its own offsets.
        q.put_messages(vec![msg(20, "a")]);
        assert_eq!(q.remove_messages(&[20]), Some(21));
    }

    #[test]
    fn span_and_counters() {
        let q = pq();
        assert_eq!(q.max_span(), 0);
        q.put_messages(vec![msg(100, "a"), msg(2100, "b")]);
        assert_eq!(q.max_span(), 2000);
        assert_eq!(q.count(), 2);
        q.remove_messages(&[100]);
        assert_eq!(q.max_span(), 0);
    }

    #[test]
    fn dropped_queue_takes_nothing_and_commits_nothing() {
        let q = pq();
        q.put_messages(vec![msg(1, "a"), msg(2, "b")]);
        let mut committed = Vec::new();
        assert_eq!(q.remove_and_commit([1], |o| committed.push(o)), Some(2));
        assert!(!q.set_dropped());
        assert!(q.set_dropped());
        assert!(q.is_dropped());
        assert_eq!(q.remove_and_commit([2], |o| committed.push(o)), None);
        assert_eq!(committed, [2]);
        assert_eq!(q.put_messages(vec![msg(3, "c")]), 0);
        assert!(q.track_messages(vec![msg(3, "c")]).is_empty());
    }

    #[test]
    fn idle_and_in_flight() {
        let t0 = Instant::now();
        let q = ProcessQueue::new(t0);
        let later = t0 + Duration::from_secs(121);
        assert!(q.is_pull_expired(later, Duration::from_secs(120)));
        q.touch_pull(later);
        assert!(!q.is_pull_expired(later, Duration::from_secs(120)));
        q.begin_consume(later);
        q.begin_consume(later);
        q.end_consume();
        assert_eq!(q.in_flight(), 1);
        q.put_messages(vec![msg(4, "abc"), msg(9, "d")]);
        let v = q.view(later + Duration::from_secs(1));
        assert_eq!(v.min_offset, Some(4));
        assert_eq!(v.max_offset, Some(9));
        assert_eq!((v.count, v.bytes, v.in_flight), (2, 4, 1));
        assert!(!v.dropped);
        assert_eq!(v.since_last_pull, Duration::from_secs(1));
        assert_eq!(v.since_last_consume, Duration::from_secs(1));
        assert_eq!(v.next_pull_offset, None);
        q.set_next_offset(10);
        assert_eq!(q.view(later).next_pull_offset, Some(10));
    }

    #[test]
    fn orderly_take_commit_and_consume_again() {
        let q = pq();
        let now = Instant::now();
        q.put_messages(vec![
            msg(10, "a"),
            msg(11, "bb"),
            msg(12, "c"),
            msg(13, "d"),
        ]);
        assert!(q.has_pending());
        let taken = q.take_messages(2, now);
        assert_eq!(
            taken.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
            [10, 11]
        );
        // Taken messages still count for flow control and are not re-put.
        assert_eq!(q.flow_state().count, 4);
        assert_eq!(q.put_messages(vec![msg(10, "a")]), 0);
        assert!(q.track_messages(vec![msg(10, "a")]).is_empty());
        let v = q.view(now);
        assert_eq!(
            (v.min_offset, v.max_offset, v.count),
            (Some(10), Some(13), 4)
        );
        // Not empty while messages are taken: no idle commit.
        let mut idle = Vec::new();
        // Suspend: back first, with the updated reconsume times.
        let mut again = taken.clone();
        for m in &mut again {
            m.reconsume_times += 1;
        }
        q.consume_again(again);
        let retaken = q.take_messages(3, now);
        assert_eq!(
            retaken
                .iter()
                .map(|m| (m.queue_offset, m.reconsume_times))
                .collect::<Vec<_>>(),
            [(10, 1), (11, 1), (12, 0)]
        );
        let mut committed = Vec::new();
        assert_eq!(q.commit_consuming(|o| committed.push(o)), Some(13));
        assert_eq!(committed, [13]);
        assert_eq!(
            q.flow_state(),
            FlowState {
                count: 1,
                bytes: 1,
                span: 0
            }
        );
        assert_eq!(
            q.commit_consuming(|o| committed.push(o)),
            None,
            "nothing taken"
        );
        assert!(!q.commit_if_empty(14, |o| idle.push(o)));
        // Manual commit: rollback returns everything taken.
        let t = q.take_messages(5, now);
        assert_eq!(t.len(), 1);
        assert!(!q.has_pending());
        assert!(
            !q.commit_if_empty(14, |o| idle.push(o)),
            "a taken message blocks it"
        );
        q.rollback();
        assert!(q.has_pending());
        assert_eq!(q.take_messages(5, now)[0].queue_offset, 13);
        assert_eq!(q.commit_consuming(|o| committed.push(o)), Some(14));
        assert!(q.commit_if_empty(14, |o| idle.push(o)));
        assert_eq!(idle, [14]);
        // A dropped queue gives nothing and commits nothing.
        q.put_messages(vec![msg(20, "x")]);
        let t = q.take_messages(1, now);
        assert_eq!(t.len(), 1);
        q.set_dropped();
        assert_eq!(q.commit_consuming(|o| committed.push(o)), None);
        assert_eq!(committed, [13, 14]);
        assert!(q.take_messages(1, now).is_empty());
    }

    #[test]
    fn commit_if_empty_only_when_idle() {
        let q = pq();
        let mut got = Vec::new();
        assert!(q.commit_if_empty(5, |o| got.push(o)));
        q.put_messages(vec![msg(5, "a")]);
        assert!(!q.commit_if_empty(9, |o| got.push(o)));
        q.remove_messages(&[5]);
        q.set_dropped();
        assert!(!q.commit_if_empty(9, |o| got.push(o)));
        assert_eq!(got, [5]);
    }
}
