//! The client instance (Java `MQClientInstance`): the handle and its state,
//! the process-wide registry, routes, heartbeats, the handlers of broker →
//! client requests and the requests waiting for a reply.

mod calls;
mod client_instance;
mod handlers;
mod heartbeat;
mod lifecycle;
mod links;
mod members;
mod registry;
mod replies;
mod routes;
mod scope;

pub use client_instance::ClientInstance;
pub(crate) use client_instance::{Inner, Members};
pub use links::BrokerLink;
pub use replies::{MAX_PENDING_REPLIES, PendingReply};
pub(crate) use scope::Scope;
