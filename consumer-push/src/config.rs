//! [`PushConsumerConfig`]: the push consumer's settings with the Java
//! client's defaults (Java `DefaultMQPushConsumer`), and their validation.

use std::time::Duration;

use rmq_consumer_base::GroupOptions;
use rmq_rebalance::{BROKER_LOCK_LEASE, DEFAULT_LOCK_LEASE, DEFAULT_LOCK_RENEW_INTERVAL};

use crate::error::{Error, Result};

pub use rmq_client_core::DEFAULT_CONSUMER_GROUP;
pub use rmq_consumer_base::{ConsumeFrom, Subscription};
pub use rmq_protocol::names::{DLQ_TOPIC_PREFIX, RETRY_TOPIC_PREFIX, dlq_topic, retry_topic};

/// The push consumer's settings. Build it through
/// [`PushConsumerBuilder`](crate::PushConsumerBuilder); every getter
/// documents the Java name and default.
#[derive(Debug, Clone)]
pub struct PushConsumerConfig {
    pub(crate) options: GroupOptions,
    pub(crate) subscriptions: Vec<Subscription>,
    pub(crate) consume_concurrency: usize,
    pub(crate) consume_batch_max_size: usize,
    pub(crate) pull_batch_size: i32,
    pub(crate) pull_interval: Duration,
    pub(crate) pull_threshold_for_queue: usize,
    pub(crate) pull_threshold_size_for_queue_mib: usize,
    pub(crate) consume_concurrently_max_span: i64,
    pub(crate) max_reconsume_times: i32,
    pub(crate) consume_timeout: Duration,
    pub(crate) suspend_timeout: Duration,
    pub(crate) pull_delay_when_exception: Duration,
    pub(crate) pull_delay_when_flow_control: Duration,
    pub(crate) pull_delay_when_broker_flow_control: Duration,
    pub(crate) reconsume_delay_when_send_back_failed: Duration,
    pub(crate) rebalance_interval: Duration,
    pub(crate) pull_max_idle_time: Duration,
    pub(crate) shutdown_await_timeout: Duration,
    /// Set by `start_orderly`: the consumer runs the orderly service.
    pub(crate) orderly: bool,
    pub(crate) suspend_current_queue_time: Duration,
    pub(crate) lock_renew_interval: Duration,
    pub(crate) lock_lease: Duration,
    /// Pop instead of pull (Java `clientRebalance=false`).
    pub(crate) pop_mode: bool,
    pub(crate) pop_invisible_time: Duration,
    pub(crate) enable_trace: bool,
    pub(crate) trace_topic: Option<String>,
}

impl Default for PushConsumerConfig {
    fn default() -> Self {
        PushConsumerConfig {
            options: GroupOptions::default(),
            subscriptions: Vec::new(),
            consume_concurrency: 20,
            consume_batch_max_size: 1,
            pull_batch_size: 32,
            pull_interval: Duration::ZERO,
            pull_threshold_for_queue: 1000,
            pull_threshold_size_for_queue_mib: 100,
            consume_concurrently_max_span: 2000,
            max_reconsume_times: -1,
            consume_timeout: Duration::from_secs(15 * 60),
            suspend_timeout: Duration::from_secs(15),
            pull_delay_when_exception: Duration::from_secs(1),
            pull_delay_when_flow_control: Duration::from_millis(50),
            pull_delay_when_broker_flow_control: Duration::from_millis(20),
            reconsume_delay_when_send_back_failed: Duration::from_secs(5),
            rebalance_interval: Duration::from_secs(20),
            pull_max_idle_time: Duration::from_secs(120),
            shutdown_await_timeout: Duration::from_secs(30),
            orderly: false,
            suspend_current_queue_time: Duration::from_secs(1),
            lock_renew_interval: DEFAULT_LOCK_RENEW_INTERVAL,
            lock_lease: DEFAULT_LOCK_LEASE,
            pop_mode: false,
            pop_invisible_time: Duration::from_secs(60),
            enable_trace: false,
            trace_topic: None,
        }
    }
}

rmq_consumer_base::group_getters!(PushConsumerConfig, rebalance);

impl PushConsumerConfig {
    /// Whether the consumer pops instead of pulling (Java
    /// `clientRebalance=false`): the brokers share every queue among the
    /// members of the group. Default: false.
    pub fn pop_mode(&self) -> bool {
        self.pop_mode
    }

    /// Pop mode: how long a popped message stays hidden from the rest of
    /// the group before it is delivered again unless acked (Java
    /// `popInvisibleTime`). Default: 60 s.
    pub fn pop_invisible_time(&self) -> Duration {
        self.pop_invisible_time
    }

    fn validate_pop(&self) -> Result<()> {
        if self.message_model() != rmq_protocol::body::MessageModel::Clustering {
            return Err(config(
                "pop_mode needs clustering: broadcasting consumers pull every queue themselves",
            ));
        }
        if self.pop_invisible_time < Duration::from_secs(1)
            || self.pop_invisible_time > Duration::from_secs(12 * 3600)
        {
            return Err(config(format!(
                "pop_invisible_time is {:?}; it must be 1 s ..= 12 h",
                self.pop_invisible_time
            )));
        }
        Ok(())
    }

    /// The user subscriptions (without the automatic `%RETRY%<group>` one).
    pub fn subscriptions(&self) -> &[Subscription] {
        &self.subscriptions
    }

    /// Most listener calls in flight at once (Java `consumeThreadMin` /
    /// `consumeThreadMax`; here a semaphore, not a thread pool). Default: 20.
    pub fn consume_concurrency(&self) -> usize {
        self.consume_concurrency
    }

    /// Most messages per listener call (Java `consumeMessageBatchMaxSize`).
    /// Default: 1.
    pub fn consume_batch_max_size(&self) -> usize {
        self.consume_batch_max_size
    }

    /// Most messages per pull (Java `pullBatchSize`). Default: 32.
    pub fn pull_batch_size(&self) -> usize {
        usize::try_from(self.pull_batch_size).unwrap_or(0)
    }

    /// Pause between two pulls of a queue that found messages (Java
    /// `pullInterval`). Default: 0.
    pub fn pull_interval(&self) -> Duration {
        self.pull_interval
    }

    /// Flow control: a queue stops pulling while it holds more messages
    /// than this (Java `pullThresholdForQueue`). Default: 1000.
    pub fn pull_threshold_for_queue(&self) -> usize {
        self.pull_threshold_for_queue
    }

    /// Flow control: a queue stops pulling while its held bodies take more
    /// than this many MiB (Java `pullThresholdSizeForQueue`, compared in
    /// whole MiB like Java). Default: 100.
    pub fn pull_threshold_size_for_queue_mib(&self) -> usize {
        self.pull_threshold_size_for_queue_mib
    }

    /// Flow control: a queue stops pulling while the offsets it holds span
    /// more than this (Java `consumeConcurrentlyMaxSpan`). Default: 2000.
    pub fn consume_concurrently_max_span(&self) -> i64 {
        self.consume_concurrently_max_span
    }

    /// The configured max reconsume times (Java `maxReconsumeTimes`):
    /// after this many failed redeliveries the message goes to
    /// `%DLQ%<group>`. Default: −1, meaning 16 for concurrent and unlimited
    /// for orderly consumption (see
    /// [`effective_max_reconsume_times`](Self::effective_max_reconsume_times)).
    pub fn max_reconsume_times(&self) -> i32 {
        self.max_reconsume_times
    }

    /// The max reconsume times in force: −1 resolves to 16 for
    /// concurrent consumption and to `i32::MAX` (unlimited) for orderly
    /// consumption (Java `getMaxReconsumeTimes` of each consume service).
    pub fn effective_max_reconsume_times(&self) -> i32 {
        match (self.max_reconsume_times, self.orderly) {
            (-1, false) => 16,
            (-1, true) => i32::MAX,
            (n, _) => n,
        }
    }

    /// Whether the consumer is orderly (started with
    /// [`start_orderly`](crate::PushConsumerBuilder::start_orderly)).
    pub fn is_orderly(&self) -> bool {
        self.orderly
    }

    /// Orderly: how long a queue pauses after its listener asked to
    /// suspend it (Java `suspendCurrentQueueTimeMillis`); the default of
    /// each call's [`OrderlyContext`](crate::OrderlyContext). 10 ms ..= 30 s.
    /// Default: 1 s.
    pub fn suspend_current_queue_time(&self) -> Duration {
        self.suspend_current_queue_time
    }

    /// Orderly, clustering: how often the broker locks of the assigned
    /// queues are renewed (Java `rocketmq.client.rebalance.lockInterval`).
    /// Default: 20 s.
    pub fn lock_renew_interval(&self) -> Duration {
        self.lock_renew_interval
    }

    /// Orderly, clustering: a queue whose lock was not confirmed for this
    /// long is not consumed until it is locked again (Java
    /// `rocketmq.client.rebalance.lockMaxLiveTime`). Must exceed the renew
    /// interval and stay below the broker's 60 s lease. Default: 30 s.
    pub fn lock_lease(&self) -> Duration {
        self.lock_lease
    }

    /// A listener call taking longer than this is abandoned (its future
    /// dropped) and counts as `ReconsumeLater` (Java `consumeTimeout`, in
    /// minutes there). Default: 15 min.
    pub fn consume_timeout(&self) -> Duration {
        self.consume_timeout
    }

    /// How long the broker may hold a pull that finds nothing (long
    /// polling; Java `BROKER_SUSPEND_MAX_TIME_MILLIS`). Default: 15 s.
    pub fn suspend_timeout(&self) -> Duration {
        self.suspend_timeout
    }

    /// Pause before pulling again after a failed pull (Java
    /// `pullTimeDelayMillsWhenException`). Default: 1 s — the Java push
    /// consumer's field says 3 s but its constructor overwrites it with the
    /// client's 1000 ms, so 1 s is what Java does.
    pub fn pull_delay_when_exception(&self) -> Duration {
        self.pull_delay_when_exception
    }

    /// Pause before checking again when a queue is over a flow-control
    /// threshold (Java `PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL`).
    /// Default: 50 ms.
    pub fn pull_delay_when_flow_control(&self) -> Duration {
        self.pull_delay_when_flow_control
    }

    /// Pause after the broker answered FLOW_CONTROL (Java
    /// `PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL`). Default: 20 ms.
    pub fn pull_delay_when_broker_flow_control(&self) -> Duration {
        self.pull_delay_when_broker_flow_control
    }

    /// Pause before a message whose send-back failed is consumed again
    /// locally (Java `submitConsumeRequestLater`). Default: 5 s.
    pub fn reconsume_delay_when_send_back_failed(&self) -> Duration {
        self.reconsume_delay_when_send_back_failed
    }

    /// Period of the rebalance (Java `rocketmq.client.rebalance.waitInterval`).
    /// Default: 20 s.
    pub fn rebalance_interval(&self) -> Duration {
        self.rebalance_interval
    }

    /// A queue whose pull loop has not pulled for this long is dropped and
    /// recreated at the next rebalance (Java
    /// `rocketmq.client.pull.pullMaxIdleTime`). Default: 120 s.
    pub fn pull_max_idle_time(&self) -> Duration {
        self.pull_max_idle_time
    }

    /// Whether RocketMQ message trace is on (Java `enableMsgTrace`).
    pub fn enable_trace(&self) -> bool {
        self.enable_trace
    }

    /// The trace topic (Java `customizedTraceTopic`; default
    /// `RMQ_SYS_TRACE_TOPIC`).
    pub fn trace_topic(&self) -> Option<&str> {
        self.trace_topic.as_deref()
    }

    /// How long [`shutdown`](crate::PushConsumer::shutdown) waits for
    /// listener calls in flight before abandoning them (Java
    /// `awaitTerminationMillisWhenShutdown`, default 0 there). Default: 30 s.
    pub fn shutdown_await_timeout(&self) -> Duration {
        self.shutdown_await_timeout
    }

    /// Checks every setting; the error names the first bad one.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] describing the setting and the allowed values.
    pub fn validate(&self) -> rmq_error::Result<()> {
        self.validate_detailed().map_err(Into::into)
    }

    /// [`validate`](Self::validate) with this crate's error.
    pub(crate) fn validate_detailed(&self) -> Result<()> {
        self.options.validate().map_err(config)?;
        if self.pop_mode {
            self.validate_pop()?;
        }
        if self.subscriptions.is_empty() {
            return Err(config(
                "no subscription: call `subscribe(topic, \"*\")` or `subscribe_sql(topic, sql)`",
            ));
        }
        for sub in &self.subscriptions {
            sub.check().map_err(config)?;
        }
        in_range("consume_concurrency", self.consume_concurrency, 1, 1000)?;
        in_range(
            "consume_batch_max_size",
            self.consume_batch_max_size,
            1,
            1024,
        )?;
        in_range(
            "pull_batch_size",
            usize::try_from(self.pull_batch_size).unwrap_or(0),
            1,
            1024,
        )?;
        in_range(
            "pull_threshold_for_queue",
            self.pull_threshold_for_queue,
            1,
            65_535,
        )?;
        in_range(
            "pull_threshold_size_for_queue_mib",
            self.pull_threshold_size_for_queue_mib,
            1,
            1024,
        )?;
        in_range(
            "consume_concurrently_max_span",
            usize::try_from(self.consume_concurrently_max_span).unwrap_or(0),
            1,
            65_535,
        )?;
        if self.pull_interval > Duration::from_millis(65_535) {
            return Err(config(format!(
                "pull_interval is {:?}; it must be at most 65 535 ms (Java's limit)",
                self.pull_interval
            )));
        }
        if self.max_reconsume_times < -1 {
            return Err(config(format!(
                "max_reconsume_times is {}; use −1 (the default, 16) or a value ≥ 0",
                self.max_reconsume_times
            )));
        }
        for (name, d) in [
            ("consume_timeout", self.consume_timeout),
            ("suspend_timeout", self.suspend_timeout),
            ("pull_delay_when_exception", self.pull_delay_when_exception),
            (
                "pull_delay_when_flow_control",
                self.pull_delay_when_flow_control,
            ),
            ("rebalance_interval", self.rebalance_interval),
            ("pull_max_idle_time", self.pull_max_idle_time),
        ] {
            if d.is_zero() {
                return Err(config(format!("{name} must be greater than zero")));
            }
        }
        if !(crate::listener::orderly::MIN_SUSPEND..=crate::listener::orderly::MAX_SUSPEND)
            .contains(&self.suspend_current_queue_time)
        {
            return Err(config(format!(
                "suspend_current_queue_time is {:?}; it must be between 10 ms and 30 s (default 1 s)",
                self.suspend_current_queue_time
            )));
        }
        if self.lock_renew_interval.is_zero()
            || self.lock_lease <= self.lock_renew_interval
            || self.lock_lease >= BROKER_LOCK_LEASE
        {
            return Err(config(format!(
                "lock_renew_interval is {:?} and lock_lease {:?}: the renew interval must be \
                 greater than zero and shorter than the lease, and the lease shorter than the \
                 broker's 60 s (defaults 20 s and 30 s)",
                self.lock_renew_interval, self.lock_lease
            )));
        }
        if self.suspend_timeout > Duration::from_secs(60) {
            return Err(config(format!(
                "suspend_timeout is {:?}; keep it at most 60 s (default 15 s)",
                self.suspend_timeout
            )));
        }
        Ok(())
    }
}

fn config(msg: impl Into<String>) -> Error {
    Error::Config(msg.into())
}

fn in_range(name: &str, value: usize, min: usize, max: usize) -> Result<()> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(config(format!(
            "{name} is {value}; it must be between {min} and {max}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use rmq_protocol::body::{ConsumeFromWhere, ExpressionType, MessageModel};

    use super::*;

    fn valid() -> PushConsumerConfig {
        let mut c = PushConsumerConfig {
            subscriptions: vec![Subscription::new("T", "*")],
            ..PushConsumerConfig::default()
        };
        c.options.set_group("G".into());
        c
    }

    fn err(c: &PushConsumerConfig) -> String {
        match c.validate_detailed() {
            Err(Error::Config(m)) => m,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn java_defaults() {
        let c = PushConsumerConfig::default();
        assert_eq!(c.message_model(), MessageModel::Clustering);
        assert_eq!(c.consume_from(), ConsumeFrom::LastOffset);
        assert_eq!(c.allocate_strategy().name(), "AVG");
        assert_eq!(c.consume_concurrency(), 20);
        assert_eq!(c.consume_batch_max_size(), 1);
        assert_eq!(c.pull_batch_size(), 32);
        assert_eq!(c.pull_interval(), Duration::ZERO);
        assert_eq!(c.pull_threshold_for_queue(), 1000);
        assert_eq!(c.pull_threshold_size_for_queue_mib(), 100);
        assert_eq!(c.consume_concurrently_max_span(), 2000);
        assert_eq!(c.max_reconsume_times(), -1);
        assert_eq!(c.effective_max_reconsume_times(), 16);
        assert_eq!(c.consume_timeout(), Duration::from_secs(900));
        assert_eq!(c.suspend_timeout(), Duration::from_secs(15));
        assert_eq!(c.pull_delay_when_exception(), Duration::from_secs(1));
        assert_eq!(c.pull_delay_when_flow_control(), Duration::from_millis(50));
        assert_eq!(
            c.pull_delay_when_broker_flow_control(),
            Duration::from_millis(20)
        );
        assert_eq!(
            c.reconsume_delay_when_send_back_failed(),
            Duration::from_secs(5)
        );
        assert_eq!(c.rebalance_interval(), Duration::from_secs(20));
        assert_eq!(c.pull_max_idle_time(), Duration::from_secs(120));
        assert_eq!(c.shutdown_await_timeout(), Duration::from_secs(30));
        assert!(!c.is_orderly());
        assert_eq!(c.suspend_current_queue_time(), Duration::from_secs(1));
        assert_eq!(c.lock_renew_interval(), Duration::from_secs(20));
        assert_eq!(c.lock_lease(), Duration::from_secs(30));
        let orderly = PushConsumerConfig {
            orderly: true,
            ..PushConsumerConfig::default()
        };
        assert_eq!(orderly.effective_max_reconsume_times(), i32::MAX);
        assert!(valid().validate().is_ok());
    }

    #[test]
    fn validation_names_the_setting() {
        let mut c = valid();
        c.options.set_group(String::new());
        assert!(err(&c).contains("group is empty"));
        c.options.set_group(DEFAULT_CONSUMER_GROUP.into());
        assert!(err(&c).contains("reserved"));
        c.options.set_group("bad group".into());
        assert!(err(&c).contains("' '"));
        c.options.set_group("x".repeat(256));
        assert!(err(&c).contains("at most 255"));

        let mut c = valid();
        c.subscriptions.clear();
        assert!(err(&c).contains("no subscription"));

        let mut c = valid();
        c.subscriptions[0].topic = "a/b".into();
        assert!(err(&c).contains("topic"));
        let mut c = valid();
        c.subscriptions[0].expression_type = ExpressionType::Sql92;
        c.subscriptions[0].expression = " ".into();
        assert!(err(&c).contains("SQL92"));

        let mut c = valid();
        c.consume_concurrency = 0;
        assert!(err(&c).contains("consume_concurrency is 0"));
        let mut c = valid();
        c.consume_batch_max_size = 1025;
        assert!(err(&c).contains("consume_batch_max_size"));
        let mut c = valid();
        c.pull_batch_size = -1;
        assert!(err(&c).contains("pull_batch_size"));
        let mut c = valid();
        c.pull_threshold_for_queue = 0;
        assert!(err(&c).contains("pull_threshold_for_queue"));
        let mut c = valid();
        c.consume_concurrently_max_span = 0;
        assert!(err(&c).contains("consume_concurrently_max_span"));
        let mut c = valid();
        c.max_reconsume_times = -2;
        assert!(err(&c).contains("max_reconsume_times"));
        let mut c = valid();
        c.consume_timeout = Duration::ZERO;
        assert!(err(&c).contains("consume_timeout"));
        let mut c = valid();
        c.pull_interval = Duration::from_secs(70);
        assert!(err(&c).contains("pull_interval"));
        let mut c = valid();
        c.suspend_timeout = Duration::from_secs(61);
        assert!(err(&c).contains("suspend_timeout"));

        let mut c = valid();
        c.suspend_current_queue_time = Duration::from_millis(5);
        assert!(err(&c).contains("suspend_current_queue_time"));
        let mut c = valid();
        c.lock_lease = Duration::from_secs(20);
        assert!(err(&c).contains("lock_lease"));
        let mut c = valid();
        c.lock_lease = Duration::from_secs(60);
        assert!(err(&c).contains("broker's 60 s"));
        let mut c = valid();
        c.lock_renew_interval = Duration::ZERO;
        assert!(err(&c).contains("lock_renew_interval"));

        let mut c = valid();
        c.max_reconsume_times = 2;
        assert_eq!(c.effective_max_reconsume_times(), 2);
        c.orderly = true;
        assert_eq!(c.effective_max_reconsume_times(), 2);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn topic_names() {
        assert_eq!(retry_topic("G"), "%RETRY%G");
        assert_eq!(dlq_topic("G"), "%DLQ%G");
        assert_eq!(
            ConsumeFrom::Timestamp(SystemTime::UNIX_EPOCH).as_java(),
            ConsumeFromWhere::ConsumeFromTimestamp
        );
    }
}
