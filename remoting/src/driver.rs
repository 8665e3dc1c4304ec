//! [`ConnectionDriver`]: the one task that owns a connection's socket.
//!
//! The driver runs a reader and a writer concurrently inside its task
//! (`select!`, not two tasks), so a peer that stops reading never stops us
//! from reading its responses. The reader routes frames by the response bit:
//! responses go to the waiter map by opaque, requests to a spawned handler
//! task. The writer drains the write queue in batches, encodes into one
//! buffer and flushes once per batch. When either side fails, or the
//! connection's token is cancelled, the driver tears down: queued commands
//! fail as "never written", registered waiters as "written, outcome unknown".

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::BytesMut;
use futures::{FutureExt, StreamExt};
use rmq_protocol::{
    FLAG_ONEWAY, FLAG_RESPONSE, RawCodec, RemotingCodec, RemotingCommand, ResponseCode,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, WriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{Encoder, FramedRead};
use tracing::{Instrument, debug, debug_span, info_span, trace, warn};

use crate::connection::{ConnShared, Connection, Outbound, OutboundKind};
use crate::error::{CloseReason, Error, Result};
use crate::shared::ClientShared;

/// At most this many queued commands are encoded per flush.
const MAX_BATCH: usize = 128;
/// A batch stops growing once this many bytes are buffered.
const BATCH_BYTES: usize = 256 * 1024;
/// After a flush, a write buffer grown beyond this is released.
const KEEP_BUFFER: usize = 1024 * 1024;

/// Starts a driver for `io` (already connected to `addr`) and returns the
/// handle to it.
pub(crate) fn spawn_connection<T>(client: &Arc<ClientShared>, addr: &str, io: T) -> Connection
where
    T: AsyncRead + AsyncWrite + Send + 'static,
{
    let id = client.next_conn_id();
    let (tx, rx) = mpsc::channel(client.options.write_queue_capacity());
    let conn = Arc::new(ConnShared::new(id, addr, &client.cancel));
    crate::metrics::connection_opened();
    let driver = ConnectionDriver {
        io,
        conn: Arc::clone(&conn),
        client: Arc::clone(client),
        rx,
        tx: tx.clone(),
    };
    // A root span: it lives as long as the connection, and a span it had as parent (the send
    // that opened the connection, say) could not end before it.
    let span = info_span!(parent: None, "rmq_connection", addr = %addr, conn_id = id);
    client.tracker.spawn(driver.run().instrument(span));
    Connection::new(conn, tx)
}

/// Owns one connection's I/O, its write queue's receiver and a sender for
/// responses to the peer's requests.
pub(crate) struct ConnectionDriver<T> {
    io: T,
    conn: Arc<ConnShared>,
    client: Arc<ClientShared>,
    rx: mpsc::Receiver<Outbound>,
    tx: mpsc::Sender<Outbound>,
}

impl<T> ConnectionDriver<T>
where
    T: AsyncRead + AsyncWrite + Send + 'static,
{
    pub(crate) async fn run(self) {
        let ConnectionDriver {
            io,
            conn,
            client,
            mut rx,
            tx,
        } = self;
        let codec = RemotingCodec::new().with_max_frame_len(client.options.max_frame_len());
        let (rd, wr) = tokio::io::split(io);
        let mut reader = FramedRead::new(rd, RawCodec::from(codec.clone()));
        let mut writer = Writer {
            wr,
            codec,
            buf: BytesMut::new(),
            unflushed: Vec::new(),
        };
        let reason = tokio::select! {
            biased;
            () = conn.token().cancelled() => CloseReason::ClosedLocally,
            r = read_loop(&mut reader, &conn, &client, &tx) => r,
            r = writer.run(&mut rx, &conn) => r,
        };
        // Close the socket before anyone learns the connection is gone.
        let unflushed = std::mem::take(&mut writer.unflushed);
        drop(reader);
        drop(writer);
        teardown(&conn, &client, &mut rx, unflushed, reason);
    }
}

/// Fails everything still attached to the closed connection and removes it
/// from the client's table, so the next call reconnects.
fn teardown(
    conn: &ConnShared,
    client: &ClientShared,
    rx: &mut mpsc::Receiver<Outbound>,
    unflushed: Vec<oneshot::Sender<Result<()>>>,
    reason: CloseReason,
) {
    let shutting_down = client.is_shutdown();
    let local = matches!(reason, CloseReason::ClosedLocally);
    conn.mark_closed(reason.clone());
    client.remove_connection(conn.addr(), conn.id());
    crate::metrics::connection_closed();

    // Order matters: first what was never written (still queued), then what
    // may have been (the waiter map).
    rx.close();
    let mut never_written = 0usize;
    while let Ok(Outbound { kind, .. }) = rx.try_recv() {
        never_written += 1;
        match kind {
            OutboundKind::Request { opaque } => conn.fail(opaque, conn.closed_error(false)),
            OutboundKind::Oneway { ack } => {
                let _ = ack.send(Err(conn.closed_error(false)));
            }
            OutboundKind::Response => {}
        }
    }
    let mut in_flight = unflushed.len();
    for ack in unflushed {
        let _ = ack.send(Err(conn.closed_error(true)));
    }
    in_flight += conn.fail_all();

    if shutting_down || local {
        debug!(reason = %reason, in_flight, never_written, "connection closed");
    } else {
        warn!(
            reason = %reason,
            error = ?std::error::Error::source(&reason),
            in_flight,
            never_written,
            "connection closed; the next call reconnects"
        );
    }
}

/// Reads frames until the stream ends or fails.
async fn read_loop<R>(
    reader: &mut FramedRead<R, RawCodec>,
    conn: &Arc<ConnShared>,
    client: &Arc<ClientShared>,
    tx: &mpsc::Sender<Outbound>,
) -> CloseReason
where
    R: AsyncRead + Unpin,
{
    while let Some(frame) = reader.next().await {
        match frame {
            Ok(cmd) if cmd.is_response() => {
                trace!(
                    opaque = cmd.opaque(),
                    code = cmd.code(),
                    "response received"
                );
                conn.complete(cmd);
            }
            Ok(cmd) => dispatch_request(cmd.into_command(), conn, client, tx),
            Err(e) => return CloseReason::from_decode(e),
        }
    }
    CloseReason::PeerClosed
}

/// Runs the handler for a request from the peer in its own tracked task and
/// queues its response (unless the request is oneway).
fn dispatch_request(
    req: RemotingCommand,
    conn: &Arc<ConnShared>,
    client: &Arc<ClientShared>,
    tx: &mpsc::Sender<Outbound>,
) {
    let code = req.request_code();
    let opaque = req.opaque;
    let oneway = req.is_oneway();
    let handler = client.handler(code);
    let span = debug_span!("peer_request", code = ?code, opaque, oneway);
    let conn = Arc::clone(conn);
    let tx = tx.clone();
    let shutdown = client.cancel.clone();
    let serialize_type = client.options.serialize_type();
    let task = async move {
        let response = match handler {
            Some(handler) => {
                debug!("request from peer");
                let fut = AssertUnwindSafe(handler.handle(conn.addr(), req)).catch_unwind();
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => return,
                    r = fut => r.unwrap_or_else(|panic| {
                        warn!(panic = panic_message(&*panic), "request handler panicked");
                        Some(RemotingCommand::new_response(
                            ResponseCode::SYSTEM_ERROR,
                            Some(format!("request handler panicked: {}", panic_message(&*panic))),
                        ))
                    }),
                }
            }
            None => {
                warn!("no handler registered for this request code");
                Some(RemotingCommand::response_to(
                    &req,
                    ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
                    Some(format!(" request type {} not supported", code.0)),
                ))
            }
        };
        if oneway {
            return;
        }
        let Some(mut response) = response else {
            debug!("handler returned no response");
            return;
        };
        response.opaque = opaque;
        response.flag = (response.flag | FLAG_RESPONSE) & !FLAG_ONEWAY;
        response.serialize_type = serialize_type;
        let item = Outbound {
            cmd: response,
            kind: OutboundKind::Response,
            ext_json: None,
        };
        tokio::select! {
            biased;
            () = conn.token().cancelled() => debug!("connection closed; response dropped"),
            r = tx.send(item) => if r.is_err() {
                debug!("connection closed; response dropped");
            },
        }
    };
    client.tracker.spawn(task.instrument(span));
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(non-string panic payload)")
}

/// The write side: encodes queued commands into `buf` and flushes them.
struct Writer<W> {
    wr: WriteHalf<W>,
    codec: RemotingCodec,
    buf: BytesMut,
    /// Acks of oneway requests encoded but not yet flushed; on a failure
    /// they count as "written, outcome unknown".
    unflushed: Vec<oneshot::Sender<Result<()>>>,
}

impl<W: AsyncWrite> Writer<W> {
    async fn run(&mut self, rx: &mut mpsc::Receiver<Outbound>, conn: &ConnShared) -> CloseReason {
        loop {
            // The driver holds a sender, so `None` cannot happen while it runs.
            let Some(first) = rx.recv().await else {
                return CloseReason::ClosedLocally;
            };
            self.encode(first, conn);
            let mut n = 1;
            while n < MAX_BATCH && self.buf.len() < BATCH_BYTES {
                let Ok(item) = rx.try_recv() else { break };
                self.encode(item, conn);
                n += 1;
            }
            if self.buf.is_empty() {
                continue;
            }
            trace!(commands = n, bytes = self.buf.len(), "flushing");
            if let Err(e) = self.flush().await {
                return CloseReason::Write(Arc::new(e));
            }
            for ack in self.unflushed.drain(..) {
                let _ = ack.send(Ok(()));
            }
        }
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        self.wr.write_all_buf(&mut self.buf).await?;
        self.wr.flush().await?;
        if self.buf.capacity() > KEEP_BUFFER {
            self.buf = BytesMut::new();
        }
        Ok(())
    }

    /// Encodes one command into the buffer. An encoding failure fails only
    /// that command (the buffer is rolled back).
    fn encode(&mut self, item: Outbound, conn: &ConnShared) {
        let Outbound {
            cmd,
            kind,
            ext_json,
        } = item;
        if let OutboundKind::Request { opaque } = kind {
            if !conn.has_waiter(opaque) {
                debug!(
                    opaque,
                    "request abandoned by its caller before being written; skipped"
                );
                return;
            }
        }
        let mark = self.buf.len();
        let (code, opaque) = (cmd.code, cmd.opaque);
        let encoded = match &ext_json {
            Some(members) => self
                .codec
                .encode_with_ext_json(&cmd, members, &mut self.buf),
            None => self.codec.encode(cmd, &mut self.buf),
        };
        match encoded {
            Ok(()) => {
                trace!(code, opaque, "command encoded");
                if let OutboundKind::Oneway { ack } = kind {
                    self.unflushed.push(ack);
                }
            }
            Err(e) => {
                self.buf.truncate(mark);
                match kind {
                    OutboundKind::Request { opaque } => conn.fail(opaque, Error::Protocol(e)),
                    OutboundKind::Oneway { ack } => {
                        let _ = ack.send(Err(Error::Protocol(e)));
                    }
                    OutboundKind::Response => {
                        warn!(code, opaque, error = %rmq_protocol::ErrorChain(&e), "cannot encode a response to the peer; dropped");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use futures::SinkExt;
    use rmq_protocol::RequestCode;
    use tokio::io::AsyncReadExt;
    use tokio_util::codec::Framed;

    use crate::{ClientOptions, RemotingClient};

    use super::*;

    const ADDR: &str = "peer:10911";
    const LONG: Duration = Duration::from_secs(20);

    fn invoke(
        client: &RemotingClient,
        len: usize,
    ) -> tokio::task::JoinHandle<Result<RemotingCommand>> {
        let client = client.clone();
        let cmd = RemotingCommand::new_request(RequestCode::SEND_MESSAGE).with_body(vec![7u8; len]);
        tokio::spawn(async move { client.invoke(ADDR, cmd, LONG).await })
    }

    #[tokio::test]
    async fn queued_requests_fail_as_never_written_and_the_one_on_the_wire_as_unknown() {
        let client = RemotingClient::new(ClientOptions::default());
        let (ours, mut theirs) = tokio::io::duplex(64);
        client.attach(ADDR, ours);
        let first = invoke(&client, 4096);
        // The writer is now stuck inside the first frame (the pipe holds 64 bytes).
        let mut head = [0u8; 8];
        theirs.read_exact(&mut head).await.unwrap();
        let queued: Vec<_> = (0..4).map(|_| invoke(&client, 16)).collect();
        while client.pending_requests(ADDR) < 5 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(theirs);

        let err = first.await.unwrap().unwrap_err();
        assert!(
            matches!(err, Error::ConnectionClosed { written: true, .. }),
            "{err:?}"
        );
        for call in queued {
            let err = call.await.unwrap().unwrap_err();
            assert!(
                matches!(err, Error::ConnectionClosed { written: false, .. }),
                "{err:?}"
            );
            assert!(err.is_retry_safe());
        }
        assert_eq!(client.connection_count(), 0);
        client.shutdown().await;
        assert_eq!(client.live_tasks(), 0);
    }

    /// Attaches a peer to `client`, starts `call`, answers the request it
    /// receives with `answer(request)`; returns the request and the call's
    /// result.
    async fn answer_one<T: Send + 'static>(
        client: &RemotingClient,
        call: impl FnOnce(RemotingClient) -> tokio::task::JoinHandle<T>,
        answer: impl FnOnce(&RemotingCommand) -> RemotingCommand,
    ) -> (RemotingCommand, T) {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        client.attach(ADDR, ours);
        let mut peer = Framed::new(theirs, RemotingCodec::new());
        let call = call(client.clone());
        let request = tokio::time::timeout(LONG, peer.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        peer.send(answer(&request)).await.unwrap();
        let result = tokio::time::timeout(LONG, call).await.unwrap().unwrap();
        (request, result)
    }

    /// Sends a PULL_MESSAGE with a typed header through `client` and answers
    /// it; returns what the peer received.
    async fn typed_round_trip(
        client: &RemotingClient,
        header: &rmq_protocol::header::PullMessageRequestHeader,
    ) -> RemotingCommand {
        let header = header.clone();
        let (request, response) = answer_one(
            client,
            move |client| {
                tokio::spawn(async move {
                    client
                        .invoke_header(
                            ADDR,
                            RequestCode::PULL_MESSAGE,
                            &header,
                            bytes::Bytes::from_static(b"body"),
                            LONG,
                        )
                        .await
                })
            },
            |request| RemotingCommand::response_to(request, ResponseCode::SUCCESS, None),
        )
        .await;
        assert_eq!(response.unwrap().response_code(), ResponseCode::SUCCESS);
        request
    }

    fn pull_header() -> rmq_protocol::header::PullMessageRequestHeader {
        rmq_protocol::header::PullMessageRequestHeader {
            consumer_group: "group \"q\" ü".into(),
            topic: "orders".into(),
            queue_id: 2,
            queue_offset: 42,
            max_msg_nums: 32,
            subscription: Some("TagA || TagB".into()),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_typed_header_reaches_the_peer_as_its_ext_fields() {
        use rmq_protocol::header::CommandHeader;
        let client = RemotingClient::new(ClientOptions::default());
        let header = pull_header();
        let request = typed_round_trip(&client, &header).await;
        assert_eq!(request.request_code(), RequestCode::PULL_MESSAGE);
        assert_eq!(request.ext_fields, header.to_ext_fields());
        assert_eq!(&request.body[..], b"body");
        client.shutdown().await;
    }

    #[tokio::test]
    async fn an_rpc_hook_sees_and_signs_the_ext_fields_of_a_typed_header() {
        use rmq_protocol::header::CommandHeader;
        struct Sign;
        impl crate::RpcHook for Sign {
            fn before_request(&self, _addr: &str, request: &mut RemotingCommand) {
                let topic = request.ext_field("topic").unwrap_or("none").to_owned();
                request
                    .ext_fields
                    .insert("Signature".into(), format!("signed {topic}"));
            }
        }
        let client = RemotingClient::new(ClientOptions::default().with_rpc_hook(Arc::new(Sign)));
        let header = pull_header();
        let request = typed_round_trip(&client, &header).await;
        let mut expected = header.to_ext_fields();
        expected.insert("Signature".into(), "signed orders".into());
        assert_eq!(request.ext_fields, expected);
        client.shutdown().await;
    }

    /// Sends a PULL_MESSAGE through `invoke_header_raw` and answers it with
    /// a pull response header; returns the raw response.
    async fn raw_round_trip(client: &RemotingClient) -> rmq_protocol::RawCommand {
        let (_, response) = answer_one(
            client,
            |client| {
                tokio::spawn(async move {
                    client
                        .invoke_header_raw(
                            ADDR,
                            RequestCode::PULL_MESSAGE,
                            &pull_header(),
                            bytes::Bytes::new(),
                            LONG,
                        )
                        .await
                })
            },
            |request| {
                RemotingCommand::response_to(request, ResponseCode::SUCCESS, None)
                    .with_ext_field("suggestWhichBrokerId", "0")
                    .with_ext_field("nextBeginOffset", "43")
                    .with_ext_field("minOffset", "0")
                    .with_ext_field("maxOffset", "50")
                    .with_ext_field("note", "a \"quoted\" é")
                    .with_body("msgs")
            },
        )
        .await;
        response.unwrap()
    }

    #[tokio::test]
    async fn a_raw_response_reads_its_typed_header_in_place() {
        let client = RemotingClient::new(ClientOptions::default());
        let raw = raw_round_trip(&client).await;
        let h: rmq_protocol::header::PullMessageResponseHeader = raw.decode_header().unwrap();
        assert_eq!((h.next_begin_offset, h.max_offset), (43, 50));
        assert_eq!(raw.ext_field("note"), Some("a \"quoted\" é"));
        assert_eq!(&raw.body()[..], b"msgs");
        let cmd = raw.into_command();
        assert_eq!(cmd.ext_fields.len(), 5);
        assert_eq!(cmd.ext_field("nextBeginOffset"), Some("43"));
        client.shutdown().await;
    }

    #[tokio::test]
    async fn a_hook_observing_responses_sees_and_edits_a_raw_response() {
        struct Observe;
        impl crate::RpcHook for Observe {
            fn before_request(&self, _addr: &str, _request: &mut RemotingCommand) {}
            fn after_response(
                &self,
                _addr: &str,
                _request: &RemotingCommand,
                response: &mut RemotingCommand,
            ) {
                let next = response
                    .ext_field("nextBeginOffset")
                    .unwrap_or("none")
                    .to_owned();
                response.ext_fields.insert("seen".into(), next);
            }
        }
        let client = RemotingClient::new(ClientOptions::default().with_rpc_hook(Arc::new(Observe)));
        let raw = raw_round_trip(&client).await;
        assert_eq!(raw.ext_field("seen"), Some("43"));
        let h: rmq_protocol::header::PullMessageResponseHeader = raw.decode_header().unwrap();
        assert_eq!(h.next_begin_offset, 43);
        client.shutdown().await;
    }

    #[tokio::test]
    async fn shutdown_cancels_handlers_and_leaves_no_task_alive() {
        struct SetOnDrop(Arc<AtomicBool>);
        impl Drop for SetOnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let client = RemotingClient::new(ClientOptions::default());
        let started = Arc::new(tokio::sync::Notify::new());
        let dropped = Arc::new(AtomicBool::new(false));
        let (s, d) = (Arc::clone(&started), Arc::clone(&dropped));
        client.register_handler(
            RequestCode::GET_CONSUMER_RUNNING_INFO,
            Arc::new(move |_: &str, _req: RemotingCommand| {
                let (s, guard) = (Arc::clone(&s), SetOnDrop(Arc::clone(&d)));
                async move {
                    let _guard = guard;
                    s.notify_one();
                    std::future::pending::<Option<RemotingCommand>>().await
                }
            }),
        );
        let (ours, theirs) = tokio::io::duplex(4096);
        client.attach(ADDR, ours);
        let mut peer = Framed::new(theirs, RemotingCodec::new());
        let req =
            RemotingCommand::new_request(RequestCode::GET_CONSUMER_RUNNING_INFO).with_opaque(3);
        peer.send(req).await.unwrap();
        started.notified().await;
        let pending = invoke(&client, 8);
        assert!(client.live_tasks() >= 2);

        tokio::time::timeout(Duration::from_secs(5), client.shutdown())
            .await
            .unwrap();
        assert_eq!(client.live_tasks(), 0);
        assert!(
            dropped.load(Ordering::SeqCst),
            "the handler future was not dropped"
        );
        assert!(matches!(pending.await.unwrap(), Err(Error::Shutdown)));
        // The peer sees the end of the stream (after the request frame).
        let mut rest = Vec::new();
        peer.into_inner().read_to_end(&mut rest).await.unwrap();
    }

    #[tokio::test]
    async fn handler_panic_is_answered_with_system_error() {
        let client = RemotingClient::new(ClientOptions::default());
        client.register_handler(
            RequestCode::GET_CONSUMER_RUNNING_INFO,
            Arc::new(|_: &str, _req: RemotingCommand| async { panic!("boom") }),
        );
        let (ours, theirs) = tokio::io::duplex(4096);
        client.attach(ADDR, ours);
        let mut peer = Framed::new(theirs, RemotingCodec::new());
        let req =
            RemotingCommand::new_request(RequestCode::GET_CONSUMER_RUNNING_INFO).with_opaque(42);
        peer.send(req).await.unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(5), peer.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(resp.opaque, 42);
        assert!(resp.is_response());
        assert_eq!(resp.response_code(), ResponseCode::SYSTEM_ERROR);
        assert!(resp.remark.unwrap_or_default().contains("boom"));
        client.shutdown().await;
    }
}
