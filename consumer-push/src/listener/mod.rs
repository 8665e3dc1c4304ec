//! The listener surface, the same over every engine: the listener traits,
//! their contexts and results, the `listener!` macros, `Stream`
//! deliveries, the listener calls and the pure decisions after a call.
//!
//! - [`concurrent`]: Java `MessageListenerConcurrently`;
//!   [`concurrent_settle`]: what a concurrent call's result asks for.
//! - [`orderly`]: Java `MessageListenerOrderly`; [`orderly_settle`]: what
//!   an orderly call's result asks for.
//! - [`call`]: one guarded listener call (consume timeout, panics caught).
//! - [`stream`]: [`Delivery`](stream::Delivery) and the delivery stream.
//! - `macros`: `listener!` and `orderly_listener!`.

pub(crate) mod call;
pub(crate) mod concurrent;
pub(crate) mod concurrent_settle;
mod macros;
pub(crate) mod orderly;
pub(crate) mod orderly_settle;
pub(crate) mod stream;
