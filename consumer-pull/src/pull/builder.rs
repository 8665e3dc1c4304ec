//! [`PullConsumerBuilder`] and [`PullConsumerConfig`]: the explicit pull
//! consumer's settings with the Java defaults (`DefaultMQPullConsumer`).

use std::path::PathBuf;
use std::time::Duration;

use rmq_client_core::ClientConfig;
use rmq_protocol::body::MessageModel;

use crate::common::{check_group, check_topic};
use crate::error::{Error, Result};
use crate::pull::PullConsumer;

/// The explicit pull consumer's settings. Build them through
/// [`PullConsumerBuilder`]; every getter documents the Java name and
/// default.
#[derive(Debug, Clone)]
pub struct PullConsumerConfig {
    pub(crate) group: String,
    pub(crate) message_model: MessageModel,
    pub(crate) register_topics: Vec<String>,
    pub(crate) pull_timeout: Duration,
    pub(crate) max_reconsume_times: i32,
    pub(crate) offset_store_dir: Option<PathBuf>,
}

impl Default for PullConsumerConfig {
    fn default() -> Self {
        PullConsumerConfig {
            group: String::new(),
            message_model: MessageModel::Clustering,
            register_topics: Vec::new(),
            pull_timeout: Duration::from_secs(10),
            max_reconsume_times: 16,
            offset_store_dir: None,
        }
    }
}

impl PullConsumerConfig {
    /// The consumer group (Java `consumerGroup`).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Clustering (offsets on the broker) or broadcasting (offsets in a
    /// local file) (Java `messageModel`). Default: clustering.
    pub fn message_model(&self) -> MessageModel {
        self.message_model
    }

    /// Topics announced in heartbeats with a `*` subscription (Java
    /// `registerTopics`). Default: none.
    pub fn register_topics(&self) -> &[String] {
        &self.register_topics
    }

    /// Call timeout of a non-blocking [`pull`](PullConsumer::pull) (Java
    /// `consumerPullTimeoutMillis`). Default: 10 s.
    pub fn pull_timeout(&self) -> Duration {
        self.pull_timeout
    }

    /// Redeliveries before the broker moves a message handed back with
    /// [`send_back`](PullConsumer::send_back) to `%DLQ%<group>` (Java
    /// `maxReconsumeTimes`). Default: 16.
    pub fn max_reconsume_times(&self) -> i32 {
        self.max_reconsume_times
    }

    /// Root directory of the broadcasting consumer's offset files. Default:
    /// `None`, i.e. the offset store's default (`RMQ_OFFSET_STORE_DIR`, else
    /// `~/.rocketmq_offsets`).
    pub fn offset_store_dir(&self) -> Option<&std::path::Path> {
        self.offset_store_dir.as_deref()
    }

    /// Checks every setting; the error names the first bad one.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] describing the setting and the allowed values.
    pub fn validate(&self) -> Result<()> {
        check_group(&self.group).map_err(Error::Config)?;
        for topic in &self.register_topics {
            check_topic(topic).map_err(Error::Config)?;
        }
        if self.pull_timeout.is_zero() {
            return Err(Error::Config("pull_timeout must be positive".into()));
        }
        if !(0..=16 * 1024).contains(&self.max_reconsume_times) {
            return Err(Error::Config(format!(
                "max_reconsume_times is {}; use 0 to 16384",
                self.max_reconsume_times
            )));
        }
        Ok(())
    }
}

/// Builds and starts a [`PullConsumer`].
///
/// ```no_run
/// # async fn demo() -> Result<(), rmq_consumer_pull::Error> {
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
    client: Option<ClientConfig>,
    namesrv_addrs: Option<String>,
}

impl PullConsumerBuilder {
    /// The consumer group (Java `consumerGroup`). Required; letters, digits,
    /// `%`, `|`, `_`, `-`, at most 255 characters, not `DEFAULT_CONSUMER`.
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.config.group = group.into();
        self
    }

    /// The client configuration (name servers, instance name, timeouts,
    /// persist interval...). Default: `ClientConfig::builder().build()`,
    /// i.e. the name servers of `NAMESRV_ADDR`. Overrides
    /// [`namesrv_addr`](Self::namesrv_addr).
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

    /// Clustering: consume offsets are stored by the broker, shared by the
    /// group. Broadcasting: they are stored in a local file of this client
    /// (Java `messageModel`). Default: clustering.
    pub fn message_model(mut self, model: MessageModel) -> Self {
        self.config.message_model = model;
        self
    }

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
    pub fn max_reconsume_times(mut self, times: i32) -> Self {
        self.config.max_reconsume_times = times;
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
    pub fn config(&self) -> &PullConsumerConfig {
        &self.config
    }

    /// Starts the consumer: validates the settings, starts (or shares) the
    /// client instance, loads the offset store and registers the group.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for invalid settings (nothing was started);
    /// [`Error::Client`] when the client instance could not start or the
    /// group is already registered in this process;
    /// [`Error::OffsetStore`] when the local offset store cannot be used.
    pub async fn start(self) -> Result<PullConsumer> {
        self.config.validate()?;
        let client = ClientConfig::from_parts(self.client, self.namesrv_addrs)?;
        PullConsumer::start(self.config, client).await
    }
}

#[cfg(test)]
mod tests {
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
