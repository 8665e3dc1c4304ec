//! [`ClientInstance`]: the per-client-id shared machinery (Java
//! `MQClientInstance`): the handle, its shared state ([`Inner`]) and the
//! registered [`Members`]. The broker call helpers are in `calls`, the
//! lifecycle in `lifecycle`, registration in `members`; routes,
//! heartbeats and inbound handlers in their own files.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use arc_swap::ArcSwap;
use rmq_remoting::RemotingClient;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::ClientConfig;
use crate::consumer::ConsumerHandle;
use crate::error::{Error, Result};
use crate::producer::ProducerHandle;
use crate::route::RouteSnapshot;

use super::links::Links;

/// The machinery shared by every producer and consumer of one client id in
/// a process (Java `MQClientInstance`): route table, broker address table,
/// heartbeats, the registry of producer and consumer groups, the handlers
/// of broker → client requests, and the typed broker calls.
///
/// A cheap-to-clone handle (an `Arc`). Get one with
/// [`get_or_start`](ClientInstance::get_or_start); each call counts one
/// *user*, and each user calls [`release`](ClientInstance::release) once
/// when done. The last release stops the instance: background tasks are
/// cancelled and awaited, UNREGISTER_CLIENT is sent for every group still
/// registered, and every connection is closed. No task outlives
/// [`shutdown`](ClientInstance::shutdown) or the last `release`.
///
/// Dropping every handle without releasing only cancels the tasks (best
/// effort).
#[derive(Clone)]
pub struct ClientInstance {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for ClientInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientInstance")
            .field("client_id", &self.inner.client_id)
            .field("shutdown", &self.is_shutdown())
            .finish_non_exhaustive()
    }
}

/// Registered producer groups and consumers.
#[derive(Default, Clone)]
pub(crate) struct Members {
    pub(crate) producers: BTreeSet<String>,
    pub(crate) consumers: BTreeMap<String, Arc<dyn ConsumerHandle>>,
    /// Producers that take broker → client requests (transaction checks),
    /// by group; each group is in `producers` too.
    pub(crate) producer_handles: BTreeMap<String, Arc<dyn ProducerHandle>>,
}

/// The shared state behind every [`ClientInstance`] handle.
pub(crate) struct Inner {
    pub(crate) config: ClientConfig,
    pub(crate) client_id: String,
    pub(crate) remoting: RemotingClient,
    /// Route table + broker address table; swapped whole, read lock-free.
    pub(crate) routes: ArcSwap<RouteSnapshot>,
    /// Serializes route writers (fetch, compare, swap).
    pub(crate) route_update: tokio::sync::Mutex<()>,
    /// Index of the name server that answered last.
    pub(crate) namesrv_index: AtomicUsize,
    /// Producer groups and consumers. Never held across an `.await`.
    pub(crate) members: Mutex<Members>,
    /// Serializes heartbeat rounds and unregistrations.
    pub(crate) heartbeat_lock: tokio::sync::Mutex<()>,
    /// The version code each broker address put in its heartbeat answers
    /// (every broker response carries the broker's `MQVersion`). Never held
    /// across an `.await`.
    pub(crate) broker_versions: Mutex<BTreeMap<String, i32>>,
    /// Which broker addresses the heartbeats reach.
    pub(crate) links: Links,
    /// Requests waiting for their reply, by correlation id.
    pub(crate) replies: Arc<super::replies::ReplyTable>,
    /// Wakes the heartbeat task early (a new broker address appeared).
    pub(crate) heartbeat_wakeup: Arc<tokio::sync::Notify>,
    /// Wakes the route refresh early (a broker call could not connect or
    /// lost its connection: a dead broker's replacement, or its absence,
    /// is in the next route).
    pub(crate) route_wakeup: Arc<tokio::sync::Notify>,
    /// Users counted by `get_or_start` / `release`; guarded by the
    /// process registry's lock.
    pub(crate) users: AtomicUsize,
    /// Set once shutdown has begun (no new users, no new registrations).
    pub(crate) closing: AtomicBool,
    /// Pull requests sent to a master (`[0]`) and to a slave (`[1]`) address.
    pub(crate) pulls: [AtomicU64; 2],
    /// Held by the shutdown sequence; `true` once it completed.
    pub(crate) shutdown_done: tokio::sync::Mutex<bool>,
    pub(crate) cancel: CancellationToken,
    pub(crate) tasks: TaskTracker,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Best effort: the tasks hold only weak references, so they stop at
        // their next tick anyway; cancel makes it immediate.
        self.cancel.cancel();
    }
}

impl Inner {
    pub(crate) fn members(&self) -> MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn record_broker_version(&self, addr: &str, version: i32) {
        self.broker_versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(addr.to_owned(), version);
    }

    pub(crate) fn known_broker_version(&self, addr: &str) -> Option<i32> {
        self.broker_versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(addr)
            .copied()
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }
}

impl ClientInstance {
    pub(crate) fn downgrade(&self) -> Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn from_weak(weak: &Weak<Inner>) -> Option<ClientInstance> {
        weak.upgrade().map(|inner| ClientInstance { inner })
    }

    /// This instance's client id (`ip@instance[@unit]`).
    pub fn client_id(&self) -> &str {
        &self.inner.client_id
    }

    /// The config the instance was started with.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The remoting client, e.g. to register a handler for
    /// CHECK_TRANSACTION_STATE. Do not shut it down directly.
    pub fn remoting(&self) -> &RemotingClient {
        &self.inner.remoting
    }

    /// Whether the instance is shutting down or shut down.
    pub fn is_shutdown(&self) -> bool {
        self.inner.is_closing()
    }

    /// The number of users (`get_or_start` calls not yet released).
    pub fn users(&self) -> usize {
        self.inner.users.load(Ordering::Acquire)
    }

    pub(super) fn check_open(&self) -> Result<()> {
        if self.inner.is_closing() {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }
}
