//! The consume services of the remoting pull engine: how a pulled batch
//! reaches the listener (Java `ConsumeMessageConcurrentlyService` and
//! `ConsumeMessageOrderlyService`). The pop engine calls the listener
//! through their call functions.
//!
//! - [`concurrent`]: the calls of a pulled batch under the concurrency
//!   permits, acknowledged offsets, send-back of failures.
//! - [`orderly`]: one consume loop per queue, in offset order, under the
//!   queue's broker lock.

pub(crate) mod concurrent;
pub(crate) mod orderly;
