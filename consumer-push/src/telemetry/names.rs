//! The metric and label names: the consumers share them
//! ([`rmq_consumer_base::telemetry`]); the flow-control reasons are the push
//! consumer's own.

pub use rmq_consumer_base::telemetry::*;

/// The flow-control reasons of `pull_loop::over_threshold`, in label order.
pub(super) const FLOW_REASONS: [&str; 3] = ["message count", "message size", "offset span"];
