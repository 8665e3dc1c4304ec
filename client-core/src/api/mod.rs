//! Typed broker calls on [`ClientInstance`](crate::ClientInstance), their
//! result types and default timeouts.

use std::time::Duration;

pub mod admin;
mod admin_cluster;
mod admin_group;
mod admin_message;
mod admin_topic;
mod consumer;
mod offset;
pub mod pull;
pub mod send;

/// Timeout of CONSUMER_SEND_MSG_BACK (Java: 5 s).
pub const SEND_BACK_TIMEOUT: Duration = Duration::from_secs(5);
/// Timeout of QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET (Java: 5 s).
pub const OFFSET_TIMEOUT: Duration = Duration::from_secs(5);
/// Timeout of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ (Java: 1 s).
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(1);
/// Added to a pull's `suspendTimeoutMillis` for its call timeout (Java
/// holds 15 s and waits 30 s).
pub const PULL_TIMEOUT_OVERHEAD: Duration = Duration::from_secs(15);
