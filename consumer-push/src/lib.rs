//! The RocketMQ push consumer of rmq: concurrent consumption built on
//! long-polling pulls, with the Java client's defaults and failure
//! handling that never loses a message.
//!
//! ```no_run
//! use rmq_consumer_push::{ConsumeResult, PushConsumer, Retry, listener_fn};
//!
//! # async fn demo() -> rmq_error::Result<()> {
//! let consumer = PushConsumer::builder()
//!     .group("orders-consumer") // name servers default to NAMESRV_ADDR
//!     .subscribe("orders", "created || paid")
//!     .consume_concurrency(32)
//!     .start(listener_fn(|msgs, ctx| {
//!         Box::pin(async move {
//!             for m in msgs {
//!                 if m.body.is_empty() {
//!                     ctx.set_retry(Retry::Level(3)); // back via %RETRY% after 10 s
//!                     return ConsumeResult::ReconsumeLater;
//!                 }
//!             }
//!             ConsumeResult::Success
//!         })
//!     }))
//!     .await?;
//!
//! // ... until the service stops:
//! consumer.shutdown().await?; // drain, persist offsets, unregister
//! # Ok(()) }
//! ```
//!
//! How it works (see `DESIGN.md` in the crate): a rebalance assigns
//! queues (every 20 s and when the group changes); each assigned queue has
//! a pull loop that long-polls the broker and puts messages into the
//! queue's process queue; listener calls run as tasks, at most
//! `consume_concurrency` at once; a message leaves the process queue when
//! it was consumed or handed back to the broker for a retry, and the
//! committed offset is the smallest offset still held.
//!
//! Every public call returns [`rmq_error::Error`] (`rmq::Error` in the
//! facade): `kind()`, `is_retryable()`, `is_timeout()`, and a `Display` that
//! prints the whole cause chain. It wraps this crate's detailed [`Error`]
//! (`e.downcast_ref::<rmq_consumer_push::Error>()`), whose variants the
//! methods' `# Errors` sections name.
//!
//! # Through the RocketMQ 5.x proxy
//!
//! [`PushConsumerBuilder::endpoint`] instead of `namesrv_addr` consumes
//! through the proxy's gRPC port with the same listeners and stream: the
//! proxy assigns the queues, the consumer long-polls them, acks what the
//! listener consumed, and a failed message comes back after the proxy's
//! backoff (FIFO groups: retried in place, in order):
//!
//! ```no_run
//! use rmq_consumer_push::{ConsumeResult, PushConsumer, listener_fn};
//!
//! # async fn demo() -> rmq_error::Result<()> {
//! let consumer = PushConsumer::builder()
//!     .group("orders-consumer")
//!     .endpoint("127.0.0.1:8081")
//!     .subscribe("orders", "*")
//!     .start(listener_fn(|_msgs, _ctx| Box::pin(async { ConsumeResult::Success })))
//!     .await?;
//! # consumer.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! # Orderly consumption
//!
//! [`PushConsumerBuilder::start_orderly`] with an [`OrderlyListener`]
//! consumes every queue strictly in offset order, one call at a time, and —
//! in clustering mode — only while this client holds the queue's broker
//! lock (LOCK_BATCH_MQ, renewed every 20 s), so one member of the group at
//! a time:
//!
//! ```no_run
//! use rmq_consumer_push::{OrderlyResult, PushConsumer, orderly_listener_fn};
//!
//! # async fn demo() -> rmq_error::Result<()> {
//! let consumer = PushConsumer::builder()
//!     .group("ledger")
//!     .subscribe("transfers", "*")
//!     .start_orderly(orderly_listener_fn(|msgs, _ctx| {
//!         Box::pin(async move {
//!             for m in msgs {
//!                 if m.body.is_empty() {
//!                     // the same messages again in 1 s, nothing later first
//!                     return OrderlyResult::SuspendCurrentQueueAMoment;
//!                 }
//!             }
//!             OrderlyResult::Success
//!         })
//!     }))
//!     .await?;
//! # consumer.shutdown().await?;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod builder;
mod config;
mod consumer;
mod engine;
mod error;
mod grpc;
mod in_hand;
mod inner;
mod inspect;
mod lifecycle;
mod listener;
mod message_trace;
mod pop;
mod pull;
mod registration;
mod service;
pub mod telemetry;

pub use async_trait::async_trait;
pub use builder::PushConsumerBuilder;
pub use config::{
    ConsumeFrom, DEFAULT_CONSUMER_GROUP, DLQ_TOPIC_PREFIX, PushConsumerConfig, RETRY_TOPIC_PREFIX,
    Subscription, dlq_topic, retry_topic,
};
pub use consumer::PushConsumer;
pub use error::PushConsumerKind;
pub use error::{Error, Result};
pub use inspect::QueueSnapshot;
pub use listener::concurrent::{
    ConsumeContext, ConsumeResult, FnListener, MessageListener, listener_fn,
};
pub use listener::orderly::{
    OrderlyContext, OrderlyFnListener, OrderlyListener, OrderlyResult, orderly_listener_fn,
};
pub use listener::stream::{Delivery, DeliveryStream};
pub use rmq_client_core::ClientConfig;
pub use rmq_consumer_base::{
    ConsumerEvent, ConsumerState, Expression, GroupOptions, MaxReconsume, RebalanceListener, Retry,
};
pub use rmq_offset_store::{OffsetStore, PersistMode, ReadOffsetType};
pub use rmq_protocol::body::{ExpressionType, MessageModel};
pub use rmq_protocol::{Message, MessageExt, MessageQueue};
pub use rmq_rebalance::AllocateStrategy;
