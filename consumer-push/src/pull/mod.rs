//! The push consumer over the remoting pull engine
//! ([`rmq_consumer_base::engine::pull`]): queues owned by rebalance, one
//! pull loop per queue, offsets persisted.
//!
//! - [`rebalance`]: the rebalance loop, queue creation and removal.
//! - [`pull_loop`]: pulling one queue into its [`process_queue`].
//! - [`process_queue`]: the messages held for one queue, by offset in an
//!   [`offset_map`].
//! - [`queues`]: the table of assigned queues.
//! - [`subscriptions`]: the subscriptions and their filters.
//! - [`send_back`]: a failed message sent back to the broker for retry.
//! - [`lock_renewal`]: orderly clustering consumers' broker locks.

pub(crate) mod lock_renewal;
pub(crate) mod offset_map;
pub(crate) mod process_queue;
pub(crate) mod pull_loop;
pub(crate) mod queues;
pub(crate) mod rebalance;
pub(crate) mod send_back;
pub(crate) mod subscriptions;
