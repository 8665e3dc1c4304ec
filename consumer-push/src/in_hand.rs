//! [`InHand`]: the messages a consumer has received and not settled yet, and
//! their body bytes: what the flow-control thresholds of the pop and gRPC
//! receive loops compare against.

use std::sync::atomic::{AtomicUsize, Ordering};

use rmq_protocol::MessageExt;

/// Messages and body bytes in hand; never below zero.
#[derive(Debug, Default)]
pub(crate) struct InHand {
    count: AtomicUsize,
    bytes: AtomicUsize,
}

impl InHand {
    /// `n` messages of `bytes` body bytes arrived.
    pub(crate) fn add(&self, n: usize, bytes: usize) {
        self.count.fetch_add(n, Ordering::AcqRel);
        self.bytes.fetch_add(bytes, Ordering::AcqRel);
    }

    /// `n` messages of `bytes` body bytes are settled (or given up).
    pub(crate) fn remove(&self, n: usize, bytes: usize) {
        let _ = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                Some(c.saturating_sub(n))
            });
        let _ = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                Some(c.saturating_sub(bytes))
            });
    }

    /// Nothing is in hand any more.
    pub(crate) fn clear(&self) {
        self.count.store(0, Ordering::Release);
        self.bytes.store(0, Ordering::Release);
    }

    /// Messages in hand.
    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Their body bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }
}

/// The body bytes of `msgs`.
pub(crate) fn body_bytes<'a>(msgs: impl IntoIterator<Item = &'a MessageExt>) -> usize {
    msgs.into_iter().map(|m| m.body.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_never_go_below_zero() {
        let h = InHand::default();
        h.add(3, 30);
        assert_eq!((h.count(), h.bytes()), (3, 30));
        h.remove(1, 10);
        assert_eq!((h.count(), h.bytes()), (2, 20));
        h.remove(5, 100);
        assert_eq!((h.count(), h.bytes()), (0, 0));
        h.add(2, 7);
        h.clear();
        assert_eq!((h.count(), h.bytes()), (0, 0));
    }
}
