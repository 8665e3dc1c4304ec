//! Long polling (Java `PullRequestHoldService`): pulls that found nothing
//! wait here, per queue, until a matching message arrives or their suspend
//! time is up; either way the pull is then run again and answered.

use std::collections::HashMap;

use tokio::sync::oneshot;

use super::filter::MessageFilter;
use crate::fault::ConnectionId;

/// One suspended pull.
#[derive(Debug)]
pub(crate) struct HeldPull {
    pub(crate) id: u64,
    /// The connection it came on.
    pub(crate) conn: ConnectionId,
    /// The offset it asked for.
    pub(crate) offset: i64,
    pub(crate) filter: MessageFilter,
    /// Fired to run the pull again now.
    pub(crate) wake: oneshot::Sender<()>,
}

#[derive(Debug, Default)]
pub(crate) struct Holds {
    table: HashMap<String, HashMap<i32, Vec<HeldPull>>>,
    next_id: u64,
}

impl Holds {
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id = self.next_id.wrapping_add(1);
        self.next_id
    }

    pub(crate) fn hold(&mut self, topic: &str, queue_id: i32, pull: HeldPull) {
        self.table
            .entry(topic.to_owned())
            .or_default()
            .entry(queue_id)
            .or_default()
            .push(pull);
    }

    /// Forgets a pull (it timed out or its connection closed).
    pub(crate) fn remove(&mut self, topic: &str, queue_id: i32, id: u64) {
        if let Some(queues) = self.table.get_mut(topic) {
            if let Some(list) = queues.get_mut(&queue_id) {
                list.retain(|p| p.id != id);
                if list.is_empty() {
                    queues.remove(&queue_id);
                }
            }
            if queues.is_empty() {
                self.table.remove(topic);
            }
        }
    }

    /// Forgets every pull of a closed connection.
    pub(crate) fn remove_conn(&mut self, conn: ConnectionId) {
        for queues in self.table.values_mut() {
            for list in queues.values_mut() {
                list.retain(|p| p.conn != conn);
            }
            queues.retain(|_, list| !list.is_empty());
        }
        self.table.retain(|_, queues| !queues.is_empty());
    }

    /// A message arrived in the queue, which now ends at `max_offset`: wakes
    /// the pulls that asked for an offset below it and whose filter the
    /// message passes (Java `notifyMessageArriving`).
    pub(crate) fn arrived(
        &mut self,
        topic: &str,
        queue_id: i32,
        max_offset: i64,
        matches: impl Fn(&MessageFilter) -> bool,
    ) {
        let Some(list) = self.table.get_mut(topic).and_then(|q| q.get_mut(&queue_id)) else {
            return;
        };
        let mut keep = Vec::with_capacity(list.len());
        for pull in list.drain(..) {
            if max_offset > pull.offset && matches(&pull.filter) {
                // The receiver may be gone (timed out meanwhile): nothing to do.
                let _ = pull.wake.send(());
            } else {
                keep.push(pull);
            }
        }
        *list = keep;
    }

    /// Wakes every held pull (a broker stopping).
    pub(crate) fn wake_all(&mut self) {
        for (_, queues) in self.table.drain() {
            for (_, list) in queues {
                for pull in list {
                    let _ = pull.wake.send(());
                }
            }
        }
    }

    /// How many pulls are held.
    pub(crate) fn len(&self) -> usize {
        self.table
            .values()
            .flat_map(HashMap::values)
            .map(Vec::len)
            .sum()
    }
}
