//! A multiplexed tokio TCP client for the Apache RocketMQ remoting protocol.
//!
//! [`RemotingClient`] keeps one connection per broker or name-server address
//! and multiplexes every request over it, matching responses by opaque.
//! Requests the peer sends to the client (e.g. `NOTIFY_CONSUMER_IDS_CHANGED`)
//! go to the [`RequestHandler`] registered for their code. An [`RpcHook`]
//! sees every request and response (ACL signing). Nothing here knows what a
//! topic or a consumer is: callers build the [`RemotingCommand`]s.
//!
//! ```no_run
//! use std::time::Duration;
//! use rmq_protocol::{RemotingCommand, RequestCode};
//! use rmq_remoting::{ClientOptions, RemotingClient};
//!
//! # async fn demo() -> Result<(), rmq_remoting::Error> {
//! let client = RemotingClient::new(ClientOptions::default());
//! let request = RemotingCommand::new_request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
//!     .with_ext_field("topic", "orders");
//! let response = client
//!     .invoke("127.0.0.1:9876", request, Duration::from_secs(3))
//!     .await?;
//! assert!(response.is_response());
//! client.shutdown().await; // no task or socket outlives this
//! # Ok(()) }
//! ```
//!
//! See `DESIGN.md` in the crate for the tasks, locks and failure handling.
#![warn(missing_docs)]

mod client;
mod connect;
mod connection;
mod driver;
mod error;
mod hook;
mod invoke;
pub mod metrics;
mod options;
mod shared;
#[cfg(feature = "tls")]
mod tls;

pub use client::RemotingClient;
pub use error::{CloseReason, Error, Result};
pub use hook::{BoxFuture, RequestHandler, RpcHook};
pub use options::ClientOptions;
pub use rmq_protocol::RemotingCommand;
#[cfg(feature = "tls")]
pub use tls::{TlsConfig, TlsConnector, TlsSetupError};
