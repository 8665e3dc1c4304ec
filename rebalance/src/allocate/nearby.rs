//! Java `AllocateMachineRoomNearby`: prefer consumers in the broker's machine room.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use rmq_protocol::{MessageQueue, java_string_cmp};

use super::{AllocateError, AllocateStrategy, CheckedStrategy, Member, checked_allocate};

/// Tells [`AllocateMachineRoomNearby`] which machine room a broker or a
/// consumer is deployed in (Java `AllocateMachineRoomNearby.MachineRoomResolver`).
///
/// Returning `None` or an empty string makes the allocation fail, as Java
/// fails on `null` or empty. Every member of the group must resolve alike.
pub trait MachineRoomResolver: Send + Sync + Debug {
    /// The machine room of the broker holding `queue`.
    fn broker_deploy_in(&self, queue: &MessageQueue) -> Option<String>;

    /// The machine room of the consumer with id `client_id`.
    fn consumer_deploy_in(&self, client_id: &str) -> Option<String>;
}

/// Wraps another strategy so that the queues of a machine room go to the
/// consumers in that room; the queues of rooms without any consumer are
/// shared by all consumers (Java `AllocateMachineRoomNearby`; name
/// `"MACHINE_ROOM_NEARBY-"` followed by the inner strategy's name).
///
/// For the current consumer the result is, in this order:
///
/// 1. the inner strategy applied to the queues of the consumer's own room and
///    the consumers of that room;
/// 2. for each other room that has queues but no consumer, in Java
///    `String.compareTo` order of the room names, the inner strategy applied
///    to that room's queues and all consumers.
///
/// Queues and consumers keep their input order inside each room.
///
/// [`allocate`](AllocateStrategy::allocate) fails with the common input
/// errors (see [`AllocateStrategy::allocate`]),
/// [`AllocateError::UnknownBrokerMachineRoom`] /
/// [`AllocateError::UnknownConsumerMachineRoom`] when the resolver names no
/// room, and any error of the inner strategy.
///
/// ```
/// use std::sync::Arc;
///
/// use rmq_protocol::MessageQueue;
/// use rmq_rebalance::allocate::{
///     AllocateAveragely, AllocateMachineRoomNearby, AllocateStrategy, MachineRoomResolver,
/// };
///
/// /// Brokers are named "room@broker", consumer ids "room-ip@instance".
/// #[derive(Debug)]
/// struct ByPrefix;
///
/// impl MachineRoomResolver for ByPrefix {
///     fn broker_deploy_in(&self, queue: &MessageQueue) -> Option<String> {
///         queue.broker_name.split('@').next().map(String::from)
///     }
///     fn consumer_deploy_in(&self, client_id: &str) -> Option<String> {
///         client_id.split('-').next().map(String::from)
///     }
/// }
///
/// # fn main() -> Result<(), rmq_rebalance::allocate::AllocateError> {
/// let strategy = AllocateMachineRoomNearby::new(Arc::new(AllocateAveragely), Arc::new(ByPrefix));
/// assert_eq!(strategy.name(), "MACHINE_ROOM_NEARBY-AVG");
///
/// let mq_all = vec![
///     MessageQueue::new("T", "hz@broker-a", 0),
///     MessageQueue::new("T", "sh@broker-b", 0),
/// ];
/// let cid_all: Vec<String> = ["hz-10.0.0.1@1", "sh-10.0.0.2@1"].map(String::from).into();
/// let mine = strategy.allocate("g", "sh-10.0.0.2@1", &mq_all, &cid_all)?;
/// assert_eq!(mine, [mq_all[1].clone()]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AllocateMachineRoomNearby {
    inner: Arc<dyn AllocateStrategy>,
    resolver: Arc<dyn MachineRoomResolver>,
    name: String,
}

impl AllocateMachineRoomNearby {
    /// Wraps `inner`, grouping queues and consumers with `resolver`.
    pub fn new(inner: Arc<dyn AllocateStrategy>, resolver: Arc<dyn MachineRoomResolver>) -> Self {
        let name = format!("MACHINE_ROOM_NEARBY-{}", inner.name());
        AllocateMachineRoomNearby {
            inner,
            resolver,
            name,
        }
    }

    /// The wrapped strategy.
    pub fn inner(&self) -> &Arc<dyn AllocateStrategy> {
        &self.inner
    }

    /// The machine room resolver.
    pub fn resolver(&self) -> &Arc<dyn MachineRoomResolver> {
        &self.resolver
    }
}

/// A room name ordered like Java's `TreeMap<String, _>` keys.
#[derive(Debug, PartialEq, Eq)]
struct Room(String);

impl Ord for Room {
    fn cmp(&self, other: &Self) -> Ordering {
        java_string_cmp(&self.0, &other.0)
    }
}

impl PartialOrd for Room {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn known(room: Option<String>) -> Option<String> {
    room.filter(|r| !r.is_empty())
}

impl AllocateStrategy for AllocateMachineRoomNearby {
    fn name(&self) -> &str {
        &self.name
    }

    checked_allocate!();
}

impl CheckedStrategy for AllocateMachineRoomNearby {
    fn allocate_member(&self, member: Member<'_>) -> Result<Vec<MessageQueue>, AllocateError> {
        let Member {
            group,
            cid: current_cid,
            mq_all,
            cid_all,
            ..
        } = member;
        let mut room_queues: BTreeMap<Room, Vec<MessageQueue>> = BTreeMap::new();
        for mq in mq_all {
            let room = known(self.resolver.broker_deploy_in(mq))
                .ok_or_else(|| AllocateError::UnknownBrokerMachineRoom { queue: mq.clone() })?;
            room_queues.entry(Room(room)).or_default().push(mq.clone());
        }
        let mut room_consumers: BTreeMap<Room, Vec<String>> = BTreeMap::new();
        for cid in cid_all {
            let room = known(self.resolver.consumer_deploy_in(cid)).ok_or_else(|| {
                AllocateError::UnknownConsumerMachineRoom {
                    client_id: cid.clone(),
                }
            })?;
            room_consumers
                .entry(Room(room))
                .or_default()
                .push(cid.clone());
        }

        let mut mine = Vec::new();
        // 1. This consumer's own room. Java does not re-check the resolver's
        //    answer here; it is the same call as above, so it is known.
        let current_room = Room(
            self.resolver
                .consumer_deploy_in(current_cid)
                .unwrap_or_default(),
        );
        if let Some(queues) = room_queues.remove(&current_room) {
            if !queues.is_empty() {
                let consumers = room_consumers
                    .get(&current_room)
                    .map_or(&[][..], Vec::as_slice);
                mine.extend(
                    self.inner
                        .allocate(group, current_cid, &queues, consumers)?,
                );
            }
        }
        // 2. Rooms with queues but no consumer are shared by everyone.
        for (room, queues) in &room_queues {
            if !room_consumers.contains_key(room) {
                mine.extend(self.inner.allocate(group, current_cid, queues, cid_all)?);
            }
        }
        Ok(mine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocate::{AllocateAveragely, AllocateAveragelyByCircle};

    #[derive(Debug)]
    struct ByPrefix;

    impl MachineRoomResolver for ByPrefix {
        fn broker_deploy_in(&self, queue: &MessageQueue) -> Option<String> {
            queue.broker_name.split('@').next().map(String::from)
        }
        fn consumer_deploy_in(&self, client_id: &str) -> Option<String> {
            client_id.split('-').next().map(String::from)
        }
    }

    fn mq(broker: &str, id: i32) -> MessageQueue {
        MessageQueue::new("T", broker, id)
    }

    #[test]
    fn own_room_first_then_rooms_without_consumers() {
        let s = AllocateMachineRoomNearby::new(Arc::new(AllocateAveragely), Arc::new(ByPrefix));
        let mq_all = vec![
            mq("a@b1", 0),
            mq("a@b1", 1),
            mq("b@b2", 0),
            mq("b@b2", 1),
            mq("c@b3", 0),
            mq("c@b3", 1),
        ];
        let cid_all: Vec<String> = ["a-1", "a-2", "b-1"].map(String::from).into();
        let got = |cid: &str| s.allocate("g", cid, &mq_all, &cid_all).unwrap();
        // Room c has no consumer: its two queues are shared by all three.
        assert_eq!(got("a-1"), [mq("a@b1", 0), mq("c@b3", 0)]);
        assert_eq!(got("a-2"), [mq("a@b1", 1), mq("c@b3", 1)]);
        assert_eq!(got("b-1"), [mq("b@b2", 0), mq("b@b2", 1)]);
        assert!(got("z-9").is_empty());
        assert_eq!(s.name(), "MACHINE_ROOM_NEARBY-AVG");
        assert_eq!(s.inner().name(), "AVG");
        assert!(format!("{:?}", s.resolver()).contains("ByPrefix"));
    }

    #[test]
    fn unknown_rooms_are_errors() {
        let s =
            AllocateMachineRoomNearby::new(Arc::new(AllocateAveragelyByCircle), Arc::new(ByPrefix));
        let cid_all: Vec<String> = ["a-1"].map(String::from).into();
        assert_eq!(
            s.allocate("g", "a-1", &[mq("@b1", 0)], &cid_all),
            Err(AllocateError::UnknownBrokerMachineRoom {
                queue: mq("@b1", 0)
            })
        );
        let cid_all: Vec<String> = ["-1", "a-1"].map(String::from).into();
        assert_eq!(
            s.allocate("g", "a-1", &[mq("a@b1", 0)], &cid_all),
            Err(AllocateError::UnknownConsumerMachineRoom {
                client_id: "-1".into()
            })
        );
    }
}
