//! [`diff`]: what changes between the queues a client holds and the queues
//! it was just assigned.

use std::collections::BTreeSet;

use rmq_protocol::MessageQueue;

/// The difference between the queues held and the queues assigned, for one
/// topic. Every list is sorted (Java `MessageQueue` order) and free of
/// duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebalanceDiff {
    /// Assigned but not held: start consuming them (compute the start
    /// offset, create the process queue, start pulling).
    pub added: Vec<MessageQueue>,
    /// Held but no longer assigned: stop consuming them (drop the process
    /// queue, persist then remove the offset, unlock if orderly).
    pub removed: Vec<MessageQueue>,
    /// Held and still assigned.
    pub unchanged: Vec<MessageQueue>,
}

impl RebalanceDiff {
    /// Whether any queue is added or removed.
    pub fn is_changed(&self) -> bool {
        !self.added.is_empty() || !self.removed.is_empty()
    }

    /// The queues assigned after the change (`unchanged` + `added`), sorted.
    pub fn assigned(&self) -> Vec<MessageQueue> {
        let mut all: Vec<MessageQueue> =
            self.unchanged.iter().chain(&self.added).cloned().collect();
        all.sort();
        all
    }
}

/// Compares the queues a client `held` with the queues it was `assigned`
/// (one topic; pass only that topic's held queues). Pure: no I/O, and the
/// result does not depend on the input order.
///
/// ```
/// use rmq_protocol::MessageQueue;
/// use rmq_rebalance::diff;
///
/// let q = |id| MessageQueue::new("T", "broker-a", id);
/// let held = [q(0), q(1), q(2)];
/// let d = diff(&held, &[q(3), q(2), q(1)]);
/// assert_eq!(d.added, [q(3)]);
/// assert_eq!(d.removed, [q(0)]);
/// assert_eq!(d.unchanged, [q(1), q(2)]);
/// ```
pub fn diff<'a>(
    held: impl IntoIterator<Item = &'a MessageQueue>,
    assigned: &[MessageQueue],
) -> RebalanceDiff {
    let held: BTreeSet<&MessageQueue> = held.into_iter().collect();
    let assigned: BTreeSet<&MessageQueue> = assigned.iter().collect();
    RebalanceDiff {
        added: assigned.difference(&held).map(|&mq| mq.clone()).collect(),
        removed: held.difference(&assigned).map(|&mq| mq.clone()).collect(),
        unchanged: held.intersection(&assigned).map(|&mq| mq.clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(broker: &str, id: i32) -> MessageQueue {
        MessageQueue::new("T", broker, id)
    }

    #[test]
    fn empty_inputs() {
        assert_eq!(diff([], &[]), RebalanceDiff::default());
        assert!(!diff([], &[]).is_changed());
    }

    #[test]
    fn first_assignment_adds_everything() {
        let assigned = [q("b", 1), q("a", 0)];
        let d = diff([], &assigned);
        assert_eq!(d.added, [q("a", 0), q("b", 1)], "sorted");
        assert!(d.removed.is_empty() && d.unchanged.is_empty());
        assert!(d.is_changed());
        assert_eq!(d.assigned(), [q("a", 0), q("b", 1)]);
    }

    #[test]
    fn losing_everything_removes_everything() {
        let held = [q("a", 2), q("a", 10)];
        let d = diff(&held, &[]);
        assert_eq!(d.removed, [q("a", 2), q("a", 10)], "numeric queue id order");
        assert!(d.added.is_empty() && d.unchanged.is_empty());
    }

    #[test]
    fn mixed_change_with_duplicates() {
        let held = [q("a", 0), q("a", 1), q("a", 1), q("b", 0)];
        let assigned = [q("b", 1), q("a", 1), q("b", 1), q("b", 0)];
        let d = diff(&held, &assigned);
        assert_eq!(d.added, [q("b", 1)]);
        assert_eq!(d.removed, [q("a", 0)]);
        assert_eq!(d.unchanged, [q("a", 1), q("b", 0)]);
        assert_eq!(d.assigned(), [q("a", 1), q("b", 0), q("b", 1)]);
    }

    #[test]
    fn same_sets_are_unchanged() {
        let held = vec![q("a", 0), q("a", 1)];
        let d = diff(held.iter().rev(), &held);
        assert!(!d.is_changed());
        assert_eq!(d.unchanged, held);
    }
}
