//! Support code for the end-to-end tests of the rmq push consumer (`tests/push_*.rs`) and for the
//! `push-child` binary those tests run as a separate, killable consumer process.
//!
//! * [`Env`] (from `rmq-testkit`): the real broker (started once per process), an admin
//!   [`ClientInstance`](rmq_client_core::ClientInstance) to read broker state (committed offsets,
//!   max offsets, consumer lists, raw pulls), topic creation and producers.
//! * [`Recorder`]: what a listener saw, with awaitable conditions (no sleeps).
//! * [`consumer`]: starting push consumers for tests ([`consumer::ConsumerSpec`]), recording
//!   listeners, and reading the consumer's inspection API.
//! * [`child`]: the contract between the tests and `push-child` (environment variables, output
//!   file) and a handle that SIGKILLs the child when dropped.
//! * [`within`], [`poll_until`]: time limits and bounded polling of broker state.
//! * [`tx`]: transactional producers with a recording listener (`tests/tx_*.rs`, `tx-child`).
//! * [`features`]: what the tests of recall, priority, lite topics and request-reply share.
//! * [`name_server`]: name servers that do not answer (fail-fast tests).
//! * [`java_peer`]: the official Java clients (`bench/peers/java` per RocketMQ version, and the gRPC
//!   client `bench/peers/java-grpc`), built once, run
//!   as a child process.

pub mod child;
pub mod consumer;
pub mod features;
pub mod java_peer;
pub mod name_server;
mod record;
pub mod tx;

pub use record::{Delivery, Recorder};
pub use rmq_testkit::env::{Env, Sent};
pub use rmq_testkit::prometheus::samples as prometheus_samples;
pub use rmq_testkit::wait::{TEST_TIMEOUT, poll_until, within};
