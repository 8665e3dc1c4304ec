//! A protocol-aware TCP fault proxy for reliability tests.
//!
//! [`FaultProxy::start`] listens on `127.0.0.1` for the name server. A client
//! configured with [`FaultProxy::namesrv_addr`] reaches every broker through
//! the proxy too: in each GET_ROUTEINFO_BY_TOPIC answer the proxy replaces
//! every broker address with the address of a broker-side listener it starts
//! on demand (one per real broker address, reused). The rewritten route is
//! written back as standard JSON, every other field kept.
//! A route the proxy cannot rewrite (e.g. one answered while it shuts down)
//! is never forwarded: the client's connection is closed instead.
//!
//! Each accepted connection gets its own upstream connection. Frames are
//! decoded both ways with [`rmq_protocol::RemotingCodec`]; responses are
//! matched to requests by opaque per connection. Requests of the client go
//! through the [`Rule`] set for their code ([`FaultProxy::set_rule`]); requests
//! of the broker (e.g. `NOTIFY_CONSUMER_IDS_CHANGED`) and the client's answers
//! to them pass unchanged.
//!
//! Only route answers are rewritten: GET_BROKER_CLUSTER_INFO and any other
//! body that carries broker addresses pass unchanged (a client that connects
//! to those addresses bypasses the proxy). Brokers' VIP channel (port − 2) is
//! not proxied.
//!
//! ```no_run
//! use std::time::Duration;
//! use rmq_protocol::{RequestCode, ResponseCode};
//! use rmq_testkit::proxy::{FaultProxy, Rule};
//!
//! # async fn demo() -> Result<(), rmq_testkit::proxy::ProxyError> {
//! let broker = rmq_testkit::broker().await;
//! let proxy = FaultProxy::start(&broker.namesrv_addr).await?;
//! // Configure the client under test with `proxy.namesrv_addr()`, then:
//! proxy.set_rule(
//!     RequestCode::CONSUMER_SEND_MSG_BACK,
//!     Rule::error_with(ResponseCode::SYSTEM_ERROR, "injected by the test"),
//! );
//! proxy
//!     .wait_for_requests(RequestCode::CONSUMER_SEND_MSG_BACK, 3, Duration::from_secs(30))
//!     .await?;
//! proxy.clear_all();
//! proxy.shutdown().await;
//! # Ok(()) }
//! ```

mod conn;
mod fault_proxy;
mod rewrite;
mod rules;

use fault_proxy::Shared;

pub use fault_proxy::{FaultProxy, ProxyError};
pub use rules::{Rule, Scope};
