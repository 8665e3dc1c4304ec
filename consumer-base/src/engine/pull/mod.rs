//! The remoting pull fetch engine: one pull cycle, shared by the push
//! consumer's pull loops, the lite pull consumer's pull tasks and the
//! explicit pull consumer's calls.
//!
//! A queue's [`PullCursor`] keeps what its pulls carry from one to the
//! next (the broker id the last answer suggested, the request header).
//! [`PullCursor::fetch`] is one pull with its errors returned: the broker's
//! address, the request header ([`fill_pull_header`]), PULL_MESSAGE
//! through a [`PullWire`] ([`ClientInstance`](rmq_client_core::ClientInstance)
//! in production), the decode and the client-side filter
//! ([`filter_pulled`]). [`PullCursor::step`] is a loop's turn: a fetch,
//! cancellable by a token, and Java's decision on its answer or failure as
//! a [`Step`] (FOUND, nothing new, an illegal offset, or a wait of the
//! consumer's [`PullDelays`], of
//! [`AUTH_FAILURE_BACKOFF`](rmq_client_core::AUTH_FAILURE_BACKOFF) after a
//! refused credential, with a heartbeat first when the broker does not know
//! the subscription). The consumers keep only what differs: the push
//! consumer its process queue, flow control, orderly locks and the handling
//! of a moved offset; the lite consumer its buffer; the explicit consumer
//! returns the fetch's errors to the application.

mod fetch;
mod filter;
mod header;
mod step;
mod wire;

#[cfg(test)]
mod tests;

pub use fetch::{Answer, FetchError, Fetched, PullCursor, PullQuery};
pub use filter::{filter_pulled, restore_retry_topic};
pub use header::{PullSpec, SubscriptionSource, fill_pull_header, pull_header};
pub use step::{PullDelays, RetryCause, Step};
pub use wire::PullWire;
