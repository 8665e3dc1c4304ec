//! The explicit pull consumer (Java `DefaultMQPullConsumer`).

mod builder;
mod config;
mod consumer;
mod inner;
mod registration;

pub use builder::PullConsumerBuilder;
pub use config::PullConsumerConfig;
pub use consumer::{PullConsumer, PullResult};
