//! Java `AllocateMessageQueueAveragelyByCircle`: deal the queues like cards.

use rmq_protocol::MessageQueue;

use super::{AllocateError, AllocateStrategy, CheckedStrategy, Member, checked_allocate};

/// Deals the sorted queues to the sorted consumers like cards: consumer `i`
/// gets queues `i`, `i + C`, `i + 2C`, … (Java
/// `AllocateMessageQueueAveragelyByCircle`; name `"AVG_BY_CIRCLE"`).
///
/// ```
/// use rmq_protocol::MessageQueue;
/// use rmq_rebalance::allocate::{AllocateAveragelyByCircle, AllocateStrategy};
///
/// # fn main() -> Result<(), rmq_rebalance::allocate::AllocateError> {
/// let mq_all: Vec<_> = (0..8).map(|q| MessageQueue::new("T", "broker-a", q)).collect();
/// let cid_all: Vec<String> = ["c0", "c1", "c2"].map(String::from).into();
/// let mine = AllocateAveragelyByCircle.allocate("g", "c1", &mq_all, &cid_all)?;
/// let ids: Vec<i32> = mine.iter().map(|mq| mq.queue_id).collect();
/// assert_eq!(ids, [1, 4, 7]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AllocateAveragelyByCircle;

impl AllocateStrategy for AllocateAveragelyByCircle {
    fn name(&self) -> &str {
        "AVG_BY_CIRCLE"
    }

    checked_allocate!();
}

impl CheckedStrategy for AllocateAveragelyByCircle {
    fn allocate_member(&self, member: Member<'_>) -> Result<Vec<MessageQueue>, AllocateError> {
        // `check` guarantees cid_all is not empty, so the step is >= 1.
        Ok(member
            .mq_all
            .iter()
            .skip(member.index)
            .step_by(member.cid_all.len().max(1))
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::allocate::test_support::{cids, queues};

    fn positions(m: usize, c: usize) -> Vec<Vec<usize>> {
        let mqs = queues(m, 1);
        let ids = cids(c);
        ids.iter()
            .map(|id| {
                AllocateAveragelyByCircle
                    .allocate("g", id, &mqs, &ids)
                    .unwrap()
                    .iter()
                    .map(|mq| mqs.iter().position(|q| q == mq).unwrap())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn deals_like_cards() {
        assert_eq!(positions(8, 3), [vec![0, 3, 6], vec![1, 4, 7], vec![2, 5]]);
        assert_eq!(positions(2, 3), [vec![0], vec![1], vec![]]);
        assert_eq!(positions(3, 1), [vec![0, 1, 2]]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Every queue goes to exactly one consumer; counts differ by at most one.
        #[test]
        fn partitions_mq_all(m in 1usize..200, c in 1usize..64, brokers in 1usize..4) {
            let mqs = queues(m, brokers);
            let ids = cids(c);
            let mut owner = vec![None; m];
            let mut lens = Vec::new();
            for (ci, id) in ids.iter().enumerate() {
                let got = AllocateAveragelyByCircle.allocate("g", id, &mqs, &ids).unwrap();
                lens.push(got.len());
                for mq in got {
                    let p = mqs.iter().position(|q| *q == mq).unwrap();
                    prop_assert_eq!(owner[p], None, "queue {} allocated twice", p);
                    prop_assert_eq!(p % c, ci);
                    owner[p] = Some(ci);
                }
            }
            prop_assert!(owner.iter().all(Option::is_some));
            let max = lens.iter().copied().max().unwrap();
            let min = lens.iter().copied().min().unwrap();
            prop_assert!(max - min <= 1);
        }
    }
}
