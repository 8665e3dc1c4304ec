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

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_protocol::header::CommandHeader;
use rmq_protocol::{
    FLAG_ONEWAY, FLAG_RESPONSE, LanguageCode, RemotingCommand, RequestCode, ResponseCode,
    SerializeType,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::config::BrokerFlavor;
use crate::fault::{ConnectionId, Counters, FaultTable};

/// Frames queued for one connection's writer before senders wait.
const OUT_QUEUE: usize = 1024;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // State under these locks is updated in single steps; a panic in a test
    // thread must not wedge the fake.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which server a connection belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ServerKind {
    NameServer,
    Broker(String),
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerKind::NameServer => f.write_str("namesrv"),
            ServerKind::Broker(name) => f.write_str(name),
        }
    }
}

/// What a server does with requests.
pub(crate) trait Service: Send + Sync + 'static {
    /// Handles one request. `Some` is answered at once (nothing for oneway
    /// requests); `None` means the service kept the responder.
    fn handle(&self, incoming: Incoming) -> Option<Handled>;

    /// The connection closed (any reason).
    fn connection_closed(&self, conn: &Arc<ConnShared>);
}

/// One request as a service receives it.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) conn: Arc<ConnShared>,
    pub(crate) cmd: RemotingCommand,
    pub(crate) responder: Responder,
}

impl Incoming {
    /// Answers with `response`.
    pub(crate) fn reply(self, response: RemotingCommand) -> Option<Handled> {
        Some(Handled {
            responder: self.responder,
            response,
        })
    }
}

/// An answer ready to go.
#[derive(Debug)]
pub(crate) struct Handled {
    pub(crate) responder: Responder,
    pub(crate) response: RemotingCommand,
}

/// What a fault asks to do with the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Post {
    None,
    Rewrite(ResponseCode),
    Delay(Duration),
    Drop,
}

/// Sends the answer to one request: sets its opaque, flags, version and
/// header type, and applies what a fault asked for.
#[derive(Debug)]
pub(crate) struct Responder {
    conn: Arc<ConnShared>,
    opaque: i32,
    oneway: bool,
    serialize_type: SerializeType,
    post: Post,
}

impl Responder {
    pub(crate) fn new(conn: Arc<ConnShared>, request: &RemotingCommand, post: Post) -> Self {
        Responder {
            conn,
            opaque: request.opaque,
            oneway: request.is_oneway(),
            serialize_type: request.serialize_type,
            post,
        }
    }

    /// Sends `response` (nothing for a oneway request).
    pub(crate) async fn respond(self, mut response: RemotingCommand) {
        if self.oneway {
            return;
        }
        response.opaque = self.opaque;
        response.flag = FLAG_RESPONSE;
        response.language = LanguageCode::Java;
        response.version = self.conn.flavor.version_ordinal();
        // 4.9.x answers in the request's header type; 5.x in its own (JSON).
        response.serialize_type = match self.conn.flavor {
            BrokerFlavor::V4_9 => self.serialize_type,
            _ => SerializeType::Json,
        };
        match self.post {
            Post::None => {
                self.conn.send(response).await;
            }
            Post::Rewrite(code) => {
                response.code = code.0;
                self.conn.send(response).await;
            }
            Post::Drop => {}
            Post::Delay(d) => {
                let conn = Arc::clone(&self.conn);
                self.conn.spawn(async move {
                    tokio::time::sleep(d).await;
                    conn.send(response).await;
                });
            }
        }
    }
}

/// A response with `code` and `remark` (opaque and flags are the
/// responder's job).
pub(crate) fn response(code: ResponseCode, remark: impl Into<Option<String>>) -> RemotingCommand {
    RemotingCommand::new_response(code, remark.into())
}

/// A response with `code` carrying `header`'s fields.
pub(crate) fn response_with<H: CommandHeader>(code: ResponseCode, header: &H) -> RemotingCommand {
    let mut cmd = RemotingCommand::new_response(code, None);
    header.write_to(&mut cmd.ext_fields);
    cmd
}

/// One accepted connection, shared by its tasks and the state that refers
/// to it (consumer registrations, held pulls).
pub(crate) struct ConnShared {
    pub(crate) id: ConnectionId,
    pub(crate) peer: SocketAddr,
    pub(crate) server: ServerKind,
    pub(crate) flavor: BrokerFlavor,
    out: mpsc::Sender<RemotingCommand>,
    cancel: CancellationToken,
    tracker: TaskTracker,
    client_id: Mutex<Option<String>>,
    opaque: Arc<AtomicI32>,
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
    conns: Mutex<HashMap<ConnectionId, Arc<ConnShared>>>,
    next_conn: AtomicU64,
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

    fn register(&self, conn: &Arc<ConnShared>) {
        lock(&self.conns).insert(conn.id, Arc::clone(conn));
    }

    fn unregister(&self, id: ConnectionId) {
        lock(&self.conns).remove(&id);
    }
}

/// A running server: its accept loop and every connection task.
#[derive(Debug)]
pub(crate) struct Server {
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl Server {
    /// Starts serving `listener`.
    pub(crate) fn start(
        listener: TcpListener,
        kind: ServerKind,
        flavor: BrokerFlavor,
        service: Arc<dyn Service>,
        net: Arc<NetShared>,
        parent: &CancellationToken,
    ) -> Server {
        let cancel = parent.child_token();
        let tracker = TaskTracker::new();
        let opaque = Arc::new(AtomicI32::new(0));
        {
            let cancel = cancel.clone();
            let tracker2 = tracker.clone();
            tracker.spawn(async move {
                loop {
                    tokio::select! {
                        () = cancel.cancelled() => break,
                        accepted = listener.accept() => match accepted {
                            Ok((stream, peer)) => {
                                let _ = stream.set_nodelay(true);
                                let id = ConnectionId(net.next_conn.fetch_add(1, Ordering::Relaxed));
                                let (out, rx) = mpsc::channel(OUT_QUEUE);
                                let conn = Arc::new(ConnShared {
                                    id,
                                    peer,
                                    server: kind.clone(),
                                    flavor,
                                    out,
                                    cancel: cancel.child_token(),
                                    tracker: tracker2.clone(),
                                    client_id: Mutex::new(None),
                                    opaque: Arc::clone(&opaque),
                                });
                                debug!(%peer, server = %kind, conn = %id, "fake: accepted");
                                net.register(&conn);
                                tracker2.spawn(conn::run(
                                    conn,
                                    stream,
                                    rx,
                                    Arc::clone(&service),
                                    Arc::clone(&net),
                                ));
                            }
                            Err(e) => {
                                warn!(error = %e, server = %kind, "fake: accept failed");
                                // E.g. out of file descriptors: do not spin.
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                        },
                    }
                }
            });
        }
        Server { cancel, tracker }
    }

    /// Stops accepting, closes every connection and waits for their tasks.
    pub(crate) async fn stop(&self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }

    /// Cancels without waiting (for `Drop`).
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
        self.tracker.close();
    }
}

/// Binds `host:port` (0 = any free port).
pub(crate) fn bind(host: std::net::IpAddr, port: u16) -> crate::Result<(TcpListener, SocketAddr)> {
    let want = SocketAddr::new(host, port);
    let err = |source| crate::FakeError::Bind {
        addr: want.to_string(),
        source,
    };
    let std_listener = std::net::TcpListener::bind(want).map_err(err)?;
    std_listener.set_nonblocking(true).map_err(err)?;
    let addr = std_listener.local_addr().map_err(err)?;
    let listener = TcpListener::from_std(std_listener).map_err(err)?;
    Ok((listener, addr))
}
