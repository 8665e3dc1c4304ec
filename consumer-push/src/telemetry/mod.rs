//! The push consumer's metrics, figures and spans: the named call sites
//! the pull loop, the consume services, the send-back, the rebalance and
//! the persist tick call (names and labels: the table in `METRICS.md` at
//! the repository root).
//!
//! Hot path: metric handles are built once per queue when the rebalance
//! assigns it (`QueueMetrics`, kept in the process queue); the pull loop
//! and the consume services count per pulled batch and per listener call
//! (atomic adds, no allocation, no lock). The gauges of a queue (held
//! messages and bytes, lag) are set on the offset persist tick. The running
//! info (`TopicStats`) keeps its own totals, whatever the recorder.
//!
//! Spans (`tracing`, OpenTelemetry messaging field names): `pull` (debug),
//! `process` (one listener call), `send_back`, `rebalance`. A field that
//! costs work (message ids) is filled only when the span is enabled.

mod handles;
mod names;
mod spans;
mod stats;

pub(crate) use handles::{CallTally, ConsumerMetrics, QueueMetrics};
pub(crate) use spans::{
    process_span, processed, pull_answered, pull_span, rebalance_span, send_back_span, sent_back,
};

use names::FLOW_REASONS;
pub use names::*;
