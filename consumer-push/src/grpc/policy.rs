//! Pure decisions of the gRPC push consumer: what happens to a failed
//! message ([`on_failure`], by the proxy's [`Backoff`]), how much a receive
//! asks for ([`room`], [`receive_batch`]), and which settings the proxy
//! path refuses ([`check_config`]).

use std::time::Duration;

use rmq_consumer_base::Retry;
use rmq_consumer_base::engine::grpc::Backoff;
use rmq_protocol::body::MessageModel;

use crate::config::{ConsumeFrom, PushConsumerConfig};
use crate::error::{Error, Result};

/// How many messages one receive asks for: the consumer's batch size, at
/// most the proxy's and the room left under the flow-control count
/// (at least 1).
pub(super) fn receive_batch(room: usize, pull_batch_size: usize, proxy: Option<usize>) -> usize {
    room.min(pull_batch_size)
        .min(proxy.unwrap_or(usize::MAX))
        .max(1)
}

/// The room left under the flow-control thresholds (messages), or why
/// there is none (Java `ProcessQueueImpl.isCacheFull`).
pub(super) fn room(
    count: usize,
    bytes: usize,
    max_count: usize,
    max_mib: usize,
) -> std::result::Result<usize, &'static str> {
    if count >= max_count {
        Err("message count")
    } else if bytes >= max_mib.saturating_mul(1024 * 1024) {
        Err("message size")
    } else {
        Ok(max_count - count)
    }
}

/// What becomes of a message whose listener call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failed {
    /// Hidden for this long (`ChangeInvisibleDuration`); then the proxy
    /// delivers it again, to any member.
    Hide(Duration),
    /// FIFO: consumed again here after this long (nothing later of its
    /// message group first).
    RetryAfter(Duration),
    /// To `%DLQ%<group>` (`ForwardMessageToDeadLetterQueue`).
    Dlq,
}

/// What becomes of a message that failed its `attempt`-th delivery, by
/// the call's [`Retry`]: the DLQ when asked or when the attempts are used
/// up; else the delay of the asked level (of the broker's `levels`), or
/// the proxy's backoff for the attempt — hidden (concurrent) or retried
/// here (FIFO).
pub(super) fn on_failure(
    retry: Retry,
    backoff: &Backoff,
    levels: &Backoff,
    attempt: i32,
    fifo: bool,
) -> Failed {
    if matches!(retry, Retry::Dlq) || attempt >= backoff.max_attempts() {
        return Failed::Dlq;
    }
    let delay = match retry {
        Retry::Level(n) => levels.delay(i32::from(n)),
        _ => backoff.delay(attempt),
    };
    if fifo {
        Failed::RetryAfter(delay)
    } else {
        Failed::Hide(delay)
    }
}

/// Settings the proxy decides, or that need the brokers: an error naming
/// the first one set.
///
/// # Errors
///
/// [`Error::Config`].
pub(crate) fn check_config(config: &PushConsumerConfig) -> Result<()> {
    let refuse = |what: &str| Err(Error::Config(format!("{what} (endpoint(..): the proxy)")));
    if config.message_model() == MessageModel::Broadcasting {
        return refuse(
            "broadcasting needs the brokers: the proxy shares a group's messages among its members",
        );
    }
    if config.consume_from() != ConsumeFrom::LastOffset {
        return refuse(
            "consume_from: the proxy starts a new group at the end of its queues (a young queue \
             from its start); reset the group's offsets with mqadmin resetOffsetByTime instead",
        );
    }
    if config.options.offset_store().is_some() {
        return refuse("an offset store: the broker keeps the offsets of a consumer of the proxy");
    }
    if config.allocate_strategy().name() != "AVG" {
        return refuse("allocate_strategy: the proxy assigns the queues");
    }
    if config.max_reconsume_times != -1 {
        return refuse(
            "max_reconsume: the proxy takes the group's retryMaxTimes (mqadmin updateSubGroup -r)",
        );
    }
    if config.pop_mode {
        return refuse("pop_mode is for the brokers; a consumer of the proxy always pops");
    }
    if config.enable_trace {
        return refuse("enable_trace: trace records are written through the brokers");
    }
    if config.suspend_current_queue_time != PushConsumerConfig::default().suspend_current_queue_time
    {
        return refuse(
            "suspend_current_queue_time: a FIFO message is retried after the proxy's backoff",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::pop::DELAY_LEVELS;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn failures_by_retry_and_attempt() {
        let b = Backoff::customized(3, vec![secs(1), secs(5), secs(10)]);
        let l = &Backoff::broker_default(DELAY_LEVELS.to_vec());
        // Concurrent: hidden for the backoff of the attempt.
        assert_eq!(
            on_failure(Retry::Broker, &b, l, 1, false),
            Failed::Hide(secs(1))
        );
        assert_eq!(
            on_failure(Retry::Broker, &b, l, 2, false),
            Failed::Hide(secs(5))
        );
        // A delay level picks the broker's table (level 3: 10 s).
        assert_eq!(
            on_failure(Retry::Level(3), &b, l, 1, false),
            Failed::Hide(secs(10))
        );
        assert_eq!(
            on_failure(Retry::Level(40), &b, l, 1, false),
            Failed::Hide(secs(7200))
        );
        // FIFO: retried here after the same delay.
        assert_eq!(
            on_failure(Retry::Broker, &b, l, 2, true),
            Failed::RetryAfter(secs(5))
        );
        // The attempts used up, or asked for: the DLQ.
        assert_eq!(on_failure(Retry::Broker, &b, l, 3, true), Failed::Dlq);
        assert_eq!(on_failure(Retry::Broker, &b, l, 3, false), Failed::Dlq);
        assert_eq!(on_failure(Retry::Dlq, &b, l, 1, false), Failed::Dlq);
    }

    #[test]
    fn flow_control_room_and_batch() {
        assert_eq!(room(0, 0, 1000, 100), Ok(1000));
        assert_eq!(room(990, 10, 1000, 100), Ok(10));
        assert_eq!(room(1000, 0, 1000, 100), Err("message count"));
        assert_eq!(room(1, 100 << 20, 1000, 100), Err("message size"));
        assert_eq!(receive_batch(1000, 32, Some(32)), 32);
        assert_eq!(receive_batch(10, 32, Some(32)), 10);
        assert_eq!(receive_batch(1000, 64, Some(16)), 16);
        assert_eq!(receive_batch(1000, 64, None), 64);
        assert_eq!(receive_batch(0, 32, None), 1, "at least one");
    }

    #[test]
    fn settings_the_proxy_decides_are_refused() {
        let valid = || {
            let mut c = PushConsumerConfig::default();
            c.options.set_group("G".into());
            c
        };
        assert!(check_config(&valid()).is_ok());
        let refused = |c: PushConsumerConfig, what: &str| match check_config(&c) {
            Err(Error::Config(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("{what}: expected a config error, got {other:?}"),
        };
        let mut c = valid();
        c.options.set_message_model(MessageModel::Broadcasting);
        refused(c, "broadcasting");
        let mut c = valid();
        c.options.set_consume_from(ConsumeFrom::FirstOffset);
        refused(c, "consume_from");
        let mut c = valid();
        c.options
            .set_consume_from(ConsumeFrom::Timestamp(SystemTime::UNIX_EPOCH));
        refused(c, "consume_from");
        let mut c = valid();
        c.options.set_allocate_strategy(std::sync::Arc::new(
            rmq_rebalance::AllocateAveragelyByCircle,
        ));
        refused(c, "allocate_strategy");
        let mut c = valid();
        c.max_reconsume_times = 3;
        refused(c, "retryMaxTimes");
        let mut c = valid();
        c.pop_mode = true;
        refused(c, "pop_mode");
        let mut c = valid();
        c.enable_trace = true;
        refused(c, "enable_trace");
        let mut c = valid();
        c.suspend_current_queue_time = Duration::from_millis(100);
        refused(c, "suspend_current_queue_time");
    }
}
