//! [`ClientShared`]: the state every connection driver shares with the
//! client handle (connection table, handler registry, task tracker).
//!
//! Drivers hold an `Arc<ClientShared>`, never the client's `Inner`, so the
//! last [`RemotingClient`](crate::RemotingClient) dropping still cancels
//! everything.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use rmq_protocol::RequestCode;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::hook::RequestHandler;
use crate::options::ClientOptions;

/// One address's connection slot. Concurrent first callers share the cell,
/// so only one of them connects; a failed connect leaves it empty.
pub(crate) type Slot = Arc<OnceCell<Connection>>;

#[derive(Default)]
struct Table {
    slots: HashMap<String, Slot, foldhash::fast::RandomState>,
    /// Addresses connected at least once (to tell reconnects from connects).
    seen: HashSet<String>,
}

pub(crate) struct ClientShared {
    pub(crate) options: ClientOptions,
    /// Every task the crate spawns goes through this tracker.
    pub(crate) tracker: TaskTracker,
    /// Cancelled by `shutdown` (and by dropping the last client handle).
    /// Every connection token is a child of it.
    pub(crate) cancel: CancellationToken,
    table: Mutex<Table>,
    handlers: RwLock<HashMap<i32, Arc<dyn RequestHandler>>>,
    next_conn_id: AtomicU64,
}

impl ClientShared {
    pub(crate) fn new(options: ClientOptions) -> Self {
        ClientShared {
            options,
            tracker: TaskTracker::new(),
            cancel: CancellationToken::new(),
            table: Mutex::new(Table::default()),
            handlers: RwLock::new(HashMap::new()),
            next_conn_id: AtomicU64::new(1),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn next_conn_id(&self) -> u64 {
        self.next_conn_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The slot for `addr`, created empty if absent.
    pub(crate) fn slot(&self, addr: &str) -> Result<Slot> {
        let mut table = self.table();
        // Checked under the table lock so `clear` (after shutdown) cannot
        // race with a slot being created.
        if self.is_shutdown() {
            return Err(Error::Shutdown);
        }
        // Looked up first: the entry API would copy the address on every call.
        if let Some(slot) = table.slots.get(addr) {
            return Ok(slot.clone());
        }
        Ok(table.slots.entry(addr.to_owned()).or_default().clone())
    }

    /// Removes `addr`'s slot if it is still `slot` (a stale slot whose
    /// connection died before its driver could remove it).
    pub(crate) fn remove_slot(&self, addr: &str, slot: &Slot) {
        let mut table = self.table();
        if table.slots.get(addr).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            table.slots.remove(addr);
        }
    }

    /// Removes `addr`'s slot if it holds the connection `conn_id` (called by
    /// that connection's driver when it ends).
    pub(crate) fn remove_connection(&self, addr: &str, conn_id: u64) {
        let mut table = self.table();
        let same = table
            .slots
            .get(addr)
            .and_then(|s| s.get())
            .is_some_and(|c| c.id() == conn_id);
        if same {
            table.slots.remove(addr);
        }
    }

    /// Removes and returns `addr`'s established connection. A connect in
    /// progress is left alone.
    pub(crate) fn take_connection(&self, addr: &str) -> Option<Connection> {
        let mut table = self.table();
        let conn = table.slots.get(addr)?.get()?.clone();
        table.slots.remove(addr);
        Some(conn)
    }

    /// Records that `addr` got a connection; returns whether it had one before.
    pub(crate) fn mark_connected(&self, addr: &str) -> bool {
        !self.table().seen.insert(addr.to_owned())
    }

    /// Every established connection that is still open.
    pub(crate) fn connections(&self) -> Vec<Connection> {
        self.table()
            .slots
            .values()
            .filter_map(|s| s.get())
            .filter(|c| !c.is_closed())
            .cloned()
            .collect()
    }

    /// The open connection to `addr`, if any.
    pub(crate) fn connection(&self, addr: &str) -> Option<Connection> {
        self.table()
            .slots
            .get(addr)
            .and_then(|s| s.get())
            .filter(|c| !c.is_closed())
            .cloned()
    }

    pub(crate) fn clear(&self) {
        self.table().slots.clear();
    }

    pub(crate) fn handler(&self, code: RequestCode) -> Option<Arc<dyn RequestHandler>> {
        let handlers = self.handlers.read().unwrap_or_else(PoisonError::into_inner);
        handlers.get(&code.0).cloned()
    }

    pub(crate) fn set_handler(
        &self,
        code: RequestCode,
        handler: Arc<dyn RequestHandler>,
    ) -> Option<Arc<dyn RequestHandler>> {
        let mut handlers = self
            .handlers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        handlers.insert(code.0, handler)
    }
}
