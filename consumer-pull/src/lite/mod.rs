//! The lite pull consumer (Java `DefaultLitePullConsumer`).

mod assignment;
mod buffer;
mod builder;
mod commit;
mod config;
mod consumer;
mod inner;
mod pull_task;
mod registration;
mod start;
mod stream;
mod telemetry;

pub use buffer::BufferStats;
pub use builder::LitePullConsumerBuilder;
pub use config::LitePullConsumerConfig;
pub use consumer::LitePullConsumer;
pub use stream::MessageStream;
