//! Java `AllocateMessageQueueConsistentHash`: a hash ring of consumer ids.

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Debug};
use std::sync::Arc;

use md5::{Digest, Md5};
use rmq_protocol::MessageQueue;

use super::{AllocateError, AllocateStrategy, CheckedStrategy, Member, checked_allocate};

/// Hashes a ring key to a position on the ring (Java
/// `org.apache.rocketmq.common.consistenthash.HashFunction`).
///
/// Positions are ordered as signed 64-bit integers, like Java's `Long` keys.
pub trait HashFunction: Send + Sync + Debug {
    /// The ring position of `key`.
    fn hash(&self, key: &str) -> i64;
}

/// The Java default hash (`ConsistentHashRouter.MD5Hash`): the first four
/// bytes of the MD5 digest of the key's UTF-8 bytes, read as an unsigned
/// big-endian 32-bit number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Md5Hash;

impl HashFunction for Md5Hash {
    fn hash(&self, key: &str) -> i64 {
        let digest = Md5::digest(key.as_bytes());
        let mut first = [0u8; 4];
        for (dst, src) in first.iter_mut().zip(digest.iter()) {
            *dst = *src;
        }
        i64::from(u32::from_be_bytes(first))
    }
}

/// Places every consumer on a hash ring with a number of virtual nodes and
/// gives each queue to the first virtual node at or after the queue's hash,
/// wrapping around (Java `AllocateMessageQueueConsistentHash`; name
/// `"CONSISTENT_HASH"`).
///
/// Unlike the averagely strategies, a consumer joining or leaving moves only
/// the queues next to its virtual nodes, but the shares are uneven.
///
/// The ring is exactly Java's `ConsistentHashRouter`:
///
/// * consumer `cid`'s virtual nodes are the keys `"{cid}-0"` …
///   `"{cid}-{n-1}"`, added in `cid_all` order (a consumer id listed twice
///   continues the numbering: its second entry adds `"{cid}-{n}"` …);
/// * when two keys hash to the same position the one added later wins;
/// * a queue's key is Java's `MessageQueue.toString()`:
///   `"MessageQueue [topic={topic}, brokerName={broker}, queueId={id}]"`;
/// * the hash is [`Md5Hash`] unless another [`HashFunction`] is given.
///
/// With zero virtual nodes the ring is empty and nobody gets anything, as in
/// Java.
///
/// ```
/// use rmq_protocol::MessageQueue;
/// use rmq_rebalance::allocate::{AllocateConsistentHash, AllocateStrategy};
///
/// # fn main() -> Result<(), rmq_rebalance::allocate::AllocateError> {
/// let mq_all: Vec<_> = (0..8).map(|q| MessageQueue::new("T", "broker-a", q)).collect();
/// let cid_all: Vec<String> = ["c0", "c1", "c2"].map(String::from).into();
/// let strategy = AllocateConsistentHash::default(); // 10 virtual nodes
/// let mut total = 0;
/// for cid in &cid_all {
///     total += strategy.allocate("g", cid, &mq_all, &cid_all)?.len();
/// }
/// assert_eq!(total, 8); // every queue has exactly one owner
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AllocateConsistentHash {
    virtual_nodes: usize,
    hash: Option<Arc<dyn HashFunction>>,
}

impl AllocateConsistentHash {
    /// Java's default number of virtual nodes per consumer.
    pub const DEFAULT_VIRTUAL_NODES: usize = 10;

    /// A ring with `virtual_nodes` virtual nodes per consumer and the MD5
    /// hash (Java `new AllocateMessageQueueConsistentHash(virtualNodeCnt)`).
    pub fn new(virtual_nodes: usize) -> Self {
        AllocateConsistentHash {
            virtual_nodes,
            hash: None,
        }
    }

    /// A ring with a custom hash function (Java
    /// `new AllocateMessageQueueConsistentHash(virtualNodeCnt, customHashFunction)`).
    /// Every member of the group must use the same function.
    pub fn with_hash_function(virtual_nodes: usize, hash: Arc<dyn HashFunction>) -> Self {
        AllocateConsistentHash {
            virtual_nodes,
            hash: Some(hash),
        }
    }

    /// Virtual nodes per consumer.
    pub fn virtual_nodes(&self) -> usize {
        self.virtual_nodes
    }

    fn hash(&self, key: &str) -> i64 {
        match &self.hash {
            Some(f) => f.hash(key),
            None => Md5Hash.hash(key),
        }
    }

    /// The ring: position → index into `cid_all` of the owning consumer.
    fn ring(&self, cid_all: &[String]) -> BTreeMap<i64, usize> {
        let mut ring = BTreeMap::new();
        // How many ring entries each consumer id owns right now (Java
        // `getExistingReplicas`, which counts by key, after overwrites).
        let mut live: HashMap<&str, usize> = HashMap::new();
        for (owner, cid) in cid_all.iter().enumerate() {
            let existing = live.get(cid.as_str()).copied().unwrap_or(0);
            for i in 0..self.virtual_nodes {
                let replica = existing.saturating_add(i);
                let position = self.hash(&format!("{cid}-{replica}"));
                if let Some(previous) = ring.insert(position, owner) {
                    if let Some(count) = cid_all
                        .get(previous)
                        .and_then(|prev| live.get_mut(prev.as_str()))
                    {
                        *count = count.saturating_sub(1);
                    }
                }
                let count = live.entry(cid.as_str()).or_insert(0);
                *count = count.saturating_add(1);
            }
        }
        ring
    }
}

impl Default for AllocateConsistentHash {
    /// Ten virtual nodes and the MD5 hash (Java's no-argument constructor).
    fn default() -> Self {
        AllocateConsistentHash::new(Self::DEFAULT_VIRTUAL_NODES)
    }
}

impl Debug for AllocateConsistentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AllocateConsistentHash")
            .field("virtual_nodes", &self.virtual_nodes)
            .field(
                "hash",
                &self.hash.as_ref().map_or(&Md5Hash as &dyn Debug, |h| h),
            )
            .finish()
    }
}

/// Java's `MessageQueue.toString()`, the key a queue is hashed by.
fn queue_key(mq: &MessageQueue) -> String {
    format!(
        "MessageQueue [topic={}, brokerName={}, queueId={}]",
        mq.topic, mq.broker_name, mq.queue_id
    )
}

impl AllocateStrategy for AllocateConsistentHash {
    fn name(&self) -> &str {
        "CONSISTENT_HASH"
    }

    checked_allocate!();
}

impl CheckedStrategy for AllocateConsistentHash {
    fn allocate_member(&self, member: Member<'_>) -> Result<Vec<MessageQueue>, AllocateError> {
        let ring = self.ring(member.cid_all);
        let mut mine = Vec::new();
        for mq in member.mq_all {
            let position = self.hash(&queue_key(mq));
            let owner = ring
                .range(position..)
                .next()
                .or_else(|| ring.iter().next())
                .and_then(|(_, owner)| member.cid_all.get(*owner));
            if owner.is_some_and(|cid| cid == member.cid) {
                mine.push(mq.clone());
            }
        }
        Ok(mine)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::allocate::test_support::{cids, queues};

    fn owners(s: &AllocateConsistentHash, mqs: &[MessageQueue], ids: &[String]) -> Vec<usize> {
        let mut owner = vec![usize::MAX; mqs.len()];
        for (ci, id) in ids.iter().enumerate() {
            for mq in s.allocate("g", id, mqs, ids).unwrap() {
                let p = mqs.iter().position(|q| *q == mq).unwrap();
                assert_eq!(owner[p], usize::MAX, "queue {p} allocated twice");
                owner[p] = ci;
            }
        }
        owner
    }

    #[test]
    fn md5_hash_matches_java() {
        // MD5("") = d41d8cd9..., MD5("abc") = 900150983cd24fb0...
        assert_eq!(Md5Hash.hash(""), 0xd41d_8cd9);
        assert_eq!(Md5Hash.hash("abc"), 0x9001_5098);
    }

    #[test]
    fn queue_key_is_java_to_string() {
        assert_eq!(
            queue_key(&MessageQueue::new("TopicTest", "broker-a", 3)),
            "MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]"
        );
    }

    /// Fixed vectors, taken from the Java client's output (5.5.0).
    #[test]
    fn fixed_vectors() {
        let mqs: Vec<MessageQueue> = (0..8)
            .map(|q| MessageQueue::new("TopicTest", "broker-a", q))
            .collect();
        let ids: Vec<String> = ["10.0.0.1@DEFAULT", "10.0.0.2@DEFAULT", "10.0.0.3@DEFAULT"]
            .map(String::from)
            .into();
        let ten = owners(&AllocateConsistentHash::default(), &mqs, &ids);
        let three = owners(&AllocateConsistentHash::new(3), &mqs, &ids);
        assert_eq!(ten, FIXED_TEN);
        assert_eq!(three, FIXED_THREE);
    }

    /// Owner (index into the ids) of queues 0..8 with 10 virtual nodes.
    const FIXED_TEN: [usize; 8] = [2, 1, 0, 2, 0, 1, 2, 1];
    /// The same with 3 virtual nodes.
    const FIXED_THREE: [usize; 8] = [2, 0, 2, 0, 0, 1, 1, 0];

    #[test]
    fn zero_virtual_nodes_allocates_nothing() {
        let mqs = queues(4, 1);
        let ids = cids(2);
        let s = AllocateConsistentHash::new(0);
        for id in &ids {
            assert!(s.allocate("g", id, &mqs, &ids).unwrap().is_empty());
        }
    }

    #[test]
    fn custom_hash_function_is_used() {
        /// Everything hashes to 0: the last virtual node added owns the ring.
        #[derive(Debug)]
        struct Zero;
        impl HashFunction for Zero {
            fn hash(&self, _key: &str) -> i64 {
                0
            }
        }
        let mqs = queues(4, 1);
        let ids = cids(3);
        let s = AllocateConsistentHash::with_hash_function(2, Arc::new(Zero));
        assert_eq!(owners(&s, &mqs, &ids), [2, 2, 2, 2]);
        assert_eq!(s.virtual_nodes(), 2);
        assert!(format!("{s:?}").contains("Zero"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Every queue has exactly one owner, and the result is deterministic.
        #[test]
        fn partitions_mq_all(m in 1usize..64, c in 1usize..16, brokers in 1usize..4, vn in 1usize..20) {
            let mqs = queues(m, brokers);
            let ids = cids(c);
            let s = AllocateConsistentHash::new(vn);
            let first = owners(&s, &mqs, &ids);
            prop_assert!(first.iter().all(|&o| o < c));
            prop_assert_eq!(first, owners(&s, &mqs, &ids));
        }
    }
}
