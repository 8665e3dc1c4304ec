//! rmq-grpc: the RocketMQ 5.x proxy transport. The `apache.rocketmq.v2`
//! protocol ([`proto`], generated from the crate's own `.proto` files) over
//! a tonic channel, and a [`Session`]: the `Telemetry` stream with settings
//! sync and server commands, heartbeats, `QueryRoute`, `QueryAssignment`,
//! `SendMessage`, `RecallMessage`, `ReceiveMessage`, `AckMessage`,
//! `ChangeInvisibleDuration`, `EndTransaction`, each call with a deadline and retries with backoff on
//! `UNAVAILABLE` / `TOO_MANY_REQUESTS`.
//!
//! The producer (rmq-producer) picks this transport when it is given a
//! proxy endpoint instead of name servers.
#![warn(missing_docs)]

mod auth;
mod config;
mod error;
mod message;
pub mod proto;
mod session;

pub use auth::GrpcCredentials;
pub use config::GrpcConfig;
pub use error::{Error, Result};
pub use message::{Receipt, half_message_ext, message_ext};
pub use session::{
    ClientSettings, ServerCommand, Session, consumer_pub_sub, duration, filter_expression,
    hostname, resource, std_duration, subscription_entry, timestamp_ms, timestamp_to_ms,
};
