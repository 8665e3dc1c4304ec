//! [`PopLimits`]: the client-side flow control of a pop loop: no pop while
//! the messages in hand reach the queue's thresholds, and never more than
//! the room left (Java `popThresholdForQueue`, the push consumer's
//! `pullThresholdForQueue` / `pullThresholdSizeForQueue`).

/// A queue's thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PopLimits {
    /// At most this many messages in hand.
    pub count: usize,
    /// At most this many MiB of bodies in hand.
    pub mib: usize,
    /// At most this many messages per pop.
    pub batch: i32,
}

/// Whether to pop now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// Pop up to this many messages.
    Pop(i32),
    /// Wait (Java `PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL`): the
    /// threshold named is reached.
    Full(&'static str),
}

impl PopLimits {
    /// The room for a pop with `count` messages of `bytes` in hand.
    pub fn room(&self, count: usize, bytes: usize) -> Room {
        if count >= self.count {
            return Room::Full("message count");
        }
        if bytes / (1024 * 1024) > self.mib {
            return Room::Full("message size");
        }
        let room = self.count.saturating_sub(count).max(1);
        Room::Pop(
            i32::try_from(room)
                .map_or(self.batch, |r| r.min(self.batch))
                .max(1),
        )
    }
}
