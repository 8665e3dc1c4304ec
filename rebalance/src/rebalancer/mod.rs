//! The rebalancer: which queues of a topic this client should consume now,
//! and what changed (Java `RebalanceImpl.rebalanceByTopic`, minus the
//! process-queue bookkeeping, which stays with the consumer).
//!
//! * [`Rebalancer::allocate`]: route → subscribe queues, broker → consumer
//!   ids of the group, both sorted Java-style → the strategy.
//! * [`diff`]: compare with what the client holds → added / removed.
//! * [`RebalanceTrigger`]: when to run (every 20 s, at once on notification,
//!   at least 1 s apart).
//!
//! The push consumer and the lite pull consumer both drive it the same way:
//!
//! ```no_run
//! use std::sync::Arc;
//! use rmq_client_core::{ClientConfig, ClientInstance};
//! use rmq_protocol::MessageQueue;
//! use rmq_protocol::body::MessageModel;
//! use rmq_rebalance::{AllocateAveragely, RebalanceTrigger, Rebalancer};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let instance = ClientInstance::get_or_start(ClientConfig::builder().build()?)?;
//! let rebalancer =
//!     Rebalancer::new(instance, "my_group", MessageModel::Clustering, Arc::new(AllocateAveragely));
//! let trigger = RebalanceTrigger::new(); // notify() it from ConsumerHandle::notify_ids_changed
//! let mut held: Vec<MessageQueue> = Vec::new();
//! loop {
//!     trigger.wait().await;
//!     match rebalancer.rebalance("orders", &held).await {
//!         Ok(Some(diff)) if diff.is_changed() => {
//!             // stop diff.removed (persist + remove offsets), start diff.added
//!             held = diff.assigned();
//!         }
//!         Ok(_) => {}                 // unchanged, or topic skipped this time
//!         Err(e) => eprintln!("rebalance failed: {e}"),
//!     }
//! }
//! # }
//! ```

mod diff;
mod error;
mod rebalance;
mod trigger;

pub use diff::{RebalanceDiff, diff};
pub use error::{Error, Result};
pub use rebalance::Rebalancer;
pub use trigger::{DEFAULT_MIN_REBALANCE_INTERVAL, DEFAULT_REBALANCE_INTERVAL, RebalanceTrigger};
