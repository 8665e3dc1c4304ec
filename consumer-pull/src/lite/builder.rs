//! [`LitePullConsumerBuilder`] and [`LitePullConsumerConfig`]: the lite
//! pull consumer's settings with the Java defaults
//! (`DefaultLitePullConsumer`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmq_client_core::ClientConfig;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::MessageModel;
use rmq_rebalance::{AllocateAveragely, AllocateStrategy};

use crate::common::{ConsumeFrom, Expression, check_group, check_topic};
use crate::error::{Error, Result};
use crate::lite::LitePullConsumer;

/// Longest broker hold a pull may ask for.
const MAX_SUSPEND: Duration = Duration::from_secs(3600);

/// The lite pull consumer's settings. Build them through
/// [`LitePullConsumerBuilder`]; every getter documents the Java name and
/// default.
#[derive(Debug, Clone)]
pub struct LitePullConsumerConfig {
    pub(crate) group: String,
    pub(crate) message_model: MessageModel,
    pub(crate) consume_from: ConsumeFrom,
    pub(crate) allocate_strategy: Arc<dyn AllocateStrategy>,
    pub(crate) subscriptions: Vec<(String, Expression)>,
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
    pub(crate) rebalance_interval: Duration,
    pub(crate) offset_store_dir: Option<PathBuf>,
}

impl Default for LitePullConsumerConfig {
    fn default() -> Self {
        LitePullConsumerConfig {
            group: String::new(),
            message_model: MessageModel::Clustering,
            consume_from: ConsumeFrom::LastOffset,
            allocate_strategy: Arc::new(AllocateAveragely),
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
            rebalance_interval: Duration::from_secs(20),
            offset_store_dir: None,
        }
    }
}

impl LitePullConsumerConfig {
    /// The consumer group (Java `consumerGroup`).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Clustering or broadcasting (Java `messageModel`). Default:
    /// clustering.
    pub fn message_model(&self) -> MessageModel {
        self.message_model
    }

    /// Where a queue without a stored offset starts (Java
    /// `consumeFromWhere`). Default: [`ConsumeFrom::LastOffset`].
    pub fn consume_from(&self) -> ConsumeFrom {
        self.consume_from
    }

    /// The queue allocation strategy of `subscribe` (Java
    /// `allocateMessageQueueStrategy`). Default: averagely.
    pub fn allocate_strategy(&self) -> &Arc<dyn AllocateStrategy> {
        &self.allocate_strategy
    }

    /// The subscriptions given to the builder.
    pub fn subscriptions(&self) -> &[(String, Expression)] {
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
    pub fn pull_batch_size(&self) -> i32 {
        self.pull_batch_size
    }

    /// Most messages one [`poll`](LitePullConsumer::poll) returns (Java
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

    /// Period of the group rebalance of `subscribe` (Java
    /// `rocketmq.client.rebalance.waitInterval`). Default: 20 s.
    pub fn rebalance_interval(&self) -> Duration {
        self.rebalance_interval
    }

    /// Root directory of the broadcasting consumer's offset files. Default:
    /// the offset store's default.
    pub fn offset_store_dir(&self) -> Option<&std::path::Path> {
        self.offset_store_dir.as_deref()
    }

    /// Checks every setting; the error names the first bad one.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] describing the setting and the allowed values;
    /// [`Error::SubscriptionConflict`] when both `subscribe` and `assign`
    /// were used.
    pub fn validate(&self) -> Result<()> {
        let config = |s: String| Error::Config(s);
        check_group(&self.group).map_err(config)?;
        if !self.subscriptions.is_empty() && !self.assigned.is_empty() {
            return Err(Error::SubscriptionConflict {
                attempted: "assign",
                current: "subscribe",
            });
        }
        for (topic, expr) in &self.subscriptions {
            check_topic(topic).map_err(config)?;
            expr.check(topic).map_err(config)?;
        }
        for mq in &self.assigned {
            check_topic(&mq.topic).map_err(config)?;
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

/// Builds and starts a [`LitePullConsumer`].
///
/// Use [`subscribe`](Self::subscribe) (queues assigned by the group
/// rebalance) *or* [`assign`](Self::assign) (fixed queues), not both;
/// either can also be done after start.
///
/// ```no_run
/// # async fn demo() -> Result<(), rmq_consumer_pull::Error> {
/// use std::time::Duration;
/// use rmq_consumer_pull::{ConsumeFrom, LitePullConsumer};
///
/// let consumer = LitePullConsumer::builder()
///     .group("analytics")
///     .namesrv_addr("127.0.0.1:9876")
///     .subscribe("clicks", "*")
///     .consume_from(ConsumeFrom::FirstOffset)
///     .auto_commit(false)
///     .pull_threshold_for_all(2_000)
///     .start()
///     .await?;
/// let batch = consumer.poll(Duration::from_secs(1)).await?;
/// consumer.commit().await?;
/// # drop(batch);
/// # consumer.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct LitePullConsumerBuilder {
    config: LitePullConsumerConfig,
    client: Option<ClientConfig>,
    namesrv_addrs: Option<String>,
}

impl LitePullConsumerBuilder {
    /// The consumer group (Java `consumerGroup`). Required; letters, digits,
    /// `%`, `|`, `_`, `-`, at most 255 characters, not `DEFAULT_CONSUMER`.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.config.group = group.into();
        self
    }

    /// The client configuration (name servers, instance name, timeouts...).
    /// Default: `ClientConfig::builder().build()`, i.e. the name servers of
    /// `NAMESRV_ADDR`. Overrides [`namesrv_addr`](Self::namesrv_addr).
    ///
    /// In clustering mode an instance name left at `DEFAULT` becomes
    /// `<pid>#<nanos>` at start (Java `changeInstanceNameToPID`), so two
    /// consumers of one group in one process get distinct client ids.
    pub fn client_config(mut self, config: ClientConfig) -> Self {
        self.client = Some(config);
        self
    }

    /// Name-server addresses, `;`-separated (Java `namesrvAddr`), for the
    /// default client configuration. Default: `NAMESRV_ADDR`.
    pub fn namesrv_addr(mut self, addrs: impl Into<String>) -> Self {
        self.namesrv_addrs = Some(addrs.into());
        self
    }

    /// Clustering (the group shares the queues; offsets on the broker) or
    /// broadcasting (every member reads every queue; offsets in a local
    /// file) (Java `messageModel`). Default: clustering.
    pub fn message_model(mut self, model: MessageModel) -> Self {
        self.config.message_model = model;
        self
    }

    /// Where a queue the group has no offset for starts (Java
    /// `consumeFromWhere` + `consumeTimestamp`). Default:
    /// [`ConsumeFrom::LastOffset`].
    pub fn consume_from(mut self, from: ConsumeFrom) -> Self {
        self.config.consume_from = from;
        self
    }

    /// The queue allocation strategy of `subscribe` (Java
    /// `allocateMessageQueueStrategy`). Every member of a group must use the
    /// same one. Default: averagely.
    pub fn allocate_strategy(mut self, strategy: impl AllocateStrategy + 'static) -> Self {
        self.config.allocate_strategy = Arc::new(strategy);
        self
    }

    /// Subscribes to `topic` (Java `subscribe(topic, subExpression)`): the
    /// group's rebalance assigns this consumer a share of its queues.
    /// `expression` is `"*"`, tags joined by `||`, or
    /// [`Expression::sql`]. Subscribing a topic again replaces its
    /// expression.
    pub fn subscribe(
        mut self,
        topic: impl Into<String>,
        expression: impl Into<Expression>,
    ) -> Self {
        let topic = topic.into();
        self.config.subscriptions.retain(|(t, _)| *t != topic);
        self.config.subscriptions.push((topic, expression.into()));
        self
    }

    /// Reads exactly these queues, without a group rebalance (Java
    /// `assign`). Calling it again replaces the set.
    pub fn assign(mut self, queues: impl IntoIterator<Item = MessageQueue>) -> Self {
        let mut queues: Vec<MessageQueue> = queues.into_iter().collect();
        queues.sort();
        queues.dedup();
        self.config.assigned = queues;
        self
    }

    /// Whether the offsets of handed-out messages are committed in the
    /// background every [`auto_commit_interval`](Self::auto_commit_interval)
    /// and at shutdown (Java `autoCommit`). With `false`, only
    /// [`commit`](LitePullConsumer::commit) stores offsets. Default: `true`.
    pub fn auto_commit(mut self, on: bool) -> Self {
        self.config.auto_commit = on;
        self
    }

    /// Period of the background commit (Java `autoCommitIntervalMillis`).
    /// Default: 5 s.
    pub fn auto_commit_interval(mut self, interval: Duration) -> Self {
        self.config.auto_commit_interval = interval;
        self
    }

    /// Most messages per pull request (Java `pullBatchSize`). 1–1024. The
    /// broker caps a pull at 32 messages from memory anyway. Default: 10.
    pub fn pull_batch_size(mut self, n: i32) -> Self {
        self.config.pull_batch_size = n;
        self
    }

    /// Most messages one [`poll`](LitePullConsumer::poll) returns. Default:
    /// 10.
    pub fn poll_batch_size(mut self, n: usize) -> Self {
        self.config.poll_batch_size = n;
        self
    }

    /// Flow control: most messages buffered (pulled, not yet handed out)
    /// per queue (Java `pullThresholdForQueue`). A hard limit: a queue's
    /// pulls pause when its buffer is full. 1–65 535. Default: 1000.
    pub fn pull_threshold_for_queue(mut self, n: usize) -> Self {
        self.config.pull_threshold_for_queue = n;
        self
    }

    /// Flow control: most messages buffered in all (Java
    /// `pullThresholdForAll`). A hard limit. Default: 10 000.
    pub fn pull_threshold_for_all(mut self, n: usize) -> Self {
        self.config.pull_threshold_for_all = n;
        self
    }

    /// Flow control: a queue whose buffered bodies take more than this many
    /// MiB is not pulled (Java `pullThresholdSizeForQueue`; checked before
    /// each pull, so one pull may go over). 1–1024. Default: 100.
    pub fn pull_threshold_size_for_queue_mib(mut self, mib: usize) -> Self {
        self.config.pull_threshold_size_for_queue_mib = mib;
        self
    }

    /// How long the broker holds a pull when there is nothing new (long
    /// polling; Java `brokerSuspendMaxTimeMillis`). Default: 20 s.
    pub fn broker_suspend_max_time(mut self, hold: Duration) -> Self {
        self.config.broker_suspend_max_time = hold;
        self
    }

    /// Pause after a failed pull (Java `pullTimeDelayMillsWhenException`).
    /// Default: 1 s.
    pub fn pull_delay_when_exception(mut self, delay: Duration) -> Self {
        self.config.pull_delay_when_exception = delay;
        self
    }

    /// Period of the group rebalance (Java
    /// `rocketmq.client.rebalance.waitInterval`). It also runs at once when
    /// the group's membership changes. Default: 20 s.
    pub fn rebalance_interval(mut self, interval: Duration) -> Self {
        self.config.rebalance_interval = interval;
        self
    }

    /// Root directory of the broadcasting consumer's offset files. Default:
    /// the offset store's default (`RMQ_OFFSET_STORE_DIR`, else
    /// `~/.rocketmq_offsets`).
    pub fn offset_store_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.offset_store_dir = Some(dir.into());
        self
    }

    /// The settings so far.
    pub fn config(&self) -> &LitePullConsumerConfig {
        &self.config
    }

    /// Starts the consumer: validates the settings, starts (or shares) the
    /// client instance, loads the offset store, registers the group and,
    /// with `subscribe`, runs the first rebalance (so the consumer holds
    /// its queues when this returns); with `assign`, starts the queues.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] / [`Error::SubscriptionConflict`] for invalid
    /// settings (nothing was started); [`Error::Client`] when the client
    /// instance could not start or the group is already registered in this
    /// process; [`Error::OffsetStore`] when the local offset store cannot be
    /// used.
    pub async fn start(self) -> Result<LitePullConsumer> {
        self.config.validate()?;
        let client = ClientConfig::from_parts(self.client, self.namesrv_addrs)?;
        LitePullConsumer::start(self.config, client).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_defaults() {
        let c = LitePullConsumerConfig::default();
        assert_eq!(c.pull_batch_size(), 10);
        assert_eq!(c.poll_batch_size(), 10);
        assert_eq!(c.pull_threshold_for_queue(), 1000);
        assert_eq!(c.pull_threshold_for_all(), 10_000);
        assert_eq!(c.pull_threshold_size_for_queue_mib(), 100);
        assert!(c.auto_commit());
        assert_eq!(c.auto_commit_interval(), Duration::from_secs(5));
        assert_eq!(c.broker_suspend_max_time(), Duration::from_secs(20));
        assert_eq!(c.pull_delay_when_exception(), Duration::from_secs(1));
        assert_eq!(c.rebalance_interval(), Duration::from_secs(20));
        assert_eq!(c.consume_from(), ConsumeFrom::LastOffset);
        assert_eq!(c.message_model(), MessageModel::Clustering);
        assert_eq!(c.allocate_strategy().name(), AllocateAveragely.name());
    }

    #[test]
    fn validation() {
        let ok = LitePullConsumerBuilder::default()
            .group("G")
            .subscribe("T", "a || b")
            .subscribe("T", "*");
        assert_eq!(ok.config().subscriptions().len(), 1);
        assert!(ok.config().validate().is_ok());
        let both = ok.clone().assign([MessageQueue::new("T", "b", 0)]);
        assert!(matches!(
            both.config().validate(),
            Err(Error::SubscriptionConflict { .. })
        ));
        for bad in [
            ok.clone().pull_batch_size(0),
            ok.clone().poll_batch_size(0),
            ok.clone().pull_threshold_for_queue(0),
            ok.clone().pull_threshold_for_all(0),
            ok.clone().auto_commit_interval(Duration::ZERO),
            ok.clone().broker_suspend_max_time(Duration::ZERO),
            ok.clone().subscribe("U", Expression::sql("")),
            ok.clone().group(""),
        ] {
            assert!(
                matches!(bad.config().validate(), Err(Error::Config(_))),
                "{:?}",
                bad.config()
            );
        }
        // No subscription and no queues is fine: both can come later.
        assert!(
            LitePullConsumerBuilder::default()
                .group("G")
                .config()
                .validate()
                .is_ok()
        );
    }
}
