//! Test support for rmq: a real Apache RocketMQ for end-to-end tests, and unique names.
//!
//! * [`ensure_broker`] / [`broker`]: the RocketMQ at `NAMESRV_ADDR`, or a local one (name server
//!   `127.0.0.1:9876`, `broker-a` on `127.0.0.1:10911`) started once per test process by
//!   `scripts/rocketmq-local.sh` from Maven Central jars. Tests fail, never skip, without one.
//! * [`second_broker`], [`kill_broker`], [`stop_broker`], [`start_broker`], [`restart_broker`]:
//!   control the local brokers for failover tests.
//! * [`unique_name`]: a fresh topic / group name per test.
//! * [`admin`]: create topics through the remoting client.
//! * [`client`]: bounded waits, a fresh client instance, a minimal consumer handle (for the
//!   crates above `rmq-client-core`).
//! * [`registered_brokers`]: what the name server currently lists (raw, std-only request).
//! * [`raw`]: raw sends and pulls through a bare remoting client.
//! * [`loopback`]: a scripted remoting server on 127.0.0.1 for transport tests.
//! * [`wait`]: time limits for tests and bounded waits for a condition.
//! * [`env`](mod@env): the shared end-to-end environment (broker, admin instance, topics, producers, raw
//!   reads of the broker's store).
//! * [`grpc`]: endpoint, typed topics and receiving for the tests against the 5.x gRPC proxy.
//! * [`orderly`]: ordered sends and a recording orderly listener.
//! * [`prometheus`]: samples of a metric in a Prometheus scrape.
//! * [`secure`]: a second, secured local RocketMQ (ACL + TLS + mTLS) for the security tests.
//!
//! ```no_run
//! # async fn demo() {
//! let broker = rmq_testkit::broker().await;
//! let topic = rmq_testkit::unique_name("send");
//! println!("{} {} {topic}", broker.namesrv_addr, broker.version);
//! # }
//! ```
#![warn(missing_docs)]

#[cfg(feature = "remoting")]
pub mod admin;
mod broker;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "env")]
pub mod env;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod loopback;
mod names;
#[cfg(feature = "orderly")]
pub mod orderly;
pub mod prometheus;
pub mod proxy;
#[cfg(feature = "remoting")]
pub mod raw;
mod script;
#[cfg(feature = "secure")]
pub mod secure;
pub mod wait;
mod wire;

pub use broker::{
    BROKER_A, BROKER_B, Broker, CLUSTER, broker, ensure_broker, kill_broker, namesrv_addr,
    restart_broker, second_broker, start_broker, stop_broker,
};
pub use names::{MAX_NAME_LEN, unique_name};
pub use script::script_path;
pub use wire::{RegisteredBroker, in_sync_replicas, registered_brokers};
