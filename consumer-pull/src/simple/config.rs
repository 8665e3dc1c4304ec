//! [`SimpleConsumerConfig`]: the simple consumer's settings.

use std::time::Duration;

use rmq_consumer_base::{GroupOptions, Subscription};

use crate::error::{Error, Result};

/// The most messages one receive asks a broker for (the broker's limit).
pub(crate) const MAX_BATCH: usize = 32;

/// The simple consumer's settings. Build them through
/// [`SimpleConsumerBuilder`](crate::SimpleConsumerBuilder).
#[derive(Debug, Clone)]
pub struct SimpleConsumerConfig {
    pub(crate) options: GroupOptions,
    pub(crate) subscriptions: Vec<Subscription>,
    pub(crate) await_duration: Duration,
    pub(crate) max_reconsume_times: i32,
}

impl Default for SimpleConsumerConfig {
    fn default() -> Self {
        SimpleConsumerConfig {
            options: GroupOptions::default(),
            subscriptions: Vec::new(),
            await_duration: Duration::from_secs(15),
            max_reconsume_times: 16,
        }
    }
}

rmq_consumer_base::group_getters!(SimpleConsumerConfig);

impl SimpleConsumerConfig {
    /// The subscriptions given to the builder.
    pub fn subscriptions(&self) -> &[Subscription] {
        &self.subscriptions
    }

    /// How long a receive waits for a first message (the pop's `pollTime`,
    /// Java: 15 s; gRPC `awaitDuration`). Default: 15 s.
    pub fn await_duration(&self) -> Duration {
        self.await_duration
    }

    /// Redeliveries after which a message goes to `%DLQ%<group>` instead
    /// of to the application (gRPC `maxDeliveryAttempts` − 1; Java
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
        for sub in &self.subscriptions {
            sub.check().map_err(Error::Config)?;
        }
        if self.await_duration.is_zero() || self.await_duration > Duration::from_secs(60) {
            return Err(Error::Config(format!(
                "await_duration is {:?}; use 1 ms to 60 s",
                self.await_duration
            )));
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
