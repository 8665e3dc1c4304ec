//! Queue allocation strategies: which of a topic's queues this consumer reads.
//!
//! In a clustering consumer group every member runs the same strategy on the
//! same inputs — all queues of the topic (`mq_all`) and all consumer ids of the
//! group (`cid_all`), both **sorted** — and keeps the part that falls to its own
//! id. The members never talk to each other, so the strategies must be pure
//! and deterministic, and a Rust consumer sharing a group with Java consumers
//! must compute exactly what the Java client computes. Every strategy here is
//! checked against vectors produced by the Java classes
//! (`tests/java_vectors.rs`).
//!
//! | Rust | Java (`org.apache.rocketmq.client.consumer.rebalance`) | [`name`](AllocateStrategy::name) |
//! |------|------|------|
//! | [`AllocateAveragely`] | `AllocateMessageQueueAveragely` (the default) | `AVG` |
//! | [`AllocateAveragelyByCircle`] | `AllocateMessageQueueAveragelyByCircle` | `AVG_BY_CIRCLE` |
//! | [`AllocateConsistentHash`] | `AllocateMessageQueueConsistentHash` | `CONSISTENT_HASH` |
//! | [`AllocateByConfig`] | `AllocateMessageQueueByConfig` | `CONFIG` |
//! | [`AllocateByMachineRoom`] | `AllocateMessageQueueByMachineRoom` | `MACHINE_ROOM` |
//! | [`AllocateMachineRoomNearby`] | `AllocateMachineRoomNearby` | `MACHINE_ROOM_NEARBY-<inner>` |
//!
//! # Example
//!
//! ```
//! use rmq_protocol::MessageQueue;
//! use rmq_rebalance::allocate::{
//!     AllocateAveragely, AllocateStrategy, sort_consumer_ids, sort_queues,
//! };
//!
//! # fn main() -> Result<(), rmq_rebalance::allocate::AllocateError> {
//! // 8 queues, 3 consumers: the averagely strategy hands out 3, 3 and 2 queues.
//! let mut mq_all: Vec<MessageQueue> =
//!     (0..8).map(|id| MessageQueue::new("TopicTest", "broker-a", id)).collect();
//! let mut cid_all: Vec<String> =
//!     ["10.0.0.3@DEFAULT", "10.0.0.1@DEFAULT", "10.0.0.2@DEFAULT"].map(String::from).into();
//! // The caller sorts both lists (Java order) before allocating.
//! sort_queues(&mut mq_all);
//! sort_consumer_ids(&mut cid_all);
//!
//! let strategy = AllocateAveragely;
//! let mine = strategy.allocate("my_group", "10.0.0.2@DEFAULT", &mq_all, &cid_all)?;
//! let ids: Vec<i32> = mine.iter().map(|mq| mq.queue_id).collect();
//! assert_eq!(ids, [3, 4, 5]);
//!
//! // An id that is not in the consumer list gets nothing (Java logs a warning).
//! assert!(strategy.allocate("my_group", "10.0.0.9@DEFAULT", &mq_all, &cid_all)?.is_empty());
//! # Ok(())
//! # }
//! ```

pub use crate::error::AllocateError;

mod averagely;
mod by_circle;
mod by_config;
mod consistent_hash;
mod machine_room;
mod nearby;
mod strategy;

pub use averagely::AllocateAveragely;
pub use by_circle::AllocateAveragelyByCircle;
pub use by_config::AllocateByConfig;
pub use consistent_hash::{AllocateConsistentHash, HashFunction, Md5Hash};
pub use machine_room::AllocateByMachineRoom;
pub use nearby::{AllocateMachineRoomNearby, MachineRoomResolver};
#[cfg(test)]
pub(crate) use strategy::test_support;
pub use strategy::{AllocateStrategy, sort_consumer_ids, sort_queues};
pub(crate) use strategy::{CheckedStrategy, Member, checked_allocate};
