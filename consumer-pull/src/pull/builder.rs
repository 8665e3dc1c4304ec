//! [`PullConsumerBuilder`]: settings of the explicit pull consumer, then
//! `start()`.

use std::time::Duration;

use rmq_client_core::ClientConfigSource;
use rmq_consumer_base::MaxReconsume;

use crate::error::unify;
use crate::pull::config::PullConsumerConfig;
use crate::pull::consumer::PullConsumer;
use crate::pull::inner::Inner;

/// Builds and starts a [`PullConsumer`].
///
/// ```no_run
/// # async fn demo() -> rmq_error::Result<()> {
/// use rmq_consumer_pull::PullConsumer;
///
/// let pull = PullConsumer::builder()
///     .group("replay")
///     .namesrv_addr("127.0.0.1:9876")
///     .start()
///     .await?;
/// # pull.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct PullConsumerBuilder {
    config: PullConsumerConfig,
    client: ClientConfigSource,
}

rmq_consumer_base::group_setters!(PullConsumerBuilder, PullConsumerConfig);

impl PullConsumerBuilder {
    /// Announces `topic` in heartbeats with a `*` subscription (Java
    /// `registerTopics`), so admin tools show the group as a consumer of
    /// it. Pulls do not need it (they carry their expression). Default:
    /// none.
    pub fn register_topic(mut self, topic: impl Into<String>) -> Self {
        let topic = topic.into();
        if !self.config.register_topics.contains(&topic) {
            self.config.register_topics.push(topic);
        }
        self
    }

    /// Call timeout of a non-blocking [`pull`](PullConsumer::pull) (Java
    /// `consumerPullTimeoutMillis`). Default: 10 s.
    pub fn pull_timeout(mut self, timeout: Duration) -> Self {
        self.config.pull_timeout = timeout;
        self
    }

    /// Redeliveries before the broker moves a message handed back with
    /// [`send_back`](PullConsumer::send_back) to `%DLQ%<group>` (Java
    /// `maxReconsumeTimes`). 0–16384. Default: 16.
    #[deprecated(since = "0.1.0", note = "use `max_reconsume(MaxReconsume::Times(n))`")]
    pub fn max_reconsume_times(mut self, times: i32) -> Self {
        self.config.max_reconsume_times = times;
        self
    }

    /// Redeliveries before the broker moves a message handed back with
    /// [`send_back`](PullConsumer::send_back) to `%DLQ%<group>` (Java
    /// `maxReconsumeTimes`): `MaxReconsume::Times(n)` with n ≤ 16384, or
    /// `MaxReconsume::Default` (Java's 16).
    pub fn max_reconsume(mut self, max: MaxReconsume) -> Self {
        self.config.max_reconsume_times = match max {
            MaxReconsume::Default => 16,
            other => other.to_java(),
        };
        self
    }

    /// Starts the consumer: validates the settings, starts (or shares) the
    /// client instance, loads the offset store and registers the group.
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) for invalid settings (nothing was started);
    /// [`Error::Client`](crate::Error::Client) when the client instance could not start or the
    /// group is already registered in this process;
    /// [`Error::OffsetStore`](crate::Error::OffsetStore) when the local offset store cannot be used.
    pub async fn start(self) -> rmq_error::Result<PullConsumer> {
        unify(async {
            let (config, client) = self.into_parts()?;
            Inner::start(config, client).await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::body::MessageModel;

    use super::*;

    #[test]
    fn defaults_and_validation() {
        let b = PullConsumerBuilder::default()
            .group("G")
            .register_topic("T")
            .register_topic("T");
        let c = b.config();
        assert_eq!(c.register_topics(), ["T"]);
        assert_eq!(c.pull_timeout(), Duration::from_secs(10));
        assert_eq!(c.max_reconsume_times(), 16);
        assert_eq!(c.message_model(), MessageModel::Clustering);
        assert!(c.validate().is_ok());
        assert!(PullConsumerConfig::default().validate().is_err());
        let bad = PullConsumerBuilder::default()
            .group("G")
            .pull_timeout(Duration::ZERO);
        assert!(bad.config().validate().is_err());
        let bad = PullConsumerBuilder::default()
            .group("G")
            .register_topic("a b");
        assert!(bad.config().validate().is_err());
    }
}
