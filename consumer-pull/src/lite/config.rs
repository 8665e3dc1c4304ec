//! [`LitePullConsumerConfig`]: the lite pull consumer's settings with the
//! Java defaults (`DefaultLitePullConsumer`).

use std::time::Duration;

use rmq_consumer_base::{GroupOptions, Subscription};
use rmq_protocol::MessageQueue;
use rmq_protocol::names::{self, NameKind};

use crate::error::{Error, Result};

/// Longest broker hold a pull may ask for.
const MAX_SUSPEND: Duration = Duration::from_secs(3600);

/// The lite pull consumer's settings. Build them through
/// [`LitePullConsumerBuilder`](crate::LitePullConsumerBuilder); every getter documents the Java name and
/// default.
#[derive(Debug, Clone)]
pub struct LitePullConsumerConfig {
    pub(crate) options: GroupOptions,
    pub(crate) subscriptions: Vec<Subscription>,
    pub(crate) assigned: Vec<MessageQueue>,
    pub(crate) auto_commit: bool,
    pub(crate) auto_commit_interval: Duration,
    pub(crate) pull_batch_size: i32,
    pub(crate) poll_batch_size: usize,
    pub(crate) pull_threshold_for_queue: usize,
    pub(crate) pull_threshold_for_all: usize,
    pub(crate) pull_threshold_size_for_queue_mib: usize,
    pub(crate) broker_suspend_max_time: Duration,
    pub(crate) pull_delay_when_exception: Duration,
    pub(crate) pull_delay_when_broker_flow_control: Duration,
    pub(crate) rebalance_interval: Duration,
}

impl Default for LitePullConsumerConfig {
    fn default() -> Self {
        LitePullConsumerConfig {
            options: GroupOptions::default(),
            subscriptions: Vec::new(),
            assigned: Vec::new(),
            auto_commit: true,
            auto_commit_interval: Duration::from_secs(5),
            pull_batch_size: 10,
            poll_batch_size: 10,
            pull_threshold_for_queue: 1000,
            pull_threshold_for_all: 10_000,
            pull_threshold_size_for_queue_mib: 100,
            broker_suspend_max_time: Duration::from_secs(20),
            pull_delay_when_exception: Duration::from_secs(1),
            pull_delay_when_broker_flow_control: Duration::from_millis(20),
            rebalance_interval: Duration::from_secs(20),
        }
    }
}

rmq_consumer_base::group_getters!(LitePullConsumerConfig, rebalance);

impl LitePullConsumerConfig {
    /// The subscriptions given to the builder.
    pub fn subscriptions(&self) -> &[Subscription] {
        &self.subscriptions
    }

    /// The queues given to the builder's `assign`.
    pub fn assigned(&self) -> &[MessageQueue] {
        &self.assigned
    }

    /// Whether handed-out offsets are committed in the background (Java
    /// `autoCommit`). Default: `true`.
    pub fn auto_commit(&self) -> bool {
        self.auto_commit
    }

    /// Period of the background commit (Java `autoCommitIntervalMillis`).
    /// Default: 5 s.
    pub fn auto_commit_interval(&self) -> Duration {
        self.auto_commit_interval
    }

    /// Most messages per pull request (Java `pullBatchSize`). Default: 10.
    pub fn pull_batch_size(&self) -> usize {
        usize::try_from(self.pull_batch_size).unwrap_or(0)
    }

    /// Most messages one [`poll`](crate::LitePullConsumer::poll) returns (Java
    /// returns one pull's messages, i.e. `pullBatchSize`). Default: 10.
    pub fn poll_batch_size(&self) -> usize {
        self.poll_batch_size
    }

    /// Most messages buffered per queue (Java `pullThresholdForQueue`).
    /// Default: 1000.
    pub fn pull_threshold_for_queue(&self) -> usize {
        self.pull_threshold_for_queue
    }

    /// Most messages buffered in all (Java `pullThresholdForAll`). Default:
    /// 10 000.
    pub fn pull_threshold_for_all(&self) -> usize {
        self.pull_threshold_for_all
    }

    /// A queue whose buffered bodies exceed this many MiB is not pulled
    /// (Java `pullThresholdSizeForQueue`). Default: 100.
    pub fn pull_threshold_size_for_queue_mib(&self) -> usize {
        self.pull_threshold_size_for_queue_mib
    }

    /// How long the broker holds a pull when there is nothing new (Java
    /// `brokerSuspendMaxTimeMillis`). Default: 20 s.
    pub fn broker_suspend_max_time(&self) -> Duration {
        self.broker_suspend_max_time
    }

    /// Pause after a failed pull (Java `pullTimeDelayMillsWhenException`).
    /// Default: 1 s.
    pub fn pull_delay_when_exception(&self) -> Duration {
        self.pull_delay_when_exception
    }

    /// Pause after the broker answered FLOW_CONTROL (Java
    /// `DefaultLitePullConsumerImpl.PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL`,
    /// a constant there). Default: 20 ms.
    pub fn pull_delay_when_broker_flow_control(&self) -> Duration {
        self.pull_delay_when_broker_flow_control
    }

    /// Period of the group rebalance of `subscribe` (Java
    /// `rocketmq.client.rebalance.waitInterval`). Default: 20 s.
    pub fn rebalance_interval(&self) -> Duration {
        self.rebalance_interval
    }

    /// Checks every setting; the error names the first bad one.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] describing the setting and the allowed values;
    /// [`Error::SubscriptionConflict`] when both `subscribe` and `assign`
    /// were used.
    pub fn validate(&self) -> rmq_error::Result<()> {
        self.validate_detailed().map_err(Into::into)
    }

    /// [`validate`](Self::validate) with this crate's error.
    pub(crate) fn validate_detailed(&self) -> Result<()> {
        let config = |s: String| Error::Config(s);
        self.options.validate().map_err(config)?;
        if !self.subscriptions.is_empty() && !self.assigned.is_empty() {
            return Err(Error::SubscriptionConflict {
                attempted: "assign",
                current: "subscribe",
            });
        }
        for sub in &self.subscriptions {
            sub.check().map_err(config)?;
        }
        for mq in &self.assigned {
            names::check(NameKind::Topic, &mq.topic).map_err(|e| config(e.to_string()))?;
        }
        in_range("pull_batch_size", i64::from(self.pull_batch_size), 1, 1024)?;
        in_range(
            "poll_batch_size",
            as_i64(self.poll_batch_size),
            1,
            1_000_000,
        )?;
        in_range(
            "pull_threshold_for_queue",
            as_i64(self.pull_threshold_for_queue),
            1,
            65_535,
        )?;
        in_range(
            "pull_threshold_for_all",
            as_i64(self.pull_threshold_for_all),
            1,
            1_000_000,
        )?;
        in_range(
            "pull_threshold_size_for_queue_mib",
            as_i64(self.pull_threshold_size_for_queue_mib),
            1,
            1024,
        )?;
        for (name, d) in [
            ("auto_commit_interval", self.auto_commit_interval),
            ("pull_delay_when_exception", self.pull_delay_when_exception),
            ("rebalance_interval", self.rebalance_interval),
        ] {
            if d.is_zero() {
                return Err(config(format!("{name} must be positive")));
            }
        }
        if self.broker_suspend_max_time.is_zero() || self.broker_suspend_max_time > MAX_SUSPEND {
            return Err(config(format!(
                "broker_suspend_max_time is {:?}; use more than 0 and at most {MAX_SUSPEND:?}",
                self.broker_suspend_max_time
            )));
        }
        Ok(())
    }
}

fn as_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn in_range(name: &str, v: i64, min: i64, max: i64) -> Result<()> {
    if (min..=max).contains(&v) {
        Ok(())
    } else {
        Err(Error::Config(format!("{name} is {v}; use {min} to {max}")))
    }
}
