//! The servers' network side: one accept loop per server ([`Server`]), one
//! task pair per connection (reader + writer, `conn.rs`), the fault rules
//! applied to each request, and the [`Responder`] every answer goes out
//! through.
//!
//! A server is the name server or a broker; what it does with a request is
//! its [`Service`]. Requests are handled in arrival order, synchronously, by
//! the reader task; a service may keep the [`Responder`] and answer later
//! (a suspended pull), so a held request never blocks the connection.

mod conn;
mod responder;
mod server;
mod service;
mod shared;

pub(crate) use responder::{Post, Responder, response, response_with};
pub(crate) use server::{Server, bind};
pub(crate) use service::{Handled, Incoming, ServerKind, Service};
pub use shared::ConnectionInfo;
pub(crate) use shared::{ConnShared, NetShared, lock};
