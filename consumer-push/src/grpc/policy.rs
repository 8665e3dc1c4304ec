//! Pure decisions of the gRPC push consumer: what the proxy's settings say
//! ([`ProxySettings`], the retry [`Backoff`]), what happens to a failed
//! message ([`on_failure`]), how much a receive asks for
//! ([`receive_batch`]), and which settings the proxy path refuses
//! ([`check_config`]).

use std::time::Duration;

use rmq_consumer_base::Retry;
use rmq_grpc::proto;
use rmq_protocol::body::MessageModel;

use crate::config::{ConsumeFrom, PushConsumerConfig};
use crate::error::{Error, Result};
use crate::pop::DELAY_LEVELS;

/// Deliveries of a message when the proxy names none: the broker's default
/// `retryMaxTimes` (16) + 1.
const DEFAULT_MAX_ATTEMPTS: i32 = 17;

/// The proxy's retry policy (`Settings.backoff_policy`, from the group's
/// retry policy): how many deliveries a message gets and how long it waits
/// before the next one (Java `ExponentialBackoffRetryPolicy` /
/// `CustomizedBackoffRetryPolicy`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Backoff {
    max_attempts: i32,
    strategy: Strategy,
}

#[derive(Debug, Clone, PartialEq)]
enum Strategy {
    /// `initial × multiplier^(attempt − 1)`, at most `max`.
    Exponential {
        initial: Duration,
        max: Duration,
        multiplier: f64,
    },
    /// The delay after attempt `n` is `next[n − 1]` (the last one beyond).
    Customized(Vec<Duration>),
}

impl Default for Backoff {
    /// The broker's delay levels, 17 deliveries (what a 5.x proxy answers
    /// for a group with the default retry policy).
    fn default() -> Self {
        Backoff {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            strategy: Strategy::Customized(DELAY_LEVELS.to_vec()),
        }
    }
}

impl Backoff {
    /// The policy of the proxy's settings; the default when it sent none.
    pub(crate) fn from_proto(policy: Option<&proto::RetryPolicy>) -> Self {
        use proto::retry_policy::Strategy as P;
        let Some(policy) = policy else {
            return Backoff::default();
        };
        let max_attempts = policy.max_attempts.max(1);
        let strategy = match &policy.strategy {
            Some(P::ExponentialBackoff(e)) => Strategy::Exponential {
                initial: e
                    .initial
                    .as_ref()
                    .map_or(Duration::ZERO, rmq_grpc::std_duration),
                max: e
                    .max
                    .as_ref()
                    .map_or(Duration::ZERO, rmq_grpc::std_duration),
                multiplier: f64::from(e.multiplier),
            },
            Some(P::CustomizedBackoff(c)) if !c.next.is_empty() => {
                Strategy::Customized(c.next.iter().map(rmq_grpc::std_duration).collect())
            }
            _ => Backoff::default().strategy,
        };
        Backoff {
            max_attempts,
            strategy,
        }
    }

    /// Deliveries a message gets at most (the first included).
    pub(crate) fn max_attempts(&self) -> i32 {
        self.max_attempts
    }

    /// How long a message that failed its `attempt`-th delivery (from 1)
    /// waits before the next.
    pub(crate) fn delay(&self, attempt: i32) -> Duration {
        let attempt = attempt.max(1);
        match &self.strategy {
            Strategy::Exponential {
                initial,
                max,
                multiplier,
            } => {
                let factor = multiplier.powi(attempt - 1);
                Duration::try_from_secs_f64(initial.as_secs_f64() * factor)
                    .map_or(*max, |d| d.min(*max))
            }
            Strategy::Customized(next) => {
                let i = usize::try_from(attempt - 1).unwrap_or(0);
                next.get(i)
                    .or_else(|| next.last())
                    .copied()
                    .unwrap_or(Duration::ZERO)
            }
        }
    }
}

/// What the proxy's settings say to a push consumer.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ProxySettings {
    /// The group consumes in order (`consumeMessageOrderly`).
    pub(crate) fifo: bool,
    /// Most messages a receive may ask for.
    pub(crate) receive_batch_size: Option<usize>,
    /// The longest long poll.
    pub(crate) long_polling: Option<Duration>,
    pub(crate) backoff: Backoff,
}

impl ProxySettings {
    /// Reads the settings the proxy answered (or sent since).
    pub(crate) fn from_proto(settings: Option<&proto::Settings>) -> Self {
        let Some(s) = settings else {
            return ProxySettings::default();
        };
        let sub = match &s.pub_sub {
            Some(proto::settings::PubSub::Subscription(sub)) => Some(sub),
            _ => None,
        };
        ProxySettings {
            fifo: sub.and_then(|s| s.fifo).unwrap_or(false),
            receive_batch_size: sub
                .and_then(|s| s.receive_batch_size)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n > 0),
            long_polling: sub
                .and_then(|s| s.long_polling_timeout.as_ref())
                .map(rmq_grpc::std_duration)
                .filter(|d| !d.is_zero()),
            backoff: Backoff::from_proto(s.backoff_policy.as_ref()),
        }
    }

    /// How long a receive waits for messages: the consumer's
    /// `suspend_timeout`, at most the proxy's long-polling timeout.
    pub(crate) fn long_polling(&self, suspend_timeout: Duration) -> Duration {
        self.long_polling
            .map_or(suspend_timeout, |max| suspend_timeout.min(max))
    }
}

/// How many messages one receive asks for: the consumer's batch size, at
/// most the proxy's and the room left under the flow-control count
/// (at least 1).
pub(crate) fn receive_batch(room: usize, pull_batch_size: usize, proxy: Option<usize>) -> i32 {
    let n = room
        .min(pull_batch_size)
        .min(proxy.unwrap_or(usize::MAX))
        .max(1);
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The room left under the flow-control thresholds (messages), or why
/// there is none (Java `ProcessQueueImpl.isCacheFull`).
pub(crate) fn room(
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
pub(crate) enum Failed {
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
/// up; else the delay of the asked level, or the proxy's backoff for the
/// attempt — hidden (concurrent) or retried here (FIFO).
pub(crate) fn on_failure(retry: Retry, backoff: &Backoff, attempt: i32, fifo: bool) -> Failed {
    if matches!(retry, Retry::Dlq) || attempt >= backoff.max_attempts() {
        return Failed::Dlq;
    }
    let delay = match retry {
        Retry::Level(n) => level_delay(n),
        _ => backoff.delay(attempt),
    };
    if fifo {
        Failed::RetryAfter(delay)
    } else {
        Failed::Hide(delay)
    }
}

/// The delay of the broker's delay level `level` (1–18, clamped).
fn level_delay(level: u8) -> Duration {
    let i = usize::from(level.clamp(1, 18)) - 1;
    DELAY_LEVELS
        .get(i)
        .copied()
        .unwrap_or(Duration::from_secs(10))
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

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn customized(max_attempts: i32, next: &[u64]) -> proto::RetryPolicy {
        proto::RetryPolicy {
            max_attempts,
            strategy: Some(proto::retry_policy::Strategy::CustomizedBackoff(
                proto::CustomizedBackoff {
                    next: next.iter().map(|s| rmq_grpc::duration(secs(*s))).collect(),
                },
            )),
        }
    }

    #[test]
    fn customized_backoff_by_attempt() {
        let b = Backoff::from_proto(Some(&customized(17, &[1, 5, 10])));
        assert_eq!(b.max_attempts(), 17);
        assert_eq!(b.delay(1), secs(1));
        assert_eq!(b.delay(2), secs(5));
        assert_eq!(b.delay(3), secs(10));
        assert_eq!(b.delay(9), secs(10), "the last one beyond the list");
        assert_eq!(b.delay(0), secs(1), "attempts count from 1");
        // The default is the broker's delay levels.
        let d = Backoff::from_proto(None);
        assert_eq!(d.max_attempts(), 17);
        assert_eq!(d.delay(1), secs(1));
        assert_eq!(d.delay(3), secs(10));
        assert_eq!(d.delay(18), secs(7200));
        // An empty list falls back to them too; attempts are at least 1.
        let e = Backoff::from_proto(Some(&customized(0, &[])));
        assert_eq!((e.max_attempts(), e.delay(2)), (1, secs(5)));
    }

    #[test]
    fn exponential_backoff_by_attempt() {
        let p = proto::RetryPolicy {
            max_attempts: 4,
            strategy: Some(proto::retry_policy::Strategy::ExponentialBackoff(
                proto::ExponentialBackoff {
                    initial: Some(rmq_grpc::duration(Duration::from_millis(500))),
                    max: Some(rmq_grpc::duration(secs(3))),
                    multiplier: 2.0,
                },
            )),
        };
        let b = Backoff::from_proto(Some(&p));
        assert_eq!(b.max_attempts(), 4);
        assert_eq!(b.delay(1), Duration::from_millis(500));
        assert_eq!(b.delay(2), secs(1));
        assert_eq!(b.delay(3), secs(2));
        assert_eq!(b.delay(4), secs(3), "capped");
        assert_eq!(b.delay(1000), secs(3), "no overflow");
    }

    #[test]
    fn failures_by_retry_and_attempt() {
        let b = Backoff::from_proto(Some(&customized(3, &[1, 5, 10])));
        // Concurrent: hidden for the backoff of the attempt.
        assert_eq!(
            on_failure(Retry::Broker, &b, 1, false),
            Failed::Hide(secs(1))
        );
        assert_eq!(
            on_failure(Retry::Broker, &b, 2, false),
            Failed::Hide(secs(5))
        );
        // A delay level picks the broker's table (level 3: 10 s).
        assert_eq!(
            on_failure(Retry::Level(3), &b, 1, false),
            Failed::Hide(secs(10))
        );
        assert_eq!(
            on_failure(Retry::Level(40), &b, 1, false),
            Failed::Hide(secs(7200))
        );
        // FIFO: retried here after the same delay.
        assert_eq!(
            on_failure(Retry::Broker, &b, 2, true),
            Failed::RetryAfter(secs(5))
        );
        // The attempts used up, or asked for: the DLQ.
        assert_eq!(on_failure(Retry::Broker, &b, 3, true), Failed::Dlq);
        assert_eq!(on_failure(Retry::Broker, &b, 3, false), Failed::Dlq);
        assert_eq!(on_failure(Retry::Dlq, &b, 1, false), Failed::Dlq);
    }

    #[test]
    fn settings_of_the_proxy() {
        let s = proto::Settings {
            backoff_policy: Some(customized(5, &[2])),
            pub_sub: Some(proto::settings::PubSub::Subscription(proto::Subscription {
                fifo: Some(true),
                receive_batch_size: Some(16),
                long_polling_timeout: Some(rmq_grpc::duration(secs(20))),
                ..Default::default()
            })),
            ..Default::default()
        };
        let p = ProxySettings::from_proto(Some(&s));
        assert!(p.fifo);
        assert_eq!(p.receive_batch_size, Some(16));
        assert_eq!(p.long_polling(secs(15)), secs(15));
        assert_eq!(
            p.long_polling(secs(30)),
            secs(20),
            "the proxy's is the most"
        );
        assert_eq!(p.backoff.max_attempts(), 5);
        let none = ProxySettings::from_proto(None);
        assert!(!none.fifo);
        assert_eq!(none.long_polling(secs(15)), secs(15));
        assert_eq!(none.backoff, Backoff::default());
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
