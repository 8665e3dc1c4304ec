//! [`PullConsumerConfig`]: the explicit pull consumer's settings with the
//! Java defaults (`DefaultMQPullConsumer`).

use std::time::Duration;

use rmq_consumer_base::GroupOptions;
use rmq_protocol::names::{self, NameKind};

use crate::error::{Error, Result};

/// The explicit pull consumer's settings. Build them through
/// [`PullConsumerBuilder`](crate::PullConsumerBuilder); every getter documents the Java name and
/// default.
#[derive(Debug, Clone)]
pub struct PullConsumerConfig {
    pub(crate) options: GroupOptions,
    pub(crate) register_topics: Vec<String>,
    pub(crate) pull_timeout: Duration,
    pub(crate) max_reconsume_times: i32,
}

impl Default for PullConsumerConfig {
    fn default() -> Self {
        PullConsumerConfig {
            options: GroupOptions::default(),
            register_topics: Vec::new(),
            pull_timeout: Duration::from_secs(10),
            max_reconsume_times: 16,
        }
    }
}

rmq_consumer_base::group_getters!(PullConsumerConfig);

impl PullConsumerConfig {
    /// Topics announced in heartbeats with a `*` subscription (Java
    /// `registerTopics`). Default: none.
    pub fn register_topics(&self) -> &[String] {
        &self.register_topics
    }

    /// Call timeout of a non-blocking [`pull`](crate::PullConsumer::pull) (Java
    /// `consumerPullTimeoutMillis`). Default: 10 s.
    pub fn pull_timeout(&self) -> Duration {
        self.pull_timeout
    }

    /// Redeliveries before the broker moves a message handed back with
    /// [`send_back`](crate::PullConsumer::send_back) to `%DLQ%<group>` (Java
    /// `maxReconsumeTimes`). Default: 16.
    pub fn max_reconsume_times(&self) -> i32 {
        self.max_reconsume_times
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
        self.options.validate().map_err(Error::Config)?;
        for topic in &self.register_topics {
            names::check(NameKind::Topic, topic).map_err(|e| Error::Config(e.to_string()))?;
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
