//! Pure decisions after an orderly listener call (Java
//! `ConsumeMessageOrderlyService.processConsumeResult` and
//! `checkReconsumeTimes`), kept apart from the I/O so they are testable
//! without a broker.

use rmq_protocol::MessageExt;

use crate::listener::orderly::OrderlyResult;

/// What a listener result asks for (Java `processConsumeResult`), before
/// the max-reconsume check of a suspend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Commit everything taken.
    Commit,
    /// Manual commit, `Success`: keep the taken messages uncommitted.
    Keep,
    /// Manual commit, `Rollback`: everything taken goes back; pause.
    Rollback,
    /// Deliver the messages again after the suspend time (or send those
    /// past the max reconsume times to the DLQ).
    Suspend,
}

/// Java's table: with auto-commit `Commit` and `Rollback` count as
/// `Success`; without it `Success` commits nothing.
pub(crate) fn action(result: OrderlyResult, auto_commit: bool) -> Action {
    match (result, auto_commit) {
        (OrderlyResult::SuspendCurrentQueueAMoment, _) => Action::Suspend,
        (_, true) | (OrderlyResult::Commit, false) => Action::Commit,
        (OrderlyResult::Success, false) => Action::Keep,
        (OrderlyResult::Rollback, false) => Action::Rollback,
    }
}

/// Splits suspended messages (Java `checkReconsumeTimes`): those that
/// reached `max` reconsume times go to the DLQ (`over`); the others come
/// back with `reconsume_times + 1` (`again`).
pub(crate) fn split_reconsume(
    msgs: Vec<MessageExt>,
    max: i32,
) -> (Vec<MessageExt>, Vec<MessageExt>) {
    let mut over = Vec::new();
    let mut again = Vec::new();
    for mut msg in msgs {
        if msg.reconsume_times >= max {
            over.push(msg);
        } else {
            msg.reconsume_times = msg.reconsume_times.saturating_add(1);
            again.push(msg);
        }
    }
    (over, again)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(offset: i64, reconsume_times: i32) -> MessageExt {
        MessageExt {
            queue_offset: offset,
            reconsume_times,
            ..MessageExt::default()
        }
    }

    #[test]
    fn result_table_like_java() {
        use OrderlyResult::*;
        assert_eq!(action(Success, true), Action::Commit);
        assert_eq!(action(Commit, true), Action::Commit);
        assert_eq!(action(Rollback, true), Action::Commit);
        assert_eq!(action(SuspendCurrentQueueAMoment, true), Action::Suspend);
        assert_eq!(action(Success, false), Action::Keep);
        assert_eq!(action(Commit, false), Action::Commit);
        assert_eq!(action(Rollback, false), Action::Rollback);
        assert_eq!(action(SuspendCurrentQueueAMoment, false), Action::Suspend);
    }

    #[test]
    fn reconsume_split() {
        let (over, again) = split_reconsume(vec![msg(1, 0), msg(2, 2), msg(3, 5)], 2);
        assert_eq!(
            over.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
            [2, 3]
        );
        assert_eq!(over[0].reconsume_times, 2, "sent as they are");
        assert_eq!(again.len(), 1);
        assert_eq!((again[0].queue_offset, again[0].reconsume_times), (1, 1));
        // Unlimited (orderly default): never over, saturating.
        let (over, again) = split_reconsume(vec![msg(1, i32::MAX - 1)], i32::MAX);
        assert!(over.is_empty());
        assert_eq!(again[0].reconsume_times, i32::MAX);
    }
}
