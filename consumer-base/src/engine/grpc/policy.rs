//! What the proxy's settings say to a consumer ([`ProxySettings`]): FIFO
//! or not, the receive batch size, the long-polling timeout and the retry
//! [`Backoff`].

use std::time::Duration;

use rmq_grpc::proto;

/// Deliveries of a message when the proxy names none: the broker's default
/// `retryMaxTimes` (16) + 1.
const DEFAULT_MAX_ATTEMPTS: i32 = 17;

/// The proxy's retry policy (`Settings.backoff_policy`, from the group's
/// retry policy): how many deliveries a message gets and how long it waits
/// before the next one (Java `ExponentialBackoffRetryPolicy` /
/// `CustomizedBackoffRetryPolicy`).
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
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

impl Backoff {
    /// The broker's default policy over its delay levels `levels`
    /// (`messageDelayLevel`): 17 deliveries, the delay after attempt `n`
    /// that of level `n` (what a 5.x proxy answers for a group with the
    /// default retry policy).
    pub fn broker_default(levels: Vec<Duration>) -> Self {
        Backoff::customized(DEFAULT_MAX_ATTEMPTS, levels)
    }

    /// At most `max_attempts` deliveries (at least 1); the delay after
    /// attempt `n` is `next[n − 1]`, the last one beyond (none: no delay).
    pub fn customized(max_attempts: i32, next: Vec<Duration>) -> Self {
        Backoff {
            max_attempts: max_attempts.max(1),
            strategy: Strategy::Customized(next),
        }
    }

    /// The policy of the proxy's settings; `default` when it sent none
    /// (its delays when it sent an empty list).
    pub fn from_proto(policy: Option<&proto::RetryPolicy>, default: &Backoff) -> Self {
        use proto::retry_policy::Strategy as P;
        let Some(policy) = policy else {
            return default.clone();
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
            _ => default.strategy.clone(),
        };
        Backoff {
            max_attempts,
            strategy,
        }
    }

    /// Deliveries a message gets at most (the first included).
    pub fn max_attempts(&self) -> i32 {
        self.max_attempts
    }

    /// How long a message that failed its `attempt`-th delivery (from 1)
    /// waits before the next.
    pub fn delay(&self, attempt: i32) -> Duration {
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

/// What the proxy's settings say to a consumer.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxySettings {
    /// The group consumes in order (`consumeMessageOrderly`).
    pub fifo: bool,
    /// Most messages a receive may ask for.
    pub receive_batch_size: Option<usize>,
    /// The longest long poll.
    pub long_polling: Option<Duration>,
    /// The retry policy.
    pub backoff: Backoff,
}

impl ProxySettings {
    /// Reads the settings the proxy answered (or sent since); the retry
    /// policy is `default` when it names none.
    pub fn from_proto(settings: Option<&proto::Settings>, default: &Backoff) -> Self {
        let Some(s) = settings else {
            return ProxySettings {
                fifo: false,
                receive_batch_size: None,
                long_polling: None,
                backoff: default.clone(),
            };
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
            backoff: Backoff::from_proto(s.backoff_policy.as_ref(), default),
        }
    }

    /// How long a receive waits for messages: `wait`, at most the proxy's
    /// long-polling timeout.
    pub fn long_polling(&self, wait: Duration) -> Duration {
        self.long_polling.map_or(wait, |max| wait.min(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// The broker's delay levels.
    fn levels() -> Backoff {
        let secs = [
            1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
        ];
        Backoff::broker_default(secs.into_iter().map(Duration::from_secs).collect())
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
        let b = Backoff::from_proto(Some(&customized(17, &[1, 5, 10])), &levels());
        assert_eq!(b.max_attempts(), 17);
        assert_eq!(b.delay(1), secs(1));
        assert_eq!(b.delay(2), secs(5));
        assert_eq!(b.delay(3), secs(10));
        assert_eq!(b.delay(9), secs(10), "the last one beyond the list");
        assert_eq!(b.delay(0), secs(1), "attempts count from 1");
        // None: the default (the broker's delay levels).
        let d = Backoff::from_proto(None, &levels());
        assert_eq!(d.max_attempts(), 17);
        assert_eq!(d.delay(1), secs(1));
        assert_eq!(d.delay(3), secs(10));
        assert_eq!(d.delay(18), secs(7200));
        // An empty list falls back to its delays; attempts are at least 1.
        let e = Backoff::from_proto(Some(&customized(0, &[])), &levels());
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
        let b = Backoff::from_proto(Some(&p), &levels());
        assert_eq!(b.max_attempts(), 4);
        assert_eq!(b.delay(1), Duration::from_millis(500));
        assert_eq!(b.delay(2), secs(1));
        assert_eq!(b.delay(3), secs(2));
        assert_eq!(b.delay(4), secs(3), "capped");
        assert_eq!(b.delay(1000), secs(3), "no overflow");
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
        let p = ProxySettings::from_proto(Some(&s), &levels());
        assert!(p.fifo);
        assert_eq!(p.receive_batch_size, Some(16));
        assert_eq!(p.long_polling(secs(15)), secs(15));
        assert_eq!(
            p.long_polling(secs(30)),
            secs(20),
            "the proxy's is the most"
        );
        assert_eq!(p.backoff.max_attempts(), 5);
        let none = ProxySettings::from_proto(None, &levels());
        assert!(!none.fifo);
        assert_eq!(none.receive_batch_size, None);
        assert_eq!(none.long_polling(secs(15)), secs(15));
        assert_eq!(none.backoff, levels());
    }
}
