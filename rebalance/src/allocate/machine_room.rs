//! Java `AllocateMessageQueueByMachineRoom`: only queues of chosen machine rooms.

use std::collections::BTreeSet;

use rmq_protocol::MessageQueue;

use super::{AllocateError, AllocateStrategy, CheckedStrategy, Member, checked_allocate};

/// Allocates only the queues of brokers named `"{room}@{broker}"` whose room
/// is in a configured set, split evenly over all consumers (Java
/// `AllocateMessageQueueByMachineRoom`; name `"MACHINE_ROOM"`).
///
/// The selected queues keep their `mq_all` order. With `P` selected queues
/// and `C` consumers, consumer `i` gets the block `[i * (P / C), (i + 1) *
/// (P / C))` and, if `i < P % C`, also queue `i + (P / C) * C` from the tail.
///
/// The broker name is split at `'@'` the way Java's `String.split("@")` does
/// (trailing empty parts dropped); a queue is selected when that gives exactly
/// two parts and the first is in the set. So `"room1@broker-a"` and
/// `"room1@broker-a@"` are in `room1`, while `"room1@x@y"`, `"room1@"` and
/// `"broker-a"` are in no room.
///
/// ```
/// use rmq_protocol::MessageQueue;
/// use rmq_rebalance::allocate::{AllocateByMachineRoom, AllocateStrategy};
///
/// # fn main() -> Result<(), rmq_rebalance::allocate::AllocateError> {
/// let mq_all = vec![
///     MessageQueue::new("T", "hz@broker-a", 0),
///     MessageQueue::new("T", "hz@broker-a", 1),
///     MessageQueue::new("T", "sh@broker-b", 0),
/// ];
/// let cid_all: Vec<String> = ["c0", "c1"].map(String::from).into();
/// let strategy = AllocateByMachineRoom::new(["hz"]);
/// assert_eq!(strategy.allocate("g", "c1", &mq_all, &cid_all)?, [mq_all[1].clone()]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllocateByMachineRoom {
    consumer_idcs: BTreeSet<String>,
}

impl AllocateByMachineRoom {
    /// A strategy that consumes from brokers in the machine rooms `idcs`
    /// (Java `setConsumeridcs`). With no rooms nothing is allocated.
    pub fn new<S: Into<String>>(idcs: impl IntoIterator<Item = S>) -> Self {
        AllocateByMachineRoom {
            consumer_idcs: idcs.into_iter().map(Into::into).collect(),
        }
    }

    /// The machine rooms whose queues are consumed (Java `getConsumeridcs`).
    pub fn consumer_idcs(&self) -> &BTreeSet<String> {
        &self.consumer_idcs
    }
}

/// The machine room of a broker named `"{room}@{broker}"`: the first part
/// when Java's `brokerName.split("@")` yields exactly two parts.
fn machine_room(broker_name: &str) -> Option<&str> {
    // Java's split drops trailing empty parts, so ignore trailing '@'s.
    let trimmed = broker_name.trim_end_matches('@');
    let mut parts = trimmed.split('@');
    let room = parts.next()?;
    let _broker = parts.next()?;
    if parts.next().is_some() {
        return None;
    }
    Some(room)
}

impl AllocateStrategy for AllocateByMachineRoom {
    fn name(&self) -> &str {
        "MACHINE_ROOM"
    }

    checked_allocate!();
}

impl CheckedStrategy for AllocateByMachineRoom {
    fn allocate_member(&self, member: Member<'_>) -> Result<Vec<MessageQueue>, AllocateError> {
        let Member {
            index,
            mq_all,
            cid_all,
            ..
        } = member;
        let selected: Vec<&MessageQueue> = mq_all
            .iter()
            .filter(|mq| {
                machine_room(&mq.broker_name).is_some_and(|room| self.consumer_idcs.contains(room))
            })
            .collect();
        let c = cid_all.len();
        let per = selected.len() / c;
        let rem = selected.len() % c;
        let start = index.saturating_mul(per);
        let mut mine: Vec<MessageQueue> = selected
            .iter()
            .skip(start)
            .take(per)
            .map(|mq| (*mq).clone())
            .collect();
        if rem > index {
            let extra = per.checked_mul(c).and_then(|tail| tail.checked_add(index));
            if let Some(mq) = extra.and_then(|i| selected.get(i)) {
                mine.push((*mq).clone());
            }
        }
        Ok(mine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_room_splits_like_java() {
        assert_eq!(machine_room("room1@broker-a"), Some("room1"));
        assert_eq!(machine_room("room1@broker-a@"), Some("room1"));
        assert_eq!(machine_room("room1@broker-a@@"), Some("room1"));
        assert_eq!(machine_room("@broker-a"), Some(""));
        assert_eq!(machine_room("room1@x@y"), None);
        assert_eq!(machine_room("room1@"), None);
        assert_eq!(machine_room("room1@@"), None);
        assert_eq!(machine_room("@@"), None);
        assert_eq!(machine_room("broker-a"), None);
        assert_eq!(machine_room(""), None);
    }

    #[test]
    fn splits_selected_queues_with_tail_remainder() {
        // 7 selected queues over 3 consumers: blocks of 2, the tail queue 6
        // goes to consumer 0.
        let mut mq_all: Vec<MessageQueue> = (0..7)
            .map(|q| MessageQueue::new("T", "hz@broker-a", q))
            .collect();
        mq_all.push(MessageQueue::new("T", "sh@broker-b", 0));
        let cid_all: Vec<String> = ["c0", "c1", "c2"].map(String::from).into();
        let s = AllocateByMachineRoom::new(["hz"]);
        let ids = |cid: &str| -> Vec<i32> {
            s.allocate("g", cid, &mq_all, &cid_all)
                .unwrap()
                .iter()
                .map(|mq| mq.queue_id)
                .collect()
        };
        assert_eq!(ids("c0"), [0, 1, 6]);
        assert_eq!(ids("c1"), [2, 3]);
        assert_eq!(ids("c2"), [4, 5]);
        assert!(ids("nobody").is_empty());
        assert!(
            AllocateByMachineRoom::default()
                .allocate("g", "c0", &mq_all, &cid_all)
                .unwrap()
                .is_empty()
        );
        assert_eq!(s.consumer_idcs().len(), 1);
    }
}
