//! [`RemotingClient`]: the clonable handle through which every request goes:
//! its state, connections, handlers and shutdown. The request calls are in
//! `invoke`, opening a connection in `connect`.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use rmq_protocol::RequestCode;
use tracing::debug;

use crate::connect::connect_tcp;
use crate::connection::Connection;
use crate::error::Result;
use crate::hook::RequestHandler;
use crate::options::ClientOptions;
use crate::shared::ClientShared;

/// A multiplexed client for the RocketMQ remoting protocol.
///
/// Holds at most one TCP connection per address string (`"host:port"`),
/// opened on first use and shared by every caller; requests on it are
/// matched to responses by opaque, so any number may be in flight. A
/// connection that fails is dropped and the next call to that address opens
/// a new one.
///
/// Cloning is cheap (an `Arc`); all clones share the connections. Call
/// [`shutdown`](RemotingClient::shutdown) to close everything; dropping the
/// last clone only cancels the background tasks, best effort.
///
/// ```no_run
/// use std::time::Duration;
/// use rmq_protocol::{RemotingCommand, RequestCode, header::GetRouteInfoRequestHeader};
/// use rmq_remoting::{ClientOptions, RemotingClient};
///
/// # async fn demo() -> Result<(), rmq_remoting::Error> {
/// let client = RemotingClient::new(ClientOptions::default());
/// let request = RemotingCommand::new_request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
///     .with_ext_field("topic", "orders");
/// let response = client
///     .invoke("127.0.0.1:9876", request, Duration::from_secs(3))
///     .await?;
/// println!("code {}", response.response_code());
/// client.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RemotingClient {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<ClientShared>,
    next_opaque: AtomicI32,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Best effort: drivers and handler tasks stop on their own.
        self.shared.cancel.cancel();
    }
}

impl fmt::Debug for RemotingClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemotingClient")
            .field("options", &self.inner.shared.options)
            .field("connections", &self.connection_count())
            .field("shutdown", &self.is_shutdown())
            .finish()
    }
}

impl RemotingClient {
    /// A client with `options`. Nothing is connected or spawned until the
    /// first call.
    pub fn new(options: ClientOptions) -> Self {
        RemotingClient {
            inner: Arc::new(Inner {
                shared: Arc::new(ClientShared::new(options)),
                next_opaque: AtomicI32::new(1),
            }),
        }
    }

    /// The options this client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.shared.options
    }

    /// Registers the handler for requests with `code` that peers send to this
    /// client; returns the handler it replaces.
    ///
    /// Requests with no handler that expect a response are answered with
    /// `REQUEST_CODE_NOT_SUPPORTED`, like the Java client.
    pub fn register_handler(
        &self,
        code: RequestCode,
        handler: Arc<dyn RequestHandler>,
    ) -> Option<Arc<dyn RequestHandler>> {
        self.inner.shared.set_handler(code, handler)
    }

    /// Closes the connection to `addr`, if there is one; returns whether
    /// there was. Requests in flight on it fail with
    /// [`Error::ConnectionClosed`](crate::Error::ConnectionClosed); the next call reconnects. A connect in
    /// progress is not affected.
    pub fn close_connection(&self, addr: &str) -> bool {
        match self.inner.shared.take_connection(addr) {
            Some(conn) => {
                debug!(addr, "closing connection on request");
                conn.close();
                true
            }
            None => false,
        }
    }

    /// Closes every connection and stops every task this client spawned
    /// (connection drivers, request handlers), then returns. In-flight and
    /// later calls fail with [`Error::Shutdown`](crate::Error::Shutdown). Idempotent.
    pub async fn shutdown(&self) {
        let shared = &self.inner.shared;
        shared.cancel.cancel();
        shared.tracker.close();
        shared.tracker.wait().await;
        shared.clear();
        debug!("remoting client shut down");
    }

    /// Whether [`shutdown`](RemotingClient::shutdown) was called.
    pub fn is_shutdown(&self) -> bool {
        self.inner.shared.is_shutdown()
    }

    /// The number of open connections.
    pub fn connection_count(&self) -> usize {
        self.inner.shared.connections().len()
    }

    /// The number of requests to `addr` waiting for a response.
    pub fn pending_requests(&self, addr: &str) -> usize {
        self.inner
            .shared
            .connection(addr)
            .map_or(0, |c| c.shared().pending_len())
    }

    /// The number of requests waiting for a response, over all connections.
    pub fn total_pending_requests(&self) -> usize {
        self.inner
            .shared
            .connections()
            .iter()
            .map(|c| c.shared().pending_len())
            .sum()
    }

    pub(crate) fn next_opaque(&self) -> i32 {
        // Wraps at i32::MAX like Java's counter.
        self.inner.next_opaque.fetch_add(1, Ordering::Relaxed)
    }

    /// The open connection to `addr`, connecting if there is none.
    pub(crate) async fn connection(&self, addr: &str) -> Result<Connection> {
        let shared = &self.inner.shared;
        let mut attempts = 0;
        loop {
            let slot = shared.slot(addr)?;
            let conn = match slot.get() {
                Some(conn) => conn.clone(),
                // Boxed: connecting (TCP, maybe TLS) is rare, and inline it
                // would make every request's future kilobytes large.
                None => Box::pin(slot.get_or_try_init(|| connect_tcp(shared, addr)))
                    .await?
                    .clone(),
            };
            if !conn.is_closed() {
                return Ok(conn);
            }
            // Died before its driver could clear the slot: drop it, retry once.
            shared.remove_slot(addr, &slot);
            attempts += 1;
            if attempts >= 2 {
                return Err(conn.shared().closed_error(false));
            }
        }
    }
}

#[cfg(test)]
impl RemotingClient {
    /// Installs `io` as the connection to `addr` (tests drive duplex pipes).
    pub(crate) fn attach<T>(&self, addr: &str, io: T)
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
    {
        let conn = crate::driver::spawn_connection(&self.inner.shared, addr, io);
        let slot = self.inner.shared.slot(addr).unwrap();
        slot.set(conn).unwrap();
    }

    /// Tasks spawned by this client that are still alive.
    pub(crate) fn live_tasks(&self) -> usize {
        self.inner.shared.tracker.len()
    }
}
