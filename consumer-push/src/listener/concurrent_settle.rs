//! Pure decisions after a listener call (Java
//! `ConsumeMessageConcurrentlyService.processConsumeResult`), kept apart
//! from the I/O so they are testable without a broker.

use rmq_protocol::MessageExt;
use rmq_protocol::body::MessageModel;

use crate::listener::concurrent::ConsumeResult;

/// Index of the first failed message of a batch of `len` (Java: ackIndex
/// plus one): `Success` acknowledges up to `ack_index` (clamped to the
/// batch), `ReconsumeLater` acknowledges nothing.
pub(crate) fn first_failed(result: ConsumeResult, ack_index: i32, len: usize) -> usize {
    match result {
        ConsumeResult::ReconsumeLater => 0,
        ConsumeResult::Success => {
            // ack_index ≥ len − 1 → all; < 0 → none.
            match usize::try_from(ack_index) {
                Ok(i) => i.saturating_add(1).min(len),
                Err(_) => 0,
            }
        }
    }
}

/// What to do with the failed messages of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailurePolicy {
    /// Clustering: hand them back to the broker (CONSUMER_SEND_MSG_BACK).
    SendBack,
    /// Broadcasting: log and drop them (Java).
    Discard,
}

impl FailurePolicy {
    pub(crate) fn for_model(model: MessageModel) -> Self {
        match model {
            MessageModel::Clustering => FailurePolicy::SendBack,
            MessageModel::Broadcasting => FailurePolicy::Discard,
        }
    }
}

/// How a batch ends, once send-backs (if any) have been tried.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Settlement {
    /// Offsets to remove from the process queue: acknowledged messages,
    /// messages sent back, discarded broadcast failures.
    pub(crate) remove: Vec<i64>,
    /// Messages whose send-back failed: they stay in the process queue and
    /// are consumed again locally later, with `reconsume_times` + 1 (Java).
    pub(crate) retry_locally: Vec<MessageExt>,
}

/// Settles a batch: `msgs[..first_failed]` succeeded; each message after
/// that has an entry in `sent_back` (`true` = the broker took it back),
/// in order. A failed message without an entry (not in the process queue
/// any more, so not sent back) is simply removed, like Java. The messages
/// to retry locally are copies (a failed send-back is rare; the call's
/// messages are borrowed).
pub(crate) fn settle(msgs: &[MessageExt], first_failed: usize, sent_back: &[bool]) -> Settlement {
    let mut out = Settlement::default();
    for (i, msg) in msgs.iter().enumerate() {
        let back_ok = match i.checked_sub(first_failed) {
            None => true, // acknowledged
            Some(j) => sent_back.get(j).copied().unwrap_or(true),
        };
        if back_ok {
            out.remove.push(msg.queue_offset);
        } else {
            let mut msg = msg.clone();
            msg.reconsume_times = msg.reconsume_times.saturating_add(1);
            out.retry_locally.push(msg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rmq_protocol::Message;

    use super::*;

    fn batch(offsets: &[i64]) -> Vec<MessageExt> {
        offsets
            .iter()
            .map(|&o| MessageExt {
                message: Message::new("T", "b"),
                queue_offset: o,
                reconsume_times: 2,
                ..MessageExt::default()
            })
            .collect()
    }

    #[test]
    fn ack_index_rules() {
        use ConsumeResult::*;
        assert_eq!(first_failed(Success, i32::MAX, 3), 3);
        assert_eq!(first_failed(Success, 2, 3), 3);
        assert_eq!(first_failed(Success, 0, 3), 1);
        assert_eq!(first_failed(Success, -1, 3), 0);
        assert_eq!(first_failed(Success, -7, 3), 0);
        assert_eq!(first_failed(ReconsumeLater, i32::MAX, 3), 0);
        assert_eq!(first_failed(ReconsumeLater, 1, 3), 0);
        assert_eq!(first_failed(Success, i32::MAX, 0), 0);
    }

    #[test]
    fn policy_by_model() {
        assert_eq!(
            FailurePolicy::for_model(MessageModel::Clustering),
            FailurePolicy::SendBack
        );
        assert_eq!(
            FailurePolicy::for_model(MessageModel::Broadcasting),
            FailurePolicy::Discard
        );
    }

    #[test]
    fn all_success_removes_all() {
        let s = settle(&batch(&[1, 2, 3]), 3, &[]);
        assert_eq!(s.remove, [1, 2, 3]);
        assert!(s.retry_locally.is_empty());
    }

    #[test]
    fn sent_back_messages_leave_failed_send_backs_stay() {
        // 10 acked, 11 sent back, 12 send-back failed.
        let s = settle(&batch(&[10, 11, 12]), 1, &[true, false]);
        assert_eq!(s.remove, [10, 11]);
        assert_eq!(s.retry_locally.len(), 1);
        assert_eq!(s.retry_locally[0].queue_offset, 12);
        assert_eq!(s.retry_locally[0].reconsume_times, 3);
    }

    #[test]
    fn discarded_failures_are_removed() {
        // Broadcasting: no send-back entries → failures removed.
        let s = settle(&batch(&[5, 6]), 0, &[]);
        assert_eq!(s.remove, [5, 6]);
        assert!(s.retry_locally.is_empty());
    }
}
