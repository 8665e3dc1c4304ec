//! One fake broker: its state ([`BrokerState`]), its lifecycle (start,
//! kill, crash, restart), its background tasks (delayed-message delivery,
//! housekeeping) and the [`FakeBroker`] handle tests use.
//!
//! | file | what |
//! |---|---|
//! | `state.rs` | [`BrokerShared`], [`BrokerState`], topic / group / offset operations, flush |
//! | `lifecycle.rs` | start, kill / crash, delayed-delivery and housekeeping tasks |
//! | `storing.rs` | storing a message (delay levels), delivering delayed messages |
//! | `service.rs` | [`BrokerService`](service::BrokerService), the broker's `net::Service` |
//! | `handle.rs` | [`FakeBroker`] |
//! | `store.rs` | commit log and consume queues, reads as `DefaultMessageStore` |
//! | `topics.rs` | topic configs, auto-creation, name rules |
//! | `clients.rs` | consumer / producer groups, SQL92 filter registrations |
//! | `locks.rs` | orderly queue locks with leases |
//! | `hold.rs` | long polling |
//! | `schedule.rs` | delay levels |
//! | `filter/` | tag and SQL92 filters |
//! | `handlers/` | one handler per request code |
//!
//! Locking: one `std::sync::Mutex` per broker around [`BrokerState`], held
//! for the synchronous part of a request only, never across an `.await`;
//! frames to clients are queued after it is released.

mod clients;
pub(crate) mod filter;
mod handle;
mod handlers;
mod hold;
mod lifecycle;
mod locks;
mod schedule;
mod service;
mod state;
pub(crate) mod store;
mod storing;
pub(crate) mod topics;

pub use handle::FakeBroker;
pub(crate) use state::{BrokerShared, BrokerState, ClusterParts};
