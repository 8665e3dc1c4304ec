//! An in-process fake Apache RocketMQ for tests: a name server and brokers on
//! loopback sockets that speak the remoting protocol the way the real 5.x
//! (or 4.9.x) broker does, for what a client uses. No JVM, starts in
//! milliseconds, stops when dropped, and lets a test script faults the real
//! broker cannot produce on demand.
//!
//! ```
//! use std::time::Duration;
//! use rmq::prelude::*;
//! use rmq_fake::FakeCluster;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let cluster = FakeCluster::builder().brokers(2).queues(8).topic("orders").start().await?;
//!
//! let producer = Producer::builder()
//!     .group("orders-producer")
//!     .namesrv_addr(cluster.namesrv_addr())
//!     .start()
//!     .await?;
//! let sent = producer.send(Message::new("orders", "order created").with_tags("created")).await?;
//! producer.shutdown().await;
//!
//! let (tx, mut rx) = tokio::sync::mpsc::channel(16);
//! let consumer = PushConsumer::builder()
//!     .group("orders-consumer")
//!     .namesrv_addr(cluster.namesrv_addr())
//!     .consume_from(ConsumeFrom::FirstOffset)
//!     .subscribe("orders", "created")
//!     .start(listener_fn(move |msgs, _ctx| {
//!         let tx = tx.clone();
//!         let ids: Vec<String> = msgs.iter().map(|m| m.msg_id.clone()).collect();
//!         Box::pin(async move {
//!             for id in ids {
//!                 let _ = tx.send(id).await;
//!             }
//!             ConsumeResult::Success
//!         })
//!     }))
//!     .await?;
//! let got = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await?;
//! assert_eq!(got.as_deref(), Some(sent.msg_id.as_str()));
//! consumer.shutdown().await?;
//! cluster.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # What it does
//!
//! * **Name server**: routes of the topics its brokers registered (standard
//!   JSON, or fastjson's non-standard form for old clients), cluster info,
//!   topic list.
//! * **Brokers**: topic creation (explicit, and from `TBW102` on a
//!   producer's first send); SEND_MESSAGE / _V2 / batch, stored as sent
//!   (body, compression bits, flag, properties) with real queue and
//!   commit-log offsets, offset message ids, born / store hosts and times;
//!   PULL_MESSAGE with long polling (held until a matching message arrives);
//!   tag filtering by hash code and SQL92 property filters (an own
//!   evaluator of the broker's dialect, see `broker/filter/sql/`);
//!   consumer offsets; heartbeats, consumer lists,
//!   NOTIFY_CONSUMER_IDS_CHANGED and UNREGISTER_CLIENT;
//!   CONSUMER_SEND_MSG_BACK to `%RETRY%<group>` with delay levels and to
//!   `%DLQ%<group>`; orderly queue locks with leases; min / max / search
//!   offsets.
//! * **Time**: delay levels, lock leases and client expiry follow the
//!   cluster's [`FakeClock`], which a test moves forward
//!   ([`FakeClock::advance`]): "delay level 3 = 10 s" passes in a
//!   millisecond.
//! * **Faults** ([`Fault`], [`Action`]), scriptable per request code,
//!   server, client and connection: delay, drop, error code, close the
//!   connection, delay or drop the answer, "stored but not OK" answers, a
//!   custom handler; [`FakeCluster::partition`] cuts a client off from one
//!   broker; [`FakeBroker::kill`], [`FakeBroker::crash`] (losing what was
//!   not flushed) and [`FakeBroker::restart`].
//! * **Inspection**: [`FakeBroker::messages`], offsets, consumer ids, lock
//!   holders, request counts ([`FakeCluster::wait_for_requests`]).
//!
//! Pop / ack and END_TRANSACTION with check-backs are not served yet
//! (answered REQUEST_CODE_NOT_SUPPORTED; half messages are stored out of
//! sight); each is one more handler file in `broker/handlers/`.
//!
//! # Faithfulness
//!
//! The crate's differential suite (`tests/differential/`) runs the same
//! scenarios against the real broker and against the fake and compares what
//! the client sees. Where they differ on purpose, the crate's `README.md`
//! lists it under "Known differences".
//!
//! # As a program
//!
//! `cargo run -p rmq-fake -- --port 9876 --brokers 2` serves a cluster for
//! clients in any language until Ctrl-C (`--help` lists the options).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]
#![warn(missing_docs)]

mod broker;
mod clock;
mod cluster;
mod config;
mod error;
mod fault;
mod namesrv;
mod net;

pub use broker::FakeBroker;
pub use clock::FakeClock;
pub use cluster::{FakeCluster, FakeClusterBuilder};
pub use config::{BrokerFlavor, DEFAULT_DELAY_LEVELS, FlushPolicy, parse_delay_levels};
pub use error::{FakeError, Result};
pub use fault::{Action, ConnectionId, Fault, FaultId, FaultTarget, InterceptFn};
pub use net::ConnectionInfo;
