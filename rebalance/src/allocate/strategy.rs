//! [`AllocateStrategy`], the input order every strategy relies on, and the
//! argument checks they share.

use std::fmt::Debug;

use rmq_protocol::{MessageQueue, java_string_cmp};

use crate::error::AllocateError;

/// A queue allocation strategy (Java `AllocateMessageQueueStrategy`).
///
/// Implementations are pure, deterministic functions of their inputs: every
/// member of a consumer group runs the same strategy on the same lists and
/// must agree on who reads which queue.
///
/// # Input order
///
/// The caller sorts both lists before calling [`allocate`](Self::allocate):
/// `mq_all` with [`sort_queues`] (topic, broker name, queue id) and `cid_all`
/// with [`sort_consumer_ids`], both in Java `String.compareTo` order. The
/// strategies do not sort; the Java rebalancer sorts the same way, and
/// results only agree across clients when the order agrees.
pub trait AllocateStrategy: Send + Sync + Debug {
    /// The strategy's name, as Java's `getName()` returns it (for example
    /// `"AVG"`). The consumer reports it in its running info.
    fn name(&self) -> &str;

    /// The queues of `mq_all` that fall to `current_cid`, in the order the
    /// Java strategy returns them.
    ///
    /// `group` is the consumer group; it does not change the result (Java
    /// only logs it). If `current_cid` is not in `cid_all` the result is empty.
    ///
    /// # Errors
    ///
    /// [`AllocateError::EmptyCurrentCid`], [`AllocateError::EmptyQueues`] or
    /// [`AllocateError::EmptyConsumerIds`] when `current_cid`, `mq_all` or
    /// `cid_all` is empty (checked in that order, like Java); strategies with
    /// extra configuration document their own errors.
    fn allocate(
        &self,
        group: &str,
        current_cid: &str,
        mq_all: &[MessageQueue],
        cid_all: &[String],
    ) -> Result<Vec<MessageQueue>, AllocateError>;
}

/// Sorts queues the way the Java rebalancer does before allocating:
/// by topic, then broker name (both Java `String.compareTo`, i.e. UTF-16
/// code-unit order), then queue id.
pub fn sort_queues(queues: &mut [MessageQueue]) {
    // `MessageQueue`'s `Ord` is Java's `MessageQueue.compareTo`.
    queues.sort();
}

/// Sorts consumer ids the way the Java rebalancer does before allocating
/// (Java `String.compareTo`, i.e. UTF-16 code-unit order; equal to byte order
/// for ASCII ids).
pub fn sort_consumer_ids(ids: &mut [String]) {
    ids.sort_by(|a, b| java_string_cmp(a, b));
}

/// The checks every Java strategy runs first
/// (`AbstractAllocateMessageQueueStrategy.check`): the errors in Java's
/// order, then `Ok(None)` when `current_cid` is not a member (Java logs and
/// returns an empty list) or `Ok(Some(index))` with the position of its
/// first occurrence (Java `List.indexOf`).
pub(crate) fn check(
    current_cid: &str,
    mq_all: &[MessageQueue],
    cid_all: &[String],
) -> Result<Option<usize>, AllocateError> {
    if current_cid.is_empty() {
        return Err(AllocateError::EmptyCurrentCid);
    }
    if mq_all.is_empty() {
        return Err(AllocateError::EmptyQueues);
    }
    if cid_all.is_empty() {
        return Err(AllocateError::EmptyConsumerIds);
    }
    Ok(cid_all.iter().position(|cid| cid == current_cid))
}

/// The inputs of [`AllocateStrategy::allocate`] once [`check`] has passed
/// and found the current consumer in `cid_all`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Member<'a> {
    /// The consumer group (Java only logs it).
    pub(crate) group: &'a str,
    /// The current consumer's id.
    pub(crate) cid: &'a str,
    /// The position of the first occurrence of `cid` in `cid_all`.
    pub(crate) index: usize,
    /// All queues, not empty.
    pub(crate) mq_all: &'a [MessageQueue],
    /// All consumer ids, not empty.
    pub(crate) cid_all: &'a [String],
}

/// A strategy that runs [`check`] before allocating, like every Java
/// strategy derived from `AbstractAllocateMessageQueueStrategy`. Its
/// [`AllocateStrategy::allocate`] is [`checked_allocate!`], which calls
/// [`allocate_member`](Self::allocate_member) only for a member of
/// `cid_all`.
pub(crate) trait CheckedStrategy {
    /// The queues that fall to `member`.
    fn allocate_member(&self, member: Member<'_>) -> Result<Vec<MessageQueue>, AllocateError>;
}

/// [`AllocateStrategy::allocate`] of a [`CheckedStrategy`]: the errors of
/// [`check`], an empty list when `current_cid` is not in `cid_all`, else
/// [`CheckedStrategy::allocate_member`].
pub(crate) fn allocate_checked<S: CheckedStrategy + ?Sized>(
    strategy: &S,
    group: &str,
    current_cid: &str,
    mq_all: &[MessageQueue],
    cid_all: &[String],
) -> Result<Vec<MessageQueue>, AllocateError> {
    let Some(index) = check(current_cid, mq_all, cid_all)? else {
        return Ok(Vec::new());
    };
    strategy.allocate_member(Member {
        group,
        cid: current_cid,
        index,
        mq_all,
        cid_all,
    })
}

/// The `allocate` method of an [`AllocateStrategy`] impl for a
/// [`CheckedStrategy`]: [`allocate_checked`] on `self`.
macro_rules! checked_allocate {
    () => {
        fn allocate(
            &self,
            group: &str,
            current_cid: &str,
            mq_all: &[rmq_protocol::MessageQueue],
            cid_all: &[String],
        ) -> Result<Vec<rmq_protocol::MessageQueue>, $crate::allocate::AllocateError> {
            $crate::allocate::strategy::allocate_checked(self, group, current_cid, mq_all, cid_all)
        }
    };
}
pub(crate) use checked_allocate;

#[cfg(test)]
pub(crate) mod test_support {
    use rmq_protocol::MessageQueue;

    /// `m` queues of topic `T` spread round-robin over `brokers` brokers,
    /// sorted.
    pub(crate) fn queues(m: usize, brokers: usize) -> Vec<MessageQueue> {
        let brokers = brokers.max(1);
        let mut mqs: Vec<MessageQueue> = (0..m)
            .map(|i| {
                let broker = format!("broker-{}", i % brokers);
                let id = i32::try_from(i / brokers).unwrap_or(i32::MAX);
                MessageQueue::new("T", broker, id)
            })
            .collect();
        crate::allocate::sort_queues(&mut mqs);
        mqs
    }

    /// `c` consumer ids, sorted.
    pub(crate) fn cids(c: usize) -> Vec<String> {
        let mut ids: Vec<String> = (0..c).map(|i| format!("10.0.0.{i}@{}", 1000 + i)).collect();
        crate::allocate::sort_consumer_ids(&mut ids);
        ids
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::allocate::*;

    #[test]
    fn check_errors_in_java_order() {
        let mqs = test_support::queues(2, 1);
        let cids = test_support::cids(2);
        assert_eq!(check("", &[], &[]), Err(AllocateError::EmptyCurrentCid));
        assert_eq!(check("x", &[], &[]), Err(AllocateError::EmptyQueues));
        assert_eq!(check("x", &mqs, &[]), Err(AllocateError::EmptyConsumerIds));
        assert_eq!(check("x", &mqs, &cids), Ok(None));
        assert_eq!(check(&cids[1], &mqs, &cids), Ok(Some(1)));
    }

    /// A resolver that puts every broker and consumer in room `r`.
    #[derive(Debug)]
    struct OneRoom;

    impl MachineRoomResolver for OneRoom {
        fn broker_deploy_in(&self, _queue: &MessageQueue) -> Option<String> {
            Some("r".into())
        }
        fn consumer_deploy_in(&self, _client_id: &str) -> Option<String> {
            Some("r".into())
        }
    }

    #[test]
    fn checked_strategies_fail_first_then_skip_unknown_consumers() {
        let mqs = test_support::queues(4, 1);
        let ids = test_support::cids(2);
        let strategies: Vec<Box<dyn AllocateStrategy>> = vec![
            Box::new(AllocateAveragely),
            Box::new(AllocateAveragelyByCircle),
            Box::new(AllocateConsistentHash::default()),
            Box::new(AllocateByMachineRoom::default()),
            Box::new(AllocateMachineRoomNearby::new(
                Arc::new(AllocateAveragely),
                Arc::new(OneRoom),
            )),
        ];
        for s in &strategies {
            let name = s.name();
            assert_eq!(
                s.allocate("g", "nobody", &mqs, &ids),
                Ok(Vec::new()),
                "{name}"
            );
            assert_eq!(
                s.allocate("g", "", &[], &[]),
                Err(AllocateError::EmptyCurrentCid),
                "{name}"
            );
            assert_eq!(
                s.allocate("g", "x", &[], &[]),
                Err(AllocateError::EmptyQueues),
                "{name}"
            );
            assert_eq!(
                s.allocate("g", "x", &mqs, &[]),
                Err(AllocateError::EmptyConsumerIds),
                "{name}"
            );
        }
    }

    #[test]
    fn error_messages_start_with_java_text() {
        assert!(
            AllocateError::EmptyCurrentCid
                .to_string()
                .starts_with("currentCID is empty")
        );
        assert!(
            AllocateError::EmptyQueues
                .to_string()
                .starts_with("mqAll is null or mqAll empty")
        );
        assert!(
            AllocateError::EmptyConsumerIds
                .to_string()
                .starts_with("cidAll is null or cidAll empty")
        );
    }

    #[test]
    fn sort_consumer_ids_uses_utf16_order() {
        // U+1F600 is D83D DE00 in UTF-16 (sorts before U+FFFD) but F0.. in
        // UTF-8 (sorts after EF BF BD).
        let mut ids = vec![
            "a\u{FFFD}".to_string(),
            "a\u{1F600}".to_string(),
            "a".to_string(),
        ];
        sort_consumer_ids(&mut ids);
        assert_eq!(ids, ["a", "a\u{1F600}", "a\u{FFFD}"]);
    }

    #[test]
    fn sort_queues_by_topic_broker_then_numeric_id() {
        let mut mqs = vec![
            MessageQueue::new("T", "broker-b", 0),
            MessageQueue::new("T", "broker-a", 10),
            MessageQueue::new("S", "broker-z", 5),
            MessageQueue::new("T", "broker-a", 9),
        ];
        sort_queues(&mut mqs);
        assert_eq!(
            mqs,
            [
                MessageQueue::new("S", "broker-z", 5),
                MessageQueue::new("T", "broker-a", 9),
                MessageQueue::new("T", "broker-a", 10),
                MessageQueue::new("T", "broker-b", 0),
            ]
        );
    }

    #[test]
    fn every_strategy_reports_the_java_name() {
        let strategies: Vec<Box<dyn AllocateStrategy>> = vec![
            Box::new(AllocateAveragely),
            Box::new(AllocateAveragelyByCircle),
            Box::new(AllocateConsistentHash::default()),
            Box::new(AllocateByConfig::default()),
            Box::new(AllocateByMachineRoom::default()),
        ];
        let names: Vec<&str> = strategies.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "AVG",
                "AVG_BY_CIRCLE",
                "CONSISTENT_HASH",
                "CONFIG",
                "MACHINE_ROOM"
            ]
        );
    }
}
