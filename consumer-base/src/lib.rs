//! What every rmq consumer shares, whatever its kind (push, explicit pull,
//! lite pull):
//!
//! * [`Expression`] (tags or SQL92) and [`Subscription`]: what a consumer
//!   reads;
//! * [`GroupOptions`]: the group settings of every consumer, with the
//!   [`group_setters!`] and [`group_getters!`] that give each consumer's
//!   builder and config the same documented setters and getters;
//! * [`ConsumerCore`]: client instance, offset store, closed flag, shutdown
//!   lock, root cancellation token and task tracker, the start sequence,
//!   the shutdown skeleton and the periodic persist; [`DropGuard`] for the
//!   handles;
//! * [`offsets`]: where a new queue starts, min / max / by-time offsets,
//!   master addresses;
//! * [`engine`]: the fetch engines, one per transport; [`engine::pull`]
//!   is the remoting pull cycle of the push, lite pull and explicit pull
//!   consumers;
//! * [`mark_consume_start`]: the consume start time of a listener call;
//! * [`HeartbeatGate`]: a heartbeat before the first call to a broker;
//! * [`Registration`]: the consumer as its client instance sees it, held
//!   weakly;
//! * [`Error`]: one set of variants, one error type per consumer kind;
//! * [`telemetry`]: the metric and label names the consumers report.
//!
//! ```
//! use rmq_consumer_base::{Expression, Subscription};
//!
//! let sub = Subscription::new("orders", "created || paid");
//! assert_eq!(sub.filter(), Expression::tag("created || paid"));
//! let data = sub.to_data(1);
//! assert_eq!(data.tags_set, ["created", "paid"]);
//! ```
//!
//! See `DESIGN.md` in the crate for how the consumers use these pieces.
#![warn(missing_docs)]

mod core;
pub mod engine;
mod error;
mod grpc;
mod health;
mod heartbeat;
pub mod offsets;
mod options;
mod pulled;
mod registration;
mod retry;
mod subscription;
pub mod telemetry;

pub use core::{ConsumerCore, DropGuard, Guarded, queue_span};
pub use engine::pull::restore_retry_topic;
pub use error::{Error, Kind};
pub use grpc::grpc_config;
pub use health::{ConsumerEvent, ConsumerState, Health, RebalanceListener};
pub use heartbeat::HeartbeatGate;
pub use options::GroupOptions;
pub use pulled::mark_consume_start;
pub use registration::{Registered, Registration};
pub use retry::{MaxReconsume, Retry};
pub use rmq_offset_store::ConsumeFrom;
pub use subscription::{Expression, Subscription};

/// What the setter and getter macros name; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use futures::Stream;
    pub use rmq_client_core::{ClientConfig, ClientInstance, client_setters};
    pub use rmq_offset_store::{ConsumeFrom, OffsetStore};
    pub use rmq_protocol::body::MessageModel;
    pub use rmq_rebalance::AllocateStrategy;
    pub use tokio::sync::watch;
}
