//! The gRPC fetch engine (the 5.x proxy), under the push consumer and the
//! simple consumer built with `endpoint(..)`.
//!
//! - [`calls`]: [`ProxyCalls`], the session calls the engine makes
//!   (implemented by [`rmq_grpc::Session`]).
//! - [`mod@receive`]: one `ReceiveMessage` (queue, filter, batch size,
//!   invisible time or auto-renew, long-polling wait, the attempt id Java
//!   sends again after an empty or failed receive), the messages mapped,
//!   and the pauses of a receive loop.
//! - [`handle`], [`ack`], [`acker`]: acks (`AckMessage` per topic, per
//!   entry status; rounds for retryable failures; a batching task).
//! - [`settle`]: `ChangeInvisibleDuration` and
//!   `ForwardMessageToDeadLetterQueue`, [`rounds`]: the settle calls tried
//!   until they work.
//! - [`route`]: the readable queues of a topic (`QueryRoute`).
//! - [`settings`], [`policy`]: a consumer's session and the subscription
//!   entries of its settings, and what the proxy's settings answer (FIFO,
//!   batch size, long polling, the retry backoff).

pub mod ack;
pub mod acker;
pub mod calls;
pub mod handle;
pub mod policy;
pub mod receive;
pub mod rounds;
pub mod route;
#[cfg(test)]
mod script;
pub mod settings;
pub mod settle;

pub use ack::{AckFailure, AckRound, Settled, ack_all, ack_round};
pub use acker::Acker;
pub use calls::ProxyCalls;
pub use handle::{Handle, Named};
pub use policy::{Backoff, ProxySettings};
pub use receive::{AttemptId, Batch, Hiding, Next, Pauses, ReceiveSpec, Received, receive};
pub use rounds::retrying;
pub use route::{ReadableQueues, readable};
pub use settings::{ConsumerSession, filter_expression, start_session, subscription_entries};
pub use settle::{change_invisible, forward_to_dlq, hide};
