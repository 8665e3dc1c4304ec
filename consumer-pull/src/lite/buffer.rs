//! [`Buffer`]: the lite pull consumer's bounded message buffer, one FIFO
//! per assigned queue, and what was handed out of it.
//!
//! Pure bookkeeping (no I/O, no tasks, no clocks): the consumer keeps it
//! under one mutex and wakes waiters itself.
//!
//! Capacity is *reserved* before a pull and settled when the answer is
//! in, so concurrent pulls of many queues can never overshoot the total
//! limit: `buffered + reserved <= limit`, per queue and in total.
//!
//! With per-message commits (`auto_commit(false)`), every queue also keeps
//! the offsets handed out and not committed yet, in hand-out (= offset)
//! order: its commit position is the smallest of them (one past the last
//! handed-out message when none is left), so a commit never passes a
//! message still being worked on.

use std::collections::{BTreeMap, HashMap, VecDeque};

use rmq_protocol::{MessageExt, MessageQueue};

/// The buffer's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Most messages buffered per queue (Java `pullThresholdForQueue`).
    pub(crate) per_queue: usize,
    /// Most messages buffered in all (Java `pullThresholdForAll`).
    pub(crate) total: usize,
    /// A queue holding more body bytes than this is not pulled (Java
    /// `pullThresholdSizeForQueue`; checked before a pull, so one pull can
    /// go over).
    pub(crate) queue_bytes: usize,
}

/// What the buffer holds now, and the most it ever held (see
/// [`LitePullConsumer::buffered`](crate::LitePullConsumer::buffered)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BufferStats {
    /// Messages buffered (pulled, not yet handed out) in all.
    pub total: usize,
    /// Messages buffered per assigned queue (every assigned queue is
    /// listed, also with 0).
    pub per_queue: BTreeMap<MessageQueue, usize>,
    /// The most messages ever buffered at once in all.
    pub peak_total: usize,
    /// The most messages ever buffered at once in one queue.
    pub peak_queue: usize,
    /// The per-queue limit (Java `pullThresholdForQueue`).
    pub limit_per_queue: usize,
    /// The total limit (Java `pullThresholdForAll`).
    pub limit_total: usize,
    /// Messages handed out and not committed yet (per-message commits,
    /// `auto_commit(false)`; 0 otherwise).
    pub uncommitted: usize,
}

/// The answer to a capacity request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// This many slots are reserved (at least 1).
    Granted(usize),
    /// The queue is paused.
    Paused,
    /// No room now (queue or total limit reached).
    Full,
    /// The queue is no longer assigned, or a seek replaced this pull task.
    Gone,
}

/// A queue removed from the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Removed {
    /// The next offset after the last message handed out (or the seek
    /// position), if any.
    pub(crate) handed_out: Option<i64>,
    /// Buffered messages dropped with it.
    pub(crate) dropped: usize,
}

#[derive(Debug)]
struct QueueBuf {
    /// Changes when a seek restarts the queue: answers of the previous pull
    /// task are refused.
    generation: u64,
    msgs: VecDeque<MessageExt>,
    bytes: usize,
    reserved: usize,
    paused: bool,
    handed_out: Option<i64>,
    /// Handed-out offsets, increasing, with whether each was committed;
    /// the front is never a committed one (tracking only).
    pending: VecDeque<(i64, bool)>,
    /// Whether the queue is in `ready`.
    in_ready: bool,
}

impl QueueBuf {
    /// Pops the committed offsets at the front.
    fn trim(&mut self) {
        while self.pending.front().is_some_and(|&(_, done)| done) {
            self.pending.pop_front();
        }
    }

    /// The commit position: the smallest handed-out, uncommitted offset,
    /// else one past the last handed-out message (or the seek position).
    fn position(&self) -> Option<i64> {
        match self.pending.front() {
            Some(&(offset, _)) => Some(offset),
            None => self.handed_out,
        }
    }
}

/// What a per-message commit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marked {
    /// The queue's commit position now (it may not have moved: an older
    /// message is still uncommitted).
    Position(i64),
    /// The queue has no position yet (nothing handed out, no seek): the
    /// message belongs to an earlier assignment of the queue.
    Nothing,
    /// The queue is not assigned.
    NotAssigned,
}

/// The bounded buffer of every assigned queue.
#[derive(Debug)]
pub(crate) struct Buffer {
    limits: Limits,
    queues: HashMap<MessageQueue, QueueBuf>,
    /// Queues that may have messages, in hand-out order (round robin).
    ready: VecDeque<MessageQueue>,
    total: usize,
    reserved: usize,
    peak_total: usize,
    peak_queue: usize,
    next_generation: u64,
    /// Whether handed-out offsets are tracked for per-message commits.
    track: bool,
}

impl Buffer {
    pub(crate) fn new(limits: Limits) -> Self {
        Buffer {
            limits,
            queues: HashMap::new(),
            ready: VecDeque::new(),
            total: 0,
            reserved: 0,
            peak_total: 0,
            peak_queue: 0,
            next_generation: 1,
            track: false,
        }
    }

    /// A buffer that tracks the handed-out offsets for per-message commits.
    pub(crate) fn tracking(limits: Limits) -> Self {
        Buffer {
            track: true,
            ..Buffer::new(limits)
        }
    }

    /// Whether handed-out offsets are tracked.
    pub(crate) fn is_tracking(&self) -> bool {
        self.track
    }

    fn generation(&mut self) -> u64 {
        let g = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        g
    }

    /// Adds an assigned queue; its generation, or `None` when it is
    /// already there.
    pub(crate) fn insert_queue(&mut self, mq: &MessageQueue) -> Option<u64> {
        if self.queues.contains_key(mq) {
            return None;
        }
        let generation = self.generation();
        self.queues.insert(
            mq.clone(),
            QueueBuf {
                generation,
                msgs: VecDeque::new(),
                bytes: 0,
                reserved: 0,
                paused: false,
                handed_out: None,
                pending: VecDeque::new(),
                in_ready: false,
            },
        );
        Some(generation)
    }

    /// Removes a queue, dropping its buffered messages and reservations.
    pub(crate) fn remove_queue(&mut self, mq: &MessageQueue) -> Option<Removed> {
        let q = self.queues.remove(mq)?;
        self.total = self.total.saturating_sub(q.msgs.len());
        self.reserved = self.reserved.saturating_sub(q.reserved);
        if q.in_ready {
            self.ready.retain(|r| r != mq);
        }
        Some(Removed {
            handed_out: q.handed_out,
            dropped: q.msgs.len(),
        })
    }

    /// The assigned queues, sorted.
    pub(crate) fn queues(&self) -> Vec<MessageQueue> {
        let mut v: Vec<MessageQueue> = self.queues.keys().cloned().collect();
        v.sort();
        v
    }

    pub(crate) fn contains(&self, mq: &MessageQueue) -> bool {
        self.queues.contains_key(mq)
    }

    /// Reserves room for up to `want` messages of `mq` for the pull task of
    /// `generation`.
    pub(crate) fn reserve(&mut self, mq: &MessageQueue, generation: u64, want: usize) -> Gate {
        let limits = self.limits;
        let total_used = self.total.saturating_add(self.reserved);
        let Some(q) = self.queues.get_mut(mq) else {
            return Gate::Gone;
        };
        if q.generation != generation {
            return Gate::Gone;
        }
        if q.paused {
            return Gate::Paused;
        }
        if q.bytes > limits.queue_bytes {
            return Gate::Full;
        }
        let queue_room = limits
            .per_queue
            .saturating_sub(q.msgs.len().saturating_add(q.reserved));
        let total_room = limits.total.saturating_sub(total_used);
        let n = want.min(queue_room).min(total_room);
        if n == 0 {
            return Gate::Full;
        }
        q.reserved = q.reserved.saturating_add(n);
        self.reserved = self.reserved.saturating_add(n);
        Gate::Granted(n)
    }

    /// Gives back `n` reserved slots (a pull that brought fewer messages,
    /// or none). Ignored for a stale generation (its slots went with it).
    pub(crate) fn release(&mut self, mq: &MessageQueue, generation: u64, n: usize) {
        if let Some(q) = self.queues.get_mut(mq) {
            if q.generation == generation {
                let n = n.min(q.reserved);
                q.reserved -= n;
                self.reserved = self.reserved.saturating_sub(n);
            }
        }
    }

    /// Appends pulled messages of `mq`, settling a reservation of
    /// `reserved` slots. `msgs` must not exceed `reserved` (the caller
    /// truncates); extra messages are still stored, never lost. Returns
    /// `false` (storing nothing) when the queue is gone or the generation is
    /// stale.
    pub(crate) fn put(
        &mut self,
        mq: &MessageQueue,
        generation: u64,
        reserved: usize,
        msgs: Vec<MessageExt>,
    ) -> bool {
        let Some(q) = self.queues.get_mut(mq) else {
            return false;
        };
        if q.generation != generation {
            return false;
        }
        let settle = reserved.min(q.reserved);
        q.reserved -= settle;
        self.reserved = self.reserved.saturating_sub(settle);
        if msgs.is_empty() {
            return true;
        }
        let n = msgs.len();
        q.bytes = msgs
            .iter()
            .fold(q.bytes, |b, m| b.saturating_add(m.body.len()));
        q.msgs.extend(msgs);
        self.total = self.total.saturating_add(n);
        self.peak_queue = self.peak_queue.max(q.msgs.len());
        self.peak_total = self.peak_total.max(self.total);
        if !q.in_ready {
            q.in_ready = true;
            self.ready.push_back(mq.clone());
        }
        true
    }

    /// Hands out up to `max` messages, queue by queue in round-robin order,
    /// skipping paused queues, and records each queue's next offset after
    /// its last handed-out message.
    pub(crate) fn take(&mut self, max: usize) -> Vec<MessageExt> {
        let mut out = Vec::new();
        let mut visits = self.ready.len();
        while out.len() < max && visits > 0 {
            visits -= 1;
            let Some(mq) = self.ready.pop_front() else {
                break;
            };
            let Some(q) = self.queues.get_mut(&mq) else {
                continue;
            };
            if q.paused || q.msgs.is_empty() {
                q.in_ready = false;
                continue;
            }
            let n = q.msgs.len().min(max - out.len());
            for m in q.msgs.drain(..n) {
                q.bytes = q.bytes.saturating_sub(m.body.len());
                q.handed_out = Some(m.queue_offset.saturating_add(1));
                if self.track {
                    q.pending.push_back((m.queue_offset, false));
                }
                out.push(m);
            }
            self.total = self.total.saturating_sub(n);
            if q.msgs.is_empty() {
                q.in_ready = false;
            } else {
                self.ready.push_back(mq);
            }
        }
        out
    }

    /// Whether [`take`](Self::take) would hand out something.
    #[cfg(test)]
    pub(crate) fn has_ready(&self) -> bool {
        self.ready.iter().any(|mq| {
            self.queues
                .get(mq)
                .is_some_and(|q| !q.paused && !q.msgs.is_empty())
        })
    }

    /// Restarts `mq` at `offset`: drops its buffered messages and
    /// reservations, records `offset` as its handed-out position and gives
    /// it a new generation (returned, with the number of dropped messages).
    pub(crate) fn seek(&mut self, mq: &MessageQueue, offset: i64) -> Option<(u64, usize)> {
        let generation = self.generation();
        let q = self.queues.get_mut(mq)?;
        let dropped = q.msgs.len();
        self.total = self.total.saturating_sub(dropped);
        self.reserved = self.reserved.saturating_sub(q.reserved);
        q.msgs.clear();
        q.bytes = 0;
        q.reserved = 0;
        q.generation = generation;
        q.handed_out = Some(offset);
        q.pending.clear();
        Some((generation, dropped))
    }

    /// Pauses or resumes `mq`; `false` when it is not assigned.
    pub(crate) fn set_paused(&mut self, mq: &MessageQueue, paused: bool) -> bool {
        let Some(q) = self.queues.get_mut(mq) else {
            return false;
        };
        q.paused = paused;
        if !paused && !q.msgs.is_empty() && !q.in_ready {
            q.in_ready = true;
            self.ready.push_back(mq.clone());
        }
        true
    }

    pub(crate) fn is_paused(&self, mq: &MessageQueue) -> Option<bool> {
        self.queues.get(mq).map(|q| q.paused)
    }

    /// Marks the handed-out message at `offset` of `mq` committed.
    /// An offset not handed out (a message of before a seek, or of an
    /// earlier assignment) changes nothing.
    pub(crate) fn mark(&mut self, mq: &MessageQueue, offset: i64) -> Marked {
        let Some(q) = self.queues.get_mut(mq) else {
            return Marked::NotAssigned;
        };
        if let Ok(i) = q.pending.binary_search_by_key(&offset, |&(o, _)| o) {
            if let Some(slot) = q.pending.get_mut(i) {
                slot.1 = true;
            }
            q.trim();
        }
        q.position().map_or(Marked::Nothing, Marked::Position)
    }

    /// Marks every handed-out message of `mq` below `offset` committed
    /// (Java `commitSync(Map)`: `offset` is the next one to read). The
    /// position is then the smallest uncommitted offset, or `offset` when
    /// none is left and it is past the handed-out position (a skip ahead).
    pub(crate) fn mark_below(&mut self, mq: &MessageQueue, offset: i64) -> Marked {
        let Some(q) = self.queues.get_mut(mq) else {
            return Marked::NotAssigned;
        };
        let below = q.pending.partition_point(|&(o, _)| o < offset);
        q.pending.drain(..below);
        q.trim();
        match q.pending.front() {
            Some(&(first, _)) => Marked::Position(first),
            None => Marked::Position(q.handed_out.map_or(offset, |h| h.max(offset))),
        }
    }

    /// Each queue's commit position: the smallest handed-out offset not
    /// committed, else one past its last handed-out message.
    #[cfg(test)]
    pub(crate) fn positions(&self) -> Vec<(MessageQueue, i64)> {
        let mut v: Vec<(MessageQueue, i64)> = self
            .queues
            .iter()
            .filter_map(|(mq, q)| q.position().map(|o| (mq.clone(), o)))
            .collect();
        v.sort();
        v
    }

    /// Handed-out messages not committed yet, in all.
    pub(crate) fn uncommitted(&self) -> usize {
        self.queues
            .values()
            .map(|q| q.pending.iter().filter(|&&(_, done)| !done).count())
            .sum()
    }

    /// Each queue's next offset after its last handed-out message, marking
    /// everything handed out committed.
    pub(crate) fn commit_all(&mut self) -> Vec<(MessageQueue, i64)> {
        for q in self.queues.values_mut() {
            q.pending.clear();
        }
        self.handed_out()
    }

    /// Each queue's next offset after its last handed-out message.
    pub(crate) fn handed_out(&self) -> Vec<(MessageQueue, i64)> {
        let mut v: Vec<(MessageQueue, i64)> = self
            .queues
            .iter()
            .filter_map(|(mq, q)| q.handed_out.map(|o| (mq.clone(), o)))
            .collect();
        v.sort();
        v
    }

    /// The handed-out position of one queue.
    #[cfg(test)]
    pub(crate) fn handed_out_of(&self, mq: &MessageQueue) -> Option<i64> {
        self.queues.get(mq).and_then(|q| q.handed_out)
    }

    /// Drops every queue and message.
    pub(crate) fn clear(&mut self) {
        self.queues.clear();
        self.ready.clear();
        self.total = 0;
        self.reserved = 0;
    }

    pub(crate) fn stats(&self) -> BufferStats {
        BufferStats {
            total: self.total,
            per_queue: self
                .queues
                .iter()
                .map(|(mq, q)| (mq.clone(), q.msgs.len()))
                .collect(),
            peak_total: self.peak_total,
            peak_queue: self.peak_queue,
            limit_per_queue: self.limits.per_queue,
            limit_total: self.limits.total,
            uncommitted: self.uncommitted(),
        }
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::Message;

    use super::*;

    fn mq(id: i32) -> MessageQueue {
        MessageQueue::new("T", "b", id)
    }

    fn msgs(queue: i32, offsets: std::ops::Range<i64>) -> Vec<MessageExt> {
        offsets
            .map(|o| MessageExt {
                message: Message::new("T", format!("{queue}-{o}")),
                queue_id: queue,
                queue_offset: o,
                ..MessageExt::default()
            })
            .collect()
    }

    fn limits(per_queue: usize, total: usize) -> Limits {
        Limits {
            per_queue,
            total,
            queue_bytes: usize::MAX,
        }
    }

    #[test]
    fn reservations_keep_both_limits_hard() {
        let mut b = Buffer::new(limits(10, 15));
        let g0 = b.insert_queue(&mq(0)).unwrap();
        let g1 = b.insert_queue(&mq(1)).unwrap();
        assert_eq!(b.insert_queue(&mq(0)), None);
        // Two concurrent pulls: the second gets only what the total leaves.
        assert_eq!(b.reserve(&mq(0), g0, 32), Gate::Granted(10));
        assert_eq!(b.reserve(&mq(1), g1, 32), Gate::Granted(5));
        assert_eq!(b.reserve(&mq(1), g1, 32), Gate::Full);
        assert_eq!(b.reserve(&mq(0), g0, 1), Gate::Full);
        // The first pull brought 4 of 10: 6 slots come back, 5 of which
        // queue 1 may use (its own limit counts its reservation).
        assert!(b.put(&mq(0), g0, 10, msgs(0, 0..4)));
        assert_eq!(b.reserve(&mq(1), g1, 32), Gate::Granted(5));
        assert!(b.put(&mq(1), g1, 10, msgs(1, 0..10)));
        let s = b.stats();
        assert_eq!((s.total, s.peak_total, s.peak_queue), (14, 14, 10));
        assert_eq!(s.per_queue[&mq(0)], 4);
        assert_eq!(b.reserve(&mq(1), g1, 32), Gate::Full);
        assert_eq!(b.reserve(&mq(0), g0, 32), Gate::Granted(1));
        assert_eq!(b.reserve(&mq(0), g0, 32), Gate::Full);
        // Wrong generation / unknown queue.
        assert_eq!(b.reserve(&mq(0), g1, 1), Gate::Gone);
        assert_eq!(b.reserve(&mq(7), g0, 1), Gate::Gone);
        // Handing out frees room; a release gives slots back.
        b.release(&mq(0), g0, 1);
        assert_eq!(b.take(3).len(), 3);
        assert_eq!(b.reserve(&mq(0), g0, 32), Gate::Granted(4));
        b.release(&mq(0), g0, 4);
        assert_eq!(b.reserve(&mq(0), g0, 32), Gate::Granted(4));
        assert_eq!(b.stats().total, 11);
    }

    #[test]
    fn take_is_round_robin_and_records_handed_out_offsets() {
        let mut b = Buffer::new(limits(100, 1000));
        let g0 = b.insert_queue(&mq(0)).unwrap();
        let g1 = b.insert_queue(&mq(1)).unwrap();
        b.put(&mq(0), g0, 0, msgs(0, 10..15));
        b.put(&mq(1), g1, 0, msgs(1, 0..2));
        let first = b.take(3);
        assert_eq!(
            first
                .iter()
                .map(|m| (m.queue_id, m.queue_offset))
                .collect::<Vec<_>>(),
            [(0, 10), (0, 11), (0, 12)]
        );
        // Queue 1 comes next, then the rest of queue 0.
        let next = b.take(10);
        assert_eq!(
            next.iter()
                .map(|m| (m.queue_id, m.queue_offset))
                .collect::<Vec<_>>(),
            [(1, 0), (1, 1), (0, 13), (0, 14)]
        );
        assert_eq!(b.handed_out(), [(mq(0), 15), (mq(1), 2)]);
        assert!(b.take(10).is_empty());
        assert!(!b.has_ready());
        assert_eq!(b.stats().total, 0);
    }

    #[test]
    fn paused_queues_keep_their_messages_until_resumed() {
        let mut b = Buffer::new(limits(100, 1000));
        let g0 = b.insert_queue(&mq(0)).unwrap();
        let g1 = b.insert_queue(&mq(1)).unwrap();
        assert!(b.set_paused(&mq(0), true));
        assert_eq!(b.is_paused(&mq(0)), Some(true));
        assert_eq!(b.reserve(&mq(0), g0, 5), Gate::Paused);
        // A pull in flight when pausing still lands, but is not handed out.
        b.put(&mq(0), g0, 0, msgs(0, 0..3));
        b.put(&mq(1), g1, 0, msgs(1, 0..2));
        let got = b.take(10);
        assert!(got.iter().all(|m| m.queue_id == 1));
        assert_eq!(got.len(), 2);
        assert!(!b.has_ready());
        assert!(b.set_paused(&mq(0), false));
        assert!(b.has_ready());
        assert_eq!(b.take(10).len(), 3);
        assert!(!b.set_paused(&mq(9), true));
    }

    #[test]
    fn seek_drops_buffered_and_refuses_the_old_generation() {
        let mut b = Buffer::new(limits(10, 10));
        let g0 = b.insert_queue(&mq(0)).unwrap();
        b.put(&mq(0), g0, 0, msgs(0, 0..5));
        assert_eq!(b.take(2).len(), 2);
        assert_eq!(b.reserve(&mq(0), g0, 10), Gate::Granted(7));
        let (g, dropped) = b.seek(&mq(0), 1).unwrap();
        assert_eq!(dropped, 3);
        assert_ne!(g, g0);
        assert_eq!(b.handed_out_of(&mq(0)), Some(1));
        // The old task's answer is refused, its release ignored.
        assert!(!b.put(&mq(0), g0, 5, msgs(0, 5..10)));
        b.release(&mq(0), g0, 5);
        assert_eq!(b.stats().total, 0);
        assert_eq!(b.reserve(&mq(0), g, 20), Gate::Granted(10));
        assert!(b.put(&mq(0), g, 10, msgs(0, 1..11)));
        assert_eq!(b.take(1)[0].queue_offset, 1);
        assert_eq!(b.seek(&mq(5), 0), None);
    }

    #[test]
    fn remove_returns_the_handed_out_offset_and_frees_room() {
        let mut b = Buffer::new(limits(10, 10));
        let g0 = b.insert_queue(&mq(0)).unwrap();
        let g1 = b.insert_queue(&mq(1)).unwrap();
        b.put(&mq(0), g0, 0, msgs(0, 0..6));
        b.take(2);
        assert_eq!(b.reserve(&mq(0), g0, 10), Gate::Granted(6));
        assert_eq!(b.reserve(&mq(1), g1, 10), Gate::Full);
        let removed = b.remove_queue(&mq(0)).unwrap();
        assert_eq!(
            removed,
            Removed {
                handed_out: Some(2),
                dropped: 4
            }
        );
        assert_eq!(b.reserve(&mq(1), g1, 10), Gate::Granted(10));
        assert!(!b.put(&mq(0), g0, 4, msgs(0, 6..8)));
        assert_eq!(b.queues(), [mq(1)]);
        assert!(b.take(10).is_empty());
        b.clear();
        assert!(b.queues().is_empty());
    }

    #[test]
    fn byte_threshold_stops_pulling() {
        let mut b = Buffer::new(Limits {
            per_queue: 100,
            total: 100,
            queue_bytes: 5,
        });
        let g = b.insert_queue(&mq(0)).unwrap();
        b.put(&mq(0), g, 0, msgs(0, 0..2)); // "0-0" + "0-1" = 6 bytes
        assert_eq!(b.reserve(&mq(0), g, 1), Gate::Full);
        b.take(1);
        assert_eq!(b.reserve(&mq(0), g, 1), Gate::Granted(1));
    }

    #[test]
    fn per_message_commits_never_pass_an_uncommitted_message() {
        let mut b = Buffer::tracking(limits(100, 100));
        let g0 = b.insert_queue(&mq(0)).unwrap();
        let g1 = b.insert_queue(&mq(1)).unwrap();
        // Nothing handed out yet: nothing to commit.
        assert_eq!(b.mark(&mq(0), 3), Marked::Nothing);
        assert_eq!(b.mark(&mq(9), 3), Marked::NotAssigned);
        // Offsets with gaps (a server-side tag filter skips some).
        b.put(&mq(0), g0, 0, msgs(0, 10..13));
        b.put(&mq(0), g0, 0, msgs(0, 15..17));
        b.put(&mq(1), g1, 0, msgs(1, 0..2));
        assert_eq!(b.take(100).len(), 7);
        assert_eq!(b.stats().uncommitted, 7);
        assert_eq!(b.positions(), [(mq(0), 10), (mq(1), 0)]);
        // Out of order: 12 and 15 done, 10 still in flight: stays at 10.
        assert_eq!(b.mark(&mq(0), 12), Marked::Position(10));
        assert_eq!(b.mark(&mq(0), 15), Marked::Position(10));
        // 10 done: 11 is the smallest uncommitted.
        assert_eq!(b.mark(&mq(0), 10), Marked::Position(11));
        // Again, or an offset never handed out: nothing moves.
        assert_eq!(b.mark(&mq(0), 10), Marked::Position(11));
        assert_eq!(b.mark(&mq(0), 14), Marked::Position(11));
        assert_eq!(b.mark(&mq(0), 99), Marked::Position(11));
        // 11 done: 12 and 15 were already, 16 is next.
        assert_eq!(b.mark(&mq(0), 11), Marked::Position(16));
        assert_eq!(b.mark(&mq(0), 16), Marked::Position(17));
        assert_eq!(b.stats().uncommitted, 2);
        // Queues are independent.
        assert_eq!(b.mark(&mq(1), 1), Marked::Position(0));
        assert_eq!(b.positions(), [(mq(0), 17), (mq(1), 0)]);
        // Handed out later: tracked behind the committed ones.
        b.put(&mq(0), g0, 0, msgs(0, 17..19));
        b.take(100);
        assert_eq!(b.positions(), [(mq(0), 17), (mq(1), 0)]);
        assert_eq!(b.mark(&mq(0), 18), Marked::Position(17));
        // commit_all: everything handed out counts as committed.
        assert_eq!(b.commit_all(), [(mq(0), 19), (mq(1), 2)]);
        assert_eq!(b.stats().uncommitted, 0);
        assert_eq!(b.positions(), [(mq(0), 19), (mq(1), 2)]);
    }

    #[test]
    fn commit_below_an_offset_and_seek_reset_the_tracking() {
        let mut b = Buffer::tracking(limits(100, 100));
        let g0 = b.insert_queue(&mq(0)).unwrap();
        b.put(&mq(0), g0, 0, msgs(0, 0..10));
        b.take(100);
        assert_eq!(b.mark(&mq(0), 7), Marked::Position(0));
        // Everything below 5 done: 5 is the smallest uncommitted.
        assert_eq!(b.mark_below(&mq(0), 5), Marked::Position(5));
        // Below 8: 8 (7 was committed already).
        assert_eq!(b.mark_below(&mq(0), 8), Marked::Position(8));
        // Past everything handed out: a skip ahead.
        assert_eq!(b.mark_below(&mq(0), 40), Marked::Position(40));
        assert_eq!(b.mark_below(&mq(9), 1), Marked::NotAssigned);
        // A seek forgets the tracked offsets; older messages change nothing.
        b.put(&mq(0), g0, 0, msgs(0, 10..12));
        b.take(100);
        let (g, _) = b.seek(&mq(0), 3).unwrap();
        assert_eq!(b.positions(), [(mq(0), 3)]);
        assert_eq!(b.mark(&mq(0), 10), Marked::Position(3));
        b.put(&mq(0), g, 0, msgs(0, 3..5));
        b.take(100);
        assert_eq!(b.mark(&mq(0), 4), Marked::Position(3));
        assert_eq!(b.mark(&mq(0), 3), Marked::Position(5));
        // Removing the queue forgets it.
        b.remove_queue(&mq(0));
        assert_eq!(b.mark(&mq(0), 5), Marked::NotAssigned);
    }

    #[test]
    fn without_tracking_nothing_is_kept_per_message() {
        let mut b = Buffer::new(limits(100, 100));
        let g0 = b.insert_queue(&mq(0)).unwrap();
        b.put(&mq(0), g0, 0, msgs(0, 0..10));
        b.take(100);
        assert!(!b.is_tracking());
        assert_eq!(b.stats().uncommitted, 0);
        assert_eq!(b.positions(), [(mq(0), 10)]);
    }
}
