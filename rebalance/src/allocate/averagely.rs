//! Java `AllocateMessageQueueAveragely`: contiguous blocks, bigger ones first.

use std::ops::Range;

use rmq_protocol::MessageQueue;

use super::{AllocateError, AllocateStrategy, CheckedStrategy, Member, checked_allocate};

/// Splits the sorted queues into one contiguous block per consumer, in
/// consumer order; block sizes differ by at most one and the bigger blocks
/// come first (Java `AllocateMessageQueueAveragely`, the Java client's
/// default strategy; name `"AVG"`).
///
/// With `M` queues and `C` consumers, consumer `i` (its position in the
/// sorted `cid_all`) gets `M / C + 1` queues if `i < M % C`, else `M / C`.
/// When `M < C` the last `C - M` consumers get nothing.
///
/// ```
/// use rmq_protocol::MessageQueue;
/// use rmq_rebalance::allocate::{AllocateAveragely, AllocateStrategy};
///
/// # fn main() -> Result<(), rmq_rebalance::allocate::AllocateError> {
/// let mq_all: Vec<_> = (0..8).map(|q| MessageQueue::new("T", "broker-a", q)).collect();
/// let cid_all: Vec<String> = ["c0", "c1", "c2"].map(String::from).into();
/// let sizes: Vec<usize> = cid_all
///     .iter()
///     .map(|cid| AllocateAveragely.allocate("g", cid, &mq_all, &cid_all).map(|v| v.len()))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(sizes, [3, 3, 2]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AllocateAveragely;

/// The positions in `mq_all` (length `m`) that consumer number `index` of
/// `c` consumers gets.
pub(crate) fn block(index: usize, m: usize, c: usize) -> Range<usize> {
    if c == 0 {
        return 0..0;
    }
    let rem = m % c;
    let bigger = rem > 0 && index < rem;
    let size = if m <= c {
        1
    } else if bigger {
        m / c + 1
    } else {
        m / c
    };
    let start = index
        .checked_mul(size)
        .and_then(|s| if bigger { Some(s) } else { s.checked_add(rem) });
    match start {
        Some(start) if start < m => {
            let count = size.min(m - start);
            start..start + count
        }
        _ => 0..0,
    }
}

impl AllocateStrategy for AllocateAveragely {
    fn name(&self) -> &str {
        "AVG"
    }

    checked_allocate!();
}

impl CheckedStrategy for AllocateAveragely {
    fn allocate_member(&self, member: Member<'_>) -> Result<Vec<MessageQueue>, AllocateError> {
        let range = block(member.index, member.mq_all.len(), member.cid_all.len());
        Ok(member
            .mq_all
            .get(range)
            .map(<[_]>::to_vec)
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::allocate::test_support::{cids, queues};

    fn sizes(m: usize, c: usize) -> Vec<usize> {
        let mqs = queues(m, 2);
        let ids = cids(c);
        ids.iter()
            .map(|id| {
                AllocateAveragely
                    .allocate("g", id, &mqs, &ids)
                    .unwrap()
                    .len()
            })
            .collect()
    }

    #[test]
    fn doc_examples() {
        assert_eq!(sizes(8, 3), [3, 3, 2]);
        assert_eq!(sizes(2, 3), [1, 1, 0]);
        let mqs = queues(8, 1);
        let ids = cids(3);
        let got = AllocateAveragely
            .allocate("g", &ids[2], &mqs, &ids)
            .unwrap();
        assert_eq!(got, mqs[6..8]);
    }

    #[test]
    fn equal_counts_and_single_consumer() {
        assert_eq!(sizes(3, 3), [1, 1, 1]);
        assert_eq!(sizes(6, 3), [2, 2, 2]);
        assert_eq!(sizes(5, 1), [5]);
        assert_eq!(sizes(1, 4), [1, 0, 0, 0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Every queue goes to exactly one consumer, as contiguous blocks in
        /// consumer order whose sizes differ by at most one, bigger first.
        #[test]
        fn partitions_into_contiguous_blocks(m in 1usize..200, c in 1usize..64, brokers in 1usize..4) {
            let mqs = queues(m, brokers);
            let ids = cids(c);
            let mut union = Vec::new();
            let mut lens = Vec::new();
            for id in &ids {
                let got = AllocateAveragely.allocate("g", id, &mqs, &ids).unwrap();
                lens.push(got.len());
                union.extend(got);
            }
            // Concatenating the blocks in consumer order gives mq_all back:
            // contiguous, in order, no overlap, nothing missing.
            prop_assert_eq!(&union, &mqs);
            let max = lens.iter().copied().max().unwrap();
            let min = lens.iter().copied().min().unwrap();
            prop_assert!(max - min <= 1);
            prop_assert!(lens.windows(2).all(|w| w[0] >= w[1]));
        }
    }
}
