//! Delayed messages (Java `ScheduleMessageService`): a message with a delay
//! level is stored in `SCHEDULE_TOPIC_XXXX` (queue = level − 1) and put into
//! its real topic when its time comes, by the broker's clock.

use std::collections::BTreeMap;

/// Scheduled messages by due time: (due ms, sequence) → commit-log offset of
/// the message waiting in the schedule topic.
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    due: BTreeMap<(i64, u64), i64>,
    seq: u64,
}

impl Schedule {
    pub(crate) fn add(&mut self, due_ms: i64, commit_log_offset: i64) {
        self.seq = self.seq.wrapping_add(1);
        self.due.insert((due_ms, self.seq), commit_log_offset);
    }

    /// The earliest due time.
    pub(crate) fn next_due(&self) -> Option<i64> {
        self.due.keys().next().map(|(t, _)| *t)
    }

    /// Takes every message due at `now_ms`, in due order.
    pub(crate) fn take_due(&mut self, now_ms: i64) -> Vec<i64> {
        let later = self.due.split_off(&(now_ms.saturating_add(1), 0));
        let due = std::mem::replace(&mut self.due, later);
        due.into_values().collect()
    }

    /// Takes every scheduled message, due or not, in due order.
    pub(crate) fn take_all(&mut self) -> Vec<i64> {
        std::mem::take(&mut self.due).into_values().collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.due.len()
    }

    /// Keeps only the entries `keep` accepts (after a crash lost messages).
    pub(crate) fn retain(&mut self, keep: impl Fn(i64) -> bool) {
        self.due.retain(|_, offset| keep(*offset));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_in_order() {
        let mut s = Schedule::default();
        s.add(30, 3);
        s.add(10, 1);
        s.add(10, 2);
        assert_eq!(s.next_due(), Some(10));
        assert_eq!(s.take_due(9), Vec::<i64>::new());
        assert_eq!(s.take_due(10), [1, 2]);
        assert_eq!(s.len(), 1);
        s.retain(|o| o != 3);
        assert_eq!(s.next_due(), None);
    }
}
