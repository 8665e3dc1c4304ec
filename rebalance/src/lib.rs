//! Queue allocation for rmq consumers: which queues of a topic each member of
//! a clustering consumer group reads.
//!
//! This crate holds the [`AllocateStrategy`] trait and the Java client's
//! strategies ([`allocate`]), each giving exactly the Java result for the same
//! inputs, so Rust and Java consumers can share a group. The strategies are
//! pure logic: no I/O, no clocks, no tasks.
//!
//! The [`rebalancer`] module puts them to work for a consumer: [`Rebalancer`]
//! fetches the topic's queues and the group's consumer ids and allocates,
//! [`diff`] compares the result with what the consumer holds, and
//! [`RebalanceTrigger`] says when to run (every 20 s, at once on
//! NOTIFY_CONSUMER_IDS_CHANGED, at least 1 s apart).
//!
//! The [`lock`] module holds the broker-side queue locks of orderly
//! consumers ([`QueueLocks`]: LOCK_BATCH_MQ, renewal, lease, UNLOCK_BATCH_MQ).
//!
//! # Example
//!
//! ```
//! use rmq_protocol::MessageQueue;
//! use rmq_rebalance::{AllocateAveragely, AllocateStrategy, sort_consumer_ids, sort_queues};
//!
//! # fn main() -> Result<(), rmq_rebalance::AllocateError> {
//! let mut mq_all: Vec<MessageQueue> =
//!     (0..2).map(|id| MessageQueue::new("TopicTest", "broker-a", id)).collect();
//! let mut cid_all: Vec<String> = ["c2", "c0", "c1"].map(String::from).into();
//! sort_queues(&mut mq_all);
//! sort_consumer_ids(&mut cid_all);
//!
//! // 2 queues, 3 consumers: the last consumer (in sorted order) idles.
//! let sizes: Vec<usize> = cid_all
//!     .iter()
//!     .map(|cid| AllocateAveragely.allocate("g", cid, &mq_all, &cid_all).map(|v| v.len()))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(sizes, [1, 1, 0]);
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

pub mod allocate;
mod error;
pub mod lock;
pub mod rebalancer;

pub use allocate::{
    AllocateAveragely, AllocateAveragelyByCircle, AllocateByConfig, AllocateByMachineRoom,
    AllocateConsistentHash, AllocateMachineRoomNearby, AllocateStrategy, HashFunction,
    MachineRoomResolver, Md5Hash, sort_consumer_ids, sort_queues,
};
pub use error::AllocateError;
pub use lock::{
    BROKER_LOCK_LEASE, DEFAULT_LOCK_LEASE, DEFAULT_LOCK_RENEW_INTERVAL, LockState, QueueLocks,
};
pub use rebalancer::{
    DEFAULT_MIN_REBALANCE_INTERVAL, DEFAULT_REBALANCE_INTERVAL, Error, RebalanceDiff,
    RebalanceTrigger, Rebalancer, Result, diff,
};
