//! The error type of the allocation strategies.

use rmq_protocol::MessageQueue;

/// Why a strategy refused to allocate queues.
///
/// The first three variants are the checks every Java strategy runs first
/// (`AbstractAllocateMessageQueueStrategy.check`, which throws
/// `IllegalArgumentException`); their messages start with the Java text so
/// logs from both clients read alike. A consumer id that is missing from the
/// consumer list is *not* an error: like Java, the strategies return an empty
/// allocation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocateError {
    /// This consumer's client id is the empty string.
    #[error(
        "currentCID is empty: set the consumer's client id before allocating queues \
         (the rebalancer passes the client instance id)"
    )]
    EmptyCurrentCid,
    /// The topic has no queues to allocate.
    #[error(
        "mqAll is null or mqAll empty: the topic has no readable queues; \
         skip it until its route lists queues"
    )]
    EmptyQueues,
    /// The consumer group has no consumer ids.
    #[error(
        "cidAll is null or cidAll empty: the broker returned no consumer ids for the group; \
         send a heartbeat and rebalance again later"
    )]
    EmptyConsumerIds,
    /// A [`MachineRoomResolver`](crate::MachineRoomResolver) returned no
    /// machine room (or an empty one) for a queue's broker.
    #[error(
        "Machine room is null for mq {queue}: the MachineRoomResolver must name a machine room \
         for every broker"
    )]
    UnknownBrokerMachineRoom {
        /// The queue whose broker has no machine room.
        queue: MessageQueue,
    },
    /// A [`MachineRoomResolver`](crate::MachineRoomResolver) returned no
    /// machine room (or an empty one) for a consumer id.
    #[error(
        "Machine room is null for consumer id {client_id}: the MachineRoomResolver must name a \
         machine room for every consumer id"
    )]
    UnknownConsumerMachineRoom {
        /// The consumer id without a machine room.
        client_id: String,
    },
}
