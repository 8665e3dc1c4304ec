//! Typed broker calls on [`ClientInstance`](crate::ClientInstance), their
//! result types and default timeouts.

pub mod admin;
mod admin_cluster;
mod admin_group;
mod admin_message;
mod admin_topic;
mod consumer;
mod offset;
pub mod pop;
pub mod pull;
mod recall;
mod reply;
pub mod send;
mod timeouts;
mod transaction;

pub use timeouts::{LOCK_TIMEOUT, OFFSET_TIMEOUT, PULL_TIMEOUT_OVERHEAD, SEND_BACK_TIMEOUT};
