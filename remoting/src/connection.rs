//! [`Connection`]: the cheap handle to one connection, and the state it
//! shares with its [`ConnectionDriver`](crate::driver::ConnectionDriver):
//! the opaque → waiter map, the close token and the close reason.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rmq_protocol::{RawCommand, RemotingCommand};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::error::{CloseReason, Error, Result};

/// Where a response (or the connection's failure) is delivered.
/// The response stays a [`RawCommand`] until its caller reads it, off the
/// connection's task.
pub(crate) type Waiter = oneshot::Sender<Result<RawCommand>>;

/// The waiters by opaque (a per-process seeded fast hash: looked up twice
/// per request).
type Pending = HashMap<i32, Waiter, foldhash::fast::RandomState>;

/// One command in a connection's write queue.
pub(crate) struct Outbound {
    pub(crate) cmd: RemotingCommand,
    pub(crate) kind: OutboundKind,
    /// Pre-encoded JSON members of the command's `extFields` (its map is
    /// then empty): see [`RemotingClient::invoke_header`](crate::RemotingClient::invoke_header).
    pub(crate) ext_json: Option<bytes::Bytes>,
}

pub(crate) enum OutboundKind {
    /// A request whose waiter is registered under `opaque`.
    Request { opaque: i32 },
    /// A oneway request; `ack` is answered once the frame is flushed.
    Oneway { ack: oneshot::Sender<Result<()>> },
    /// A response to a peer's request.
    Response,
}

/// State shared by a connection's handles and its driver.
pub(crate) struct ConnShared {
    id: u64,
    addr: String,
    /// opaque → waiter of every request sent (or about to be) and not yet
    /// answered. Locked briefly, never across an await.
    pending: Mutex<Pending>,
    /// Cancelled when the connection is closed, for any reason. A child of
    /// the client's token.
    token: CancellationToken,
    /// The client's token, to tell a shutdown from other closures.
    client_token: CancellationToken,
    reason: OnceLock<CloseReason>,
}

impl ConnShared {
    pub(crate) fn new(id: u64, addr: &str, client_token: &CancellationToken) -> Self {
        ConnShared {
            id,
            addr: addr.to_owned(),
            pending: Mutex::new(HashMap::default()),
            token: client_token.child_token(),
            client_token: client_token.clone(),
            reason: OnceLock::new(),
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `waiter` under the first opaque from `next_opaque` that is
    /// not in use; the guard unregisters it when dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        mut next_opaque: impl FnMut() -> i32,
        waiter: Waiter,
    ) -> PendingGuard {
        let mut pending = self.pending();
        loop {
            // A collision needs 2^32 requests while one is still pending.
            if let Entry::Vacant(slot) = pending.entry(next_opaque()) {
                let opaque = *slot.key();
                slot.insert(waiter);
                return PendingGuard {
                    conn: Arc::clone(self),
                    opaque,
                };
            }
        }
    }

    pub(crate) fn has_waiter(&self, opaque: i32) -> bool {
        self.pending().contains_key(&opaque)
    }

    pub(crate) fn pending_len(&self) -> usize {
        self.pending().len()
    }

    /// Hands a response to its waiter; a response nobody waits for (its
    /// caller timed out or went away) is dropped.
    pub(crate) fn complete(&self, response: RawCommand) {
        let opaque = response.opaque();
        let waiter = self.pending().remove(&opaque);
        match waiter {
            Some(w) => {
                if w.send(Ok(response)).is_err() {
                    debug!(
                        opaque,
                        "response arrived after its caller went away; dropped"
                    );
                }
            }
            None => debug!(
                opaque,
                code = response.code(),
                "response for no pending request (late or unknown); dropped"
            ),
        }
    }

    /// Fails the waiter of `opaque`, if still registered.
    pub(crate) fn fail(&self, opaque: i32, err: Error) {
        let waiter = self.pending().remove(&opaque);
        if let Some(w) = waiter {
            let _ = w.send(Err(err));
        }
    }

    /// Fails every registered waiter as "written, outcome unknown"; returns
    /// how many there were.
    pub(crate) fn fail_all(&self) -> usize {
        let waiters = std::mem::take(&mut *self.pending());
        let n = waiters.len();
        for (_, w) in waiters {
            let _ = w.send(Err(self.closed_error(true)));
        }
        n
    }

    /// Records why the connection closed and marks it closed.
    pub(crate) fn mark_closed(&self, reason: CloseReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.token.is_cancelled()
    }

    /// The error for a request caught by this connection's closure:
    /// [`Error::Shutdown`] during a shutdown, else [`Error::ConnectionClosed`].
    pub(crate) fn closed_error(&self, written: bool) -> Error {
        if self.client_token.is_cancelled() {
            return Error::Shutdown;
        }
        Error::ConnectionClosed {
            addr: self.addr.clone(),
            written,
            reason: self
                .reason
                .get()
                .cloned()
                .unwrap_or(CloseReason::ClosedLocally),
        }
    }
}

/// Unregisters a waiter when the call that registered it ends, however it
/// ends (response, error, timeout or the caller dropping the future).
pub(crate) struct PendingGuard {
    conn: Arc<ConnShared>,
    opaque: i32,
}

impl PendingGuard {
    pub(crate) fn opaque(&self) -> i32 {
        self.opaque
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.conn.pending().remove(&self.opaque);
    }
}

/// A cheap, clonable handle to one connection.
#[derive(Clone)]
pub(crate) struct Connection {
    shared: Arc<ConnShared>,
    tx: mpsc::Sender<Outbound>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.shared.id)
            .field("addr", &self.shared.addr)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Connection {
    pub(crate) fn new(shared: Arc<ConnShared>, tx: mpsc::Sender<Outbound>) -> Self {
        Connection { shared, tx }
    }

    pub(crate) fn shared(&self) -> &Arc<ConnShared> {
        &self.shared
    }

    pub(crate) fn id(&self) -> u64 {
        self.shared.id
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Closes the connection: its driver fails what is pending and exits.
    pub(crate) fn close(&self) {
        self.shared.token.cancel();
    }

    /// Queues `item`, waiting for room in the write queue.
    ///
    /// # Errors
    ///
    /// The "never written" closure error when the driver has stopped.
    pub(crate) async fn send(&self, item: Outbound) -> Result<()> {
        self.tx
            .send(item)
            .await
            .map_err(|_| self.shared.closed_error(false))
    }
}
