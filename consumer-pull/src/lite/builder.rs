//! [`LitePullConsumerBuilder`]: the lite pull consumer's settings, then
//! `start()`.

use std::time::Duration;

use rmq_client_core::ClientConfigSource;
use rmq_protocol::MessageQueue;

use crate::error::unify;
use crate::lite::config::LitePullConsumerConfig;
use crate::lite::consumer::LitePullConsumer;
use crate::lite::start;

/// Builds and starts a [`LitePullConsumer`].
///
/// Use [`subscribe`](Self::subscribe) (queues assigned by the group
/// rebalance) *or* [`assign`](Self::assign) (fixed queues), not both;
/// either can also be done after start.
///
/// ```no_run
/// # async fn demo() -> rmq_error::Result<()> {
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
    client: ClientConfigSource,
}

rmq_consumer_base::group_setters!(LitePullConsumerBuilder, LitePullConsumerConfig, rebalance);

impl LitePullConsumerBuilder {
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
    pub fn pull_batch_size(mut self, n: usize) -> Self {
        // Out of range (> i32::MAX) fails the 1–1024 check at start.
        self.config.pull_batch_size = i32::try_from(n).unwrap_or(i32::MAX);
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

    /// Pause after the broker answered FLOW_CONTROL (Java
    /// `DefaultLitePullConsumerImpl.PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL`,
    /// a constant there). Default: 20 ms.
    pub fn pull_delay_when_broker_flow_control(mut self, delay: Duration) -> Self {
        self.config.pull_delay_when_broker_flow_control = delay;
        self
    }

    /// Period of the group rebalance (Java
    /// `rocketmq.client.rebalance.waitInterval`). It also runs at once when
    /// the group's membership changes. Default: 20 s.
    pub fn rebalance_interval(mut self, interval: Duration) -> Self {
        self.config.rebalance_interval = interval;
        self
    }

    /// Starts the consumer: validates the settings, starts (or shares) the
    /// client instance, loads the offset store, registers the group and,
    /// with `subscribe`, runs the first rebalance (so the consumer holds
    /// its queues when this returns); with `assign`, starts the queues.
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) / [`Error::SubscriptionConflict`](crate::Error::SubscriptionConflict) for invalid
    /// settings (nothing was started); [`Error::Client`](crate::Error::Client) when the client
    /// instance could not start or the group is already registered in this
    /// process; [`Error::OffsetStore`](crate::Error::OffsetStore) when the local offset store cannot be
    /// used.
    pub async fn start(self) -> rmq_error::Result<LitePullConsumer> {
        unify(async {
            let (config, client) = self.into_parts()?;
            start::start(config, client, LitePullConsumer::new).await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::body::MessageModel;
    use rmq_rebalance::{AllocateAveragely, AllocateStrategy};

    use super::*;
    use crate::error::Error;
    use crate::lite::config::LitePullConsumerConfig;
    use crate::{ConsumeFrom, Expression};

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
        assert_eq!(
            c.pull_delay_when_broker_flow_control(),
            Duration::from_millis(20)
        );
        assert_eq!(
            LitePullConsumerBuilder::default()
                .pull_delay_when_broker_flow_control(Duration::from_millis(7))
                .config()
                .pull_delay_when_broker_flow_control(),
            Duration::from_millis(7)
        );
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
        assert!(ok.config().validate_detailed().is_ok());
        let both = ok.clone().assign([MessageQueue::new("T", "b", 0)]);
        assert!(matches!(
            both.config().validate_detailed(),
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
                matches!(bad.config().validate_detailed(), Err(Error::Config(_))),
                "{:?}",
                bad.config()
            );
        }
        // No subscription and no queues is fine: both can come later.
        assert!(
            LitePullConsumerBuilder::default()
                .group("G")
                .config()
                .validate_detailed()
                .is_ok()
        );
    }
}
