//! What connections and servers share: [`ConnShared`] (one accepted
//! connection), the cluster-wide [`NetShared`] registry, and [`lock`].

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmq_protocol::{FLAG_ONEWAY, LanguageCode, RemotingCommand, RequestCode};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::ServerKind;
use crate::config::BrokerFlavor;
use crate::fault::{ConnectionId, Counters, FaultTable};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // State under these locks is updated in single steps; a panic in a test
    // thread must not wedge the fake.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One accepted connection, shared by its tasks and the state that refers
/// to it (consumer registrations, held pulls).
pub(crate) struct ConnShared {
    pub(crate) id: ConnectionId,
    pub(crate) peer: SocketAddr,
    pub(crate) server: ServerKind,
    pub(crate) flavor: BrokerFlavor,
    pub(super) out: mpsc::Sender<RemotingCommand>,
    pub(super) cancel: CancellationToken,
    pub(super) tracker: TaskTracker,
    pub(super) client_id: Mutex<Option<String>>,
    pub(super) opaque: Arc<AtomicI32>,
}

impl fmt::Debug for ConnShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnShared")
            .field("id", &self.id)
            .field("peer", &self.peer)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl ConnShared {
    /// Queues a frame, waiting while the writer is behind. `false` when the
    /// connection is closed.
    pub(crate) async fn send(&self, cmd: RemotingCommand) -> bool {
        tokio::select! {
            sent = self.out.send(cmd) => sent.is_ok(),
            () = self.cancel.cancelled() => false,
        }
    }

    /// Queues a frame without waiting; `false` when the queue is full or the
    /// connection closed (the frame is dropped).
    pub(crate) fn try_send(&self, cmd: RemotingCommand) -> bool {
        self.out.try_send(cmd).is_ok()
    }

    /// Sends a oneway request of the server's own (e.g.
    /// NOTIFY_CONSUMER_IDS_CHANGED) without waiting.
    pub(crate) fn notify(&self, code: RequestCode, fields: &[(&str, &str)]) -> bool {
        let mut cmd = RemotingCommand::new_request(code);
        cmd.language = LanguageCode::Java;
        cmd.version = self.flavor.version_ordinal();
        cmd.flag = FLAG_ONEWAY;
        cmd.opaque = self.opaque.fetch_add(1, Ordering::Relaxed);
        for (k, v) in fields {
            cmd.ext_fields.insert((*k).to_owned(), (*v).to_owned());
        }
        self.try_send(cmd)
    }

    /// Closes the connection (both tasks end; in-flight work is dropped).
    pub(crate) fn close(&self) {
        self.cancel.cancel();
    }

    /// Resolves when the connection closes.
    pub(crate) async fn closed(&self) {
        self.cancel.cancelled().await;
    }

    /// Runs `fut` as a task of this connection's server; it is not waited
    /// for by the connection, but by the server's shutdown.
    pub(crate) fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        let cancel = self.cancel.clone();
        self.tracker.spawn(async move {
            tokio::select! {
                () = fut => {}
                () = cancel.cancelled() => {}
            }
        });
    }

    /// The client id the connection was attributed to, if any.
    pub(crate) fn client_id(&self) -> Option<String> {
        lock(&self.client_id).clone()
    }

    pub(crate) fn set_client_id(&self, id: &str) {
        let mut slot = lock(&self.client_id);
        if slot.as_deref() != Some(id) {
            *slot = Some(id.to_owned());
        }
    }
}

/// A connection as [`FakeCluster::connections`](crate::FakeCluster::connections)
/// lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// Its id (for [`Fault::connection`](crate::Fault::connection)).
    pub id: ConnectionId,
    /// `namesrv` or the broker's name.
    pub server: String,
    /// The client's address.
    pub peer: SocketAddr,
    /// The client id, once a request carried it.
    pub client_id: Option<String>,
}

/// State every server of a cluster shares: fault rules, counters, the
/// connection registry.
#[derive(Debug, Default)]
pub(crate) struct NetShared {
    pub(crate) faults: FaultTable,
    pub(crate) counters: Counters,
    pub(super) conns: Mutex<HashMap<ConnectionId, Arc<ConnShared>>>,
    pub(super) next_conn: AtomicU64,
}

impl NetShared {
    pub(crate) fn connections(&self) -> Vec<ConnectionInfo> {
        let mut out: Vec<ConnectionInfo> = lock(&self.conns)
            .values()
            .map(|c| ConnectionInfo {
                id: c.id,
                server: c.server.to_string(),
                peer: c.peer,
                client_id: c.client_id(),
            })
            .collect();
        out.sort_by_key(|c| c.id);
        out
    }

    /// Closes every connection of `client_id` to `server` (or to every
    /// server); returns how many.
    pub(crate) fn close_client(&self, client_id: &str, server: Option<&ServerKind>) -> usize {
        let conns: Vec<Arc<ConnShared>> = lock(&self.conns)
            .values()
            .filter(|c| {
                c.client_id().as_deref() == Some(client_id) && server.is_none_or(|s| *s == c.server)
            })
            .cloned()
            .collect();
        for c in &conns {
            c.close();
        }
        conns.len()
    }

    pub(super) fn register(&self, conn: &Arc<ConnShared>) {
        lock(&self.conns).insert(conn.id, Arc::clone(conn));
    }

    pub(super) fn unregister(&self, id: ConnectionId) {
        lock(&self.conns).remove(&id);
    }
}
