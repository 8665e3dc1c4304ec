//! Shared client machinery for rmq: [`ClientConfig`], the per-process
//! [`ClientInstance`] (route table, broker address table, heartbeats,
//! registry of producers and consumers, broker → client requests) and the
//! typed broker calls the producer and consumer layers build on.
//!
//! ```no_run
//! use rmq_client_core::{ClientConfig, ClientInstance};
//!
//! # async fn demo() -> Result<(), rmq_client_core::Error> {
//! let config = ClientConfig::builder().namesrv_addr("127.0.0.1:9876").build()?;
//! let instance = ClientInstance::get_or_start(config)?;
//! let route = instance.route("orders").await?;
//! println!("{} writable queues", route.publish_queues().len());
//! instance.release().await; // the last user stops the instance
//! # Ok(()) }
//! ```
//!
//! See `DESIGN.md` in the crate for the tasks, locks and failure handling.
#![warn(missing_docs)]

pub mod api;
pub mod auth;
mod clock;
mod config;
mod config_source;
mod consumer;
mod error;
mod instance;
#[cfg(feature = "opentelemetry")]
pub mod otel;
mod producer;
mod route;
pub mod trace;

pub use api::admin::{Connection, ProducerConnection};
pub use api::pop::{PopResult, PopStatus, is_pop_unsupported};
pub use api::pull::{PullCounts, PullResult, PullStatus};
pub use api::send::{SendResult, SendStatus};
pub use auth::{AUTH_FAILURE_BACKOFF, AclSigner, AuthRefusal, Credentials};
pub use clock::now_ms;
pub use config::{
    ClientConfig, ClientConfigBuilder, DEFAULT_CONSUMER_GROUP, DEFAULT_INSTANCE_NAME,
    NAMESRV_ADDR_ENV,
};
pub use config_source::ClientConfigSource;
pub use consumer::ConsumerHandle;
pub use error::{Error, Result};
pub use instance::{BrokerLink, ClientInstance, MAX_PENDING_REPLIES, PendingReply};
pub use producer::{ProducerHandle, TransactionCheckRequest};
pub use rmq_protocol::BrokerVersion;
pub use route::TopicRouteInfo;
