//! Java `AllocateMessageQueueByConfig`: a fixed list of queues.

use rmq_protocol::MessageQueue;

use super::{AllocateError, AllocateStrategy};

/// Always returns the configured queues, whatever the inputs (Java
/// `AllocateMessageQueueByConfig`; name `"CONFIG"`).
///
/// Like Java it runs no checks: it never fails and never looks at the topic's
/// queues or the group's consumers, so the configured list should only hold
/// queues of the topic being allocated. Giving two members of a group
/// overlapping lists makes them consume the same queues.
///
/// ```
/// use rmq_protocol::MessageQueue;
/// use rmq_rebalance::allocate::{AllocateByConfig, AllocateStrategy};
///
/// # fn main() -> Result<(), rmq_rebalance::allocate::AllocateError> {
/// let strategy = AllocateByConfig::new([MessageQueue::new("T", "broker-a", 1)]);
/// let mine = strategy.allocate("g", "c0", &[], &[])?;
/// assert_eq!(mine, [MessageQueue::new("T", "broker-a", 1)]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllocateByConfig {
    queues: Vec<MessageQueue>,
}

impl AllocateByConfig {
    /// A strategy that always returns `queues`, in this order.
    pub fn new(queues: impl IntoIterator<Item = MessageQueue>) -> Self {
        AllocateByConfig {
            queues: queues.into_iter().collect(),
        }
    }

    /// The configured queues.
    pub fn queues(&self) -> &[MessageQueue] {
        &self.queues
    }
}

impl AllocateStrategy for AllocateByConfig {
    fn name(&self) -> &str {
        "CONFIG"
    }

    fn allocate(
        &self,
        _group: &str,
        _current_cid: &str,
        _mq_all: &[MessageQueue],
        _cid_all: &[String],
    ) -> Result<Vec<MessageQueue>, AllocateError> {
        Ok(self.queues.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_configured_queues_without_checks() {
        let q = vec![
            MessageQueue::new("T", "broker-b", 0),
            MessageQueue::new("T", "broker-a", 3),
        ];
        let s = AllocateByConfig::new(q.clone());
        assert_eq!(s.queues(), q.as_slice());
        assert_eq!(s.allocate("g", "", &[], &[]).unwrap(), q);
        assert!(
            AllocateByConfig::default()
                .allocate("g", "c", &q, &[])
                .unwrap()
                .is_empty()
        );
    }
}
