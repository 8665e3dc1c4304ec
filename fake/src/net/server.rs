//! A running [`Server`] (its accept loop) and [`bind`].

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use super::{ConnShared, NetShared, ServerKind, Service, conn};
use crate::config::BrokerFlavor;
use crate::fault::ConnectionId;

/// Frames queued for one connection's writer before senders wait.
const OUT_QUEUE: usize = 1024;

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
