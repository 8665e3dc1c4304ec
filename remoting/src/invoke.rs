//! The request calls of [`RemotingClient`]: `invoke` and its typed-header,
//! raw, checked and oneway forms.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_protocol::header::CommandHeader;
use rmq_protocol::{
    FLAG_RESPONSE, RawCommand, RemotingCommand, RequestCode, ResponseCode, SerializeType,
};
use tokio::sync::oneshot;
use tracing::{Instrument, Span, debug, debug_span, field};

use crate::client::RemotingClient;
use crate::connection::{Outbound, OutboundKind};
use crate::error::{Error, Result};

impl RemotingClient {
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
}
