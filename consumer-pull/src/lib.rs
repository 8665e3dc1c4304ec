//! The RocketMQ pull consumers of rmq: the application decides when (and,
//! with the explicit consumer, from where) it reads.
//!
//! * [`LitePullConsumer`] — [`subscribe`](LitePullConsumer::subscribe)
//!   (queues assigned by the group rebalance) or
//!   [`assign`](LitePullConsumer::assign) (fixed queues); background tasks
//!   long-poll every queue into a bounded buffer that
//!   [`poll`](LitePullConsumer::poll) or a [`MessageStream`] hands out; a
//!   slow reader slows pulling instead of growing memory.
//!   [`seek`](LitePullConsumer::seek), [`pause`](LitePullConsumer::pause),
//!   [`commit`](LitePullConsumer::commit) (or auto-commit every 5 s).
//! * [`SimpleConsumer`] — pop consumption (RocketMQ 5.x):
//!   [`receive`](SimpleConsumer::receive) messages hidden from the rest of
//!   the group for an invisible time, then [`ack`](SimpleConsumer::ack)
//!   them or [`change_invisible_duration`](SimpleConsumer::change_invisible_duration);
//!   any number of members per group, no rebalance.
//! * [`PullConsumer`] — explicit pulls of a queue from an offset, offsets
//!   kept by the broker (clustering) or a local file (broadcasting).
//!
//! ```no_run
//! use futures::StreamExt;
//! use rmq_consumer_pull::LitePullConsumer;
//!
//! # async fn store(_m: &rmq_consumer_pull::MessageExt) {}
//! # async fn demo() -> rmq_error::Result<()> {
//! let consumer = LitePullConsumer::builder()
//!     .group("analytics") // name servers default to NAMESRV_ADDR
//!     .subscribe("clicks", "*")
//!     .auto_commit(false)
//!     .start()
//!     .await?;
//!
//! let mut messages = consumer.stream(); // bounded: a slow reader slows pulling
//! while let Some(msg) = messages.next().await {
//!     let msg = msg?;
//!     store(&msg).await;
//!     consumer.commit().await?; // the offset after the last message handed out
//! }
//! # Ok(()) }
//! ```
//!
//! Every public call returns [`rmq_error::Error`] (`rmq::Error` in the
//! facade), and the streams yield it: `kind()`, `is_retryable()`,
//! `is_timeout()`, and a `Display` that prints the whole cause chain. It
//! wraps this crate's detailed [`Error`]
//! (`e.downcast_ref::<rmq_consumer_pull::Error>()`: the queue of a failed
//! pull, ...), whose variants the methods' `# Errors` sections name.
//!
//! See `DESIGN.md` in the crate for the tasks, the buffer and the
//! non-obvious behaviours.
#![warn(missing_docs)]

mod error;
mod lite;
mod pull;
mod simple;

pub use error::{Error, PullConsumerKind, Result};
pub use lite::{
    BufferStats, LitePullConsumer, LitePullConsumerBuilder, LitePullConsumerConfig, MessageStream,
};
pub use pull::{PullConsumer, PullConsumerBuilder, PullConsumerConfig, PullResult};
pub use rmq_client_core::{ClientConfig, DEFAULT_CONSUMER_GROUP, PullStatus};
pub use rmq_consumer_base::{
    ConsumeFrom, ConsumerEvent, ConsumerState, Expression, GroupOptions, MaxReconsume,
    RebalanceListener, Retry, Subscription,
};
pub use rmq_offset_store::{OffsetStore, PersistMode, ReadOffsetType};
pub use rmq_protocol::body::{ExpressionType, MessageModel};
pub use rmq_protocol::{Message, MessageExt, MessageQueue};
pub use rmq_rebalance::AllocateStrategy;
pub use simple::{
    ReceiptHandle, ReceiveRequest, ReceivedMessage, SimpleConsumer, SimpleConsumerBuilder,
    SimpleConsumerConfig, SimpleTransport,
};
