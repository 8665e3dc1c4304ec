//! [`RemotingClient`]: the clonable handle through which every request goes.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_protocol::header::CommandHeader;
use rmq_protocol::{
    FLAG_RESPONSE, RawCommand, RemotingCommand, RequestCode, ResponseCode, SerializeType,
};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tracing::{Instrument, Span, debug, debug_span, field, info, warn};

use crate::connection::{Connection, Outbound, OutboundKind};
use crate::driver::spawn_connection;
use crate::error::{Error, Result};
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

    /// Sends `request` to `addr` and waits for its response.
    ///
    /// A fresh opaque is assigned, the RPC hook (if any) runs before sending
    /// and on the response. `timeout` covers connecting (if needed), waiting
    /// for room in the write queue and the round trip. The response is
    /// returned whatever its code; interpreting it is the caller's job.
    ///
    /// # Errors
    ///
    /// * [`Error::Connect`]: no connection could be opened (retry-safe);
    /// * [`Error::Timeout`]: no response within `timeout`;
    /// * [`Error::ConnectionClosed`]: the connection closed first; its
    ///   `written` field says whether the request may have reached the peer;
    /// * [`Error::Protocol`]: the request cannot be encoded;
    /// * [`Error::Shutdown`]: the client is shut down.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future unregisters the request; if it was already
    /// written, its response is discarded when it arrives.
    pub async fn invoke(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        self.invoke_with(addr, request, None, timeout)
            .await
            .map(RawCommand::into_command)
    }

    /// Like [`invoke`](RemotingClient::invoke) for a request `code` with the
    /// typed `header` and `body`. With JSON headers and no RPC hook, the
    /// header goes to the wire through
    /// [`CommandHeader::write_json_members`], without building its ext-field
    /// map; otherwise (a hook may read or sign the map) the request is built
    /// with [`RemotingCommand::request`] and sent as by `invoke`. The peer
    /// sees the same fields either way.
    ///
    /// # Errors
    ///
    /// As [`invoke`](RemotingClient::invoke).
    ///
    /// # Cancel safety
    ///
    /// As [`invoke`](RemotingClient::invoke).
    pub async fn invoke_header<H: CommandHeader>(
        &self,
        addr: &str,
        code: RequestCode,
        header: &H,
        body: Bytes,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        self.invoke_header_raw(addr, code, header, body, timeout)
            .await
            .map(RawCommand::into_command)
    }

    /// [`invoke_header`](RemotingClient::invoke_header), answering with the
    /// response as a [`RawCommand`]: a caller that reads the answer into a
    /// typed header ([`RawCommand::decode_header`]) never builds its
    /// ext-field map. An RPC hook that observes responses sees the response
    /// as a [`RemotingCommand`], as with `invoke`.
    ///
    /// # Errors
    ///
    /// As [`invoke`](RemotingClient::invoke).
    ///
    /// # Cancel safety
    ///
    /// As [`invoke`](RemotingClient::invoke).
    pub async fn invoke_header_raw<H: CommandHeader>(
        &self,
        addr: &str,
        code: RequestCode,
        header: &H,
        body: Bytes,
        timeout: Duration,
    ) -> Result<RawCommand> {
        if self.options().rpc_hook().is_none()
            && self.options().serialize_type() == SerializeType::Json
        {
            // Room for a typical header: growing from empty reallocates often.
            let mut members = BytesMut::with_capacity(512);
            if header.write_json_members(&mut members) {
                let request = RemotingCommand::new_request(code).with_body(body);
                return self
                    .invoke_with(addr, request, Some(members.freeze()), timeout)
                    .await;
            }
        }
        let request = RemotingCommand::request(code, header).with_body(body);
        self.invoke_with(addr, request, None, timeout).await
    }

    async fn invoke_with(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        ext_json: Option<Bytes>,
        timeout: Duration,
    ) -> Result<RawCommand> {
        self.prepare(addr, &mut request)?;
        let code = request.request_code();
        let hook = self
            .options()
            .rpc_hook()
            .filter(|h| h.observes_responses())
            .cloned();
        let request_copy = hook.as_ref().map(|_| request.clone());
        let span = debug_span!("request", addr, code = ?code, opaque = field::Empty);
        let started = Instant::now();
        let mut written = false;
        let result = tokio::time::timeout(
            timeout,
            self.round_trip(addr, request, ext_json, &mut written),
        )
        .instrument(span.clone())
        .await;
        let _enter = span.enter();
        let response = match result {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => {
                debug!(error = %rmq_protocol::ErrorChain(&e), "request failed");
                return Err(e);
            }
            Err(_elapsed) => {
                debug!(?timeout, written, "request timed out");
                crate::metrics::request_timed_out(code);
                return Err(Error::Timeout {
                    addr: addr.to_owned(),
                    code,
                    after: timeout,
                    written,
                });
            }
        };
        debug!(response_code = response.code(), elapsed = ?started.elapsed(), "response");
        if let (Some(hook), Some(request)) = (hook, request_copy) {
            let mut response = response.into_command();
            hook.after_response(addr, &request, &mut response);
            return Ok(RawCommand::from(response));
        }
        Ok(response)
    }

    /// Like [`invoke`](RemotingClient::invoke), but a response whose code is
    /// not in `accepted` becomes [`Error::Response`], carrying the broker's
    /// code and remark.
    ///
    /// # Errors
    ///
    /// Those of [`invoke`](RemotingClient::invoke), plus [`Error::Response`].
    ///
    /// # Cancel safety
    ///
    /// As [`invoke`](RemotingClient::invoke).
    pub async fn invoke_expect(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
        accepted: &[ResponseCode],
    ) -> Result<RemotingCommand> {
        let code = request.request_code();
        let response = self.invoke(addr, request, timeout).await?;
        if accepted.contains(&response.response_code()) {
            Ok(response)
        } else {
            Err(Error::Response {
                addr: addr.to_owned(),
                request: code,
                code: response.response_code(),
                remark: response.remark,
            })
        }
    }

    /// Sends `request` to `addr` with the oneway flag set; no response is
    /// expected. Resolves once the frame has been flushed to the socket.
    ///
    /// `timeout` covers connecting, queueing and writing.
    ///
    /// # Errors
    ///
    /// As [`invoke`](RemotingClient::invoke), except that there is no
    /// response to wait for.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after the request was queued does not withdraw
    /// it: it is still written.
    pub async fn invoke_oneway(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<()> {
        request.set_oneway();
        self.prepare(addr, &mut request)?;
        let code = request.request_code();
        let opaque = self.next_opaque();
        request.opaque = opaque;
        let span = debug_span!("request", addr, code = ?code, opaque, oneway = true);
        let mut written = false;
        let send = async {
            let conn = self.connection(addr).await?;
            let (ack, acked) = oneshot::channel();
            debug!("sending oneway request");
            conn.send(Outbound {
                cmd: request,
                kind: OutboundKind::Oneway { ack },
                ext_json: None,
            })
            .await?;
            written = true;
            acked
                .await
                .unwrap_or_else(|_| Err(conn.shared().closed_error(true)))
        };
        match tokio::time::timeout(timeout, send).instrument(span).await {
            Ok(result) => result,
            Err(_elapsed) => {
                crate::metrics::request_timed_out(code);
                Err(Error::Timeout {
                    addr: addr.to_owned(),
                    code,
                    after: timeout,
                    written,
                })
            }
        }
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
    /// [`Error::ConnectionClosed`]; the next call reconnects. A connect in
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
    /// later calls fail with [`Error::Shutdown`]. Idempotent.
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

    fn next_opaque(&self) -> i32 {
        // Wraps at i32::MAX like Java's counter.
        self.inner.next_opaque.fetch_add(1, Ordering::Relaxed)
    }

    /// Checks the client is running, marks `request` a request in the
    /// configured serialization and runs the hook.
    fn prepare(&self, addr: &str, request: &mut RemotingCommand) -> Result<()> {
        if self.is_shutdown() {
            return Err(Error::Shutdown);
        }
        request.flag &= !FLAG_RESPONSE;
        request.serialize_type = self.options().serialize_type();
        if let Some(hook) = self.options().rpc_hook() {
            hook.before_request(addr, request);
        }
        Ok(())
    }

    /// Connects if needed, registers the waiter, queues and waits.
    /// `written` becomes true once the request is in the write queue.
    async fn round_trip(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        ext_json: Option<Bytes>,
        written: &mut bool,
    ) -> Result<RawCommand> {
        let conn = self.connection(addr).await?;
        let (waiter, response) = oneshot::channel();
        let guard = conn.shared().register(|| self.next_opaque(), waiter);
        let opaque = guard.opaque();
        request.opaque = opaque;
        Span::current().record("opaque", opaque);
        debug!("sending request");
        conn.send(Outbound {
            cmd: request,
            kind: OutboundKind::Request { opaque },
            ext_json,
        })
        .await?;
        *written = true;
        let result = response
            .await
            .unwrap_or_else(|_| Err(conn.shared().closed_error(true)));
        drop(guard);
        result
    }

    /// The open connection to `addr`, connecting if there is none.
    async fn connection(&self, addr: &str) -> Result<Connection> {
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

/// Opens a TCP connection to `addr` and starts its driver.
///
/// Holds a tracker token while connecting, so `shutdown` waits for it, and
/// a connect racing with `shutdown` cannot leave a driver behind.
async fn connect_tcp(shared: &Arc<ClientShared>, addr: &str) -> Result<Connection> {
    let _token = shared.tracker.token();
    if shared.is_shutdown() {
        return Err(Error::Shutdown);
    }
    let timeout = shared.options.connect_timeout();
    let connected = tokio::select! {
        biased;
        () = shared.cancel.cancelled() => return Err(Error::Shutdown),
        r = tokio::time::timeout(timeout, TcpStream::connect(addr)) => r,
    };
    let stream = match connected {
        Ok(Ok(stream)) => stream,
        Ok(Err(source)) => {
            warn!(addr, error = %source, "connect failed");
            return Err(Error::Connect {
                addr: addr.to_owned(),
                source,
            });
        }
        Err(_elapsed) => {
            warn!(addr, ?timeout, "connect timed out");
            return Err(Error::Connect {
                addr: addr.to_owned(),
                source: io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connect timed out after {timeout:?}"),
                ),
            });
        }
    };
    if shared.options.tcp_nodelay() {
        if let Err(e) = stream.set_nodelay(true) {
            debug!(addr, error = %rmq_protocol::ErrorChain(&e), "cannot set TCP_NODELAY");
        }
    }
    #[cfg(feature = "tls")]
    if let Some(tls) = shared.options.tls() {
        let handshake = tokio::select! {
            biased;
            () = shared.cancel.cancelled() => return Err(Error::Shutdown),
            r = tokio::time::timeout(timeout, tls.handshake(addr, stream)) => r,
        };
        let stream = match handshake {
            Ok(Ok(stream)) => stream,
            Ok(Err(source)) => {
                warn!(addr, error = %source, "TLS handshake failed");
                return Err(Error::Tls {
                    addr: addr.to_owned(),
                    source,
                });
            }
            Err(_elapsed) => {
                warn!(addr, ?timeout, "TLS handshake timed out");
                return Err(Error::Tls {
                    addr: addr.to_owned(),
                    source: io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no TLS handshake within {timeout:?} (does the peer speak TLS?)"),
                    ),
                });
            }
        };
        log_connected(shared, addr, "TLS");
        return Ok(spawn_connection(shared, addr, stream));
    }
    log_connected(shared, addr, "plaintext");
    Ok(spawn_connection(shared, addr, stream))
}

fn log_connected(shared: &ClientShared, addr: &str, transport: &'static str) {
    if shared.mark_connected(addr) {
        crate::metrics::reconnected();
        warn!(addr, transport, "reconnected");
    } else {
        info!(addr, transport, "connected");
    }
}

#[cfg(test)]
impl RemotingClient {
    /// Installs `io` as the connection to `addr` (tests drive duplex pipes).
    pub(crate) fn attach<T>(&self, addr: &str, io: T)
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
    {
        let conn = spawn_connection(&self.inner.shared, addr, io);
        let slot = self.inner.shared.slot(addr).unwrap();
        slot.set(conn).unwrap();
    }

    /// Tasks spawned by this client that are still alive.
    pub(crate) fn live_tasks(&self) -> usize {
        self.inner.shared.tracker.len()
    }
}
