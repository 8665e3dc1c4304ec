//! The remoting pop fetch engine (RocketMQ 5.x brokers), under the push
//! consumer's pop mode and the simple consumer built with
//! `namesrv_addr(..)`.
//!
//! - [`PopCursor::fetch`]: one POP_MESSAGE ([`PopQuery`]: queue or any
//!   queue of a broker, filter, batch, invisible time, long-polling wait,
//!   the attempt id of an orderly pop), the answer decoded ([`decode`]:
//!   original topic, checkpoint, the tag check again), the DLQ for messages
//!   redelivered too often. [`PopCursor::step`] is a pop loop's turn:
//!   a fetch and Java's decision on its answer or failure as a
//!   [`PopStep`]; [`PopLimits`] the client-side flow control before it.
//! - [`ack_all`]: acks, batched per broker (BATCH_ACK_MESSAGE, one
//!   ACK_MESSAGE per message where the broker does not take batches);
//!   [`PopAcker`]: a task batching the acks of a push consumer.
//! - [`change_invisible`], [`to_dlq`] (the send-back header built once,
//!   [`dlq_header`]), [`retry_delay`]: the other settle calls.
//! - [`PopWire`]: the calls the engine makes ([`ClientInstance`](rmq_client_core::ClientInstance)
//!   in production, a scripted double in the tests);
//!   [`readable_brokers`]: the brokers a topic is popped from.

mod ack;
mod acker;
mod brokers;
mod error;
mod fetch;
mod handle;
mod limits;
mod request;
mod settle;
mod step;
mod wire;

#[cfg(test)]
mod tests;

pub use ack::{AckFailure, ack_all, batch_body};
pub use acker::{AckReport, PopAcker};
pub use brokers::readable_brokers;
pub use error::PopCallError;
pub use fetch::{FetchError, PopAnswer, PopCursor};
pub use handle::{Decoded, PopHandle, Popped, decode};
pub use limits::{PopLimits, Room};
pub use request::{InitMode, PopQuery, pop_header};
pub use settle::{DELAY_LEVELS, change_invisible, dlq_header, retry_delay, to_dlq};
pub use step::{PopDelays, PopStep, RetryCause};
pub use wire::PopWire;
