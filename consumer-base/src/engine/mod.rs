//! The fetch engines: one per transport, shared by every consumer kind
//! that reads over it.
//!
//! - [`pull`]: remoting PULL_MESSAGE by queue and offset (the push
//!   consumer's pull loops, the lite pull consumer's pull tasks, the
//!   explicit pull consumer's calls).
//! - [`pop`]: remoting POP_MESSAGE with acks, invisible-time changes and
//!   the DLQ (the push consumer's pop mode, the simple consumer).
//! - [`grpc`]: the 5.x proxy's ReceiveMessage with acks, invisible-time
//!   changes and the DLQ (the push and simple consumers built with an
//!   endpoint).

pub mod grpc;
pub mod pop;
pub mod pull;
