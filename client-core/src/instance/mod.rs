//! The client instance (Java `MQClientInstance`): the handle and its state,
//! the process-wide registry, routes, heartbeats and the handlers of
//! broker → client requests.

mod calls;
mod client_instance;
mod handlers;
mod heartbeat;
mod lifecycle;
mod links;
mod members;
mod registry;
mod routes;
mod scope;

pub use client_instance::ClientInstance;
pub(crate) use client_instance::{Inner, Members};
pub use links::BrokerLink;
pub(crate) use scope::Scope;
