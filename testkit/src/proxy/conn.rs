//! One proxied connection: a client socket, its own upstream socket, and the
//! frames between them decoded with [`RemotingCodec`] so rules can act on
//! each request.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use rmq_protocol::{
    DEFAULT_MAX_FRAME_LEN, RemotingCodec, RemotingCommand, RequestCode, ResponseCode,
};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::task::JoinSet;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::Shared;
use super::rules::{Rule, Target};

/// Connecting to the upstream.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The proxy accepts larger frames than a client would, so that it never is
/// the one refusing a frame.
fn codec() -> RemotingCodec {
    RemotingCodec::new().with_max_frame_len(DEFAULT_MAX_FRAME_LEN.saturating_mul(4))
}

type Reader = FramedRead<OwnedReadHalf, RemotingCodec>;
type Writer = FramedWrite<OwnedWriteHalf, RemotingCodec>;

/// What to do with the response of a forwarded request.
#[derive(Debug, Clone, Copy)]
enum OnResponse {
    Forward,
    Delay(Duration),
    Drop,
}

/// A request forwarded upstream, waiting for its response.
#[derive(Debug)]
struct Pending {
    code: RequestCode,
    on_response: OnResponse,
}

/// A frame whose delay elapsed.
#[derive(Debug)]
enum Delayed {
    /// To the upstream.
    Request(RemotingCommand),
    /// To the client.
    Response(RemotingCommand),
}

/// Whether the connection goes on.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Close,
}

/// Keeps [`Shared::active`] right however the connection ends.
struct ActiveGuard<'a>(&'a Shared);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves one accepted client connection until either side closes, a rule
/// closes it, or `token` is cancelled. Both sockets are closed on return.
pub(super) async fn run(
    shared: Arc<Shared>,
    target: Target,
    client: TcpStream,
    token: CancellationToken,
) {
    shared.active.fetch_add(1, Ordering::SeqCst);
    let _guard = ActiveGuard(&shared);
    let upstream_addr = target.upstream().to_owned();
    let upstream = tokio::select! {
        () = token.cancelled() => return,
        res = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&upstream_addr)) => match res {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                warn!(upstream = %upstream_addr, error = %e, "fault proxy: cannot connect upstream; closing the client connection");
                return;
            }
            Err(_) => {
                warn!(upstream = %upstream_addr, "fault proxy: upstream connect timed out; closing the client connection");
                return;
            }
        },
    };
    // Nagle off on both sides: small request/response frames, latency matters.
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (ur, uw) = upstream.into_split();
    let mut conn = Conn {
        shared: &shared,
        target,
        client_out: FramedWrite::new(cw, codec()),
        upstream_out: FramedWrite::new(uw, codec()),
        pending: HashMap::new(),
        timers: JoinSet::new(),
    };
    let mut client_in: Reader = FramedRead::new(cr, codec());
    let mut upstream_in: Reader = FramedRead::new(ur, codec());
    loop {
        let flow = tokio::select! {
            () = token.cancelled() => Flow::Close,
            frame = client_in.next() => match frame {
                Some(Ok(cmd)) => conn.on_client_frame(cmd).await,
                Some(Err(e)) => {
                    debug!(upstream = %upstream_addr, error = %e, "fault proxy: bad frame from the client");
                    Flow::Close
                }
                None => Flow::Close,
            },
            frame = upstream_in.next() => match frame {
                Some(Ok(cmd)) => conn.on_upstream_frame(cmd).await,
                Some(Err(e)) => {
                    debug!(upstream = %upstream_addr, error = %e, "fault proxy: bad frame from the upstream");
                    Flow::Close
                }
                None => Flow::Close,
            },
            Some(done) = conn.timers.join_next(), if !conn.timers.is_empty() => match done {
                Ok(Delayed::Request(cmd)) => conn.send_upstream(cmd).await,
                Ok(Delayed::Response(cmd)) => conn.send_client(cmd).await,
                Err(_) => Flow::Continue,
            },
        };
        if flow == Flow::Close {
            break;
        }
    }
    debug!(upstream = %upstream_addr, "fault proxy: connection closed");
    // Abort the delay timers and wait for them, so no task outlives the
    // connection; dropping the halves then closes both sockets.
    conn.timers.shutdown().await;
}

struct Conn<'a> {
    shared: &'a Arc<Shared>,
    target: Target,
    client_out: Writer,
    upstream_out: Writer,
    pending: HashMap<i32, Pending>,
    timers: JoinSet<Delayed>,
}

impl Conn<'_> {
    async fn send_upstream(&mut self, cmd: RemotingCommand) -> Flow {
        match self.upstream_out.send(cmd).await {
            Ok(()) => Flow::Continue,
            Err(e) => {
                debug!(upstream = %self.target.upstream(), error = %e, "fault proxy: write upstream failed");
                Flow::Close
            }
        }
    }

    async fn send_client(&mut self, cmd: RemotingCommand) -> Flow {
        match self.client_out.send(cmd).await {
            Ok(()) => Flow::Continue,
            Err(e) => {
                debug!(upstream = %self.target.upstream(), error = %e, "fault proxy: write to the client failed");
                Flow::Close
            }
        }
    }

    /// Remembers a request that expects a response.
    fn expect_response(&mut self, cmd: &RemotingCommand, on_response: OnResponse) {
        if !cmd.is_oneway() {
            self.pending.insert(
                cmd.opaque,
                Pending {
                    code: cmd.request_code(),
                    on_response,
                },
            );
        }
    }

    async fn on_client_frame(&mut self, cmd: RemotingCommand) -> Flow {
        if cmd.is_response() {
            // The client's answer to a broker → client request.
            return self.send_upstream(cmd).await;
        }
        let code = cmd.request_code();
        self.shared.counters.record(self.target.upstream(), code);
        let rule = self.shared.rules.lookup(code, &self.target);
        if rule != Rule::Pass {
            debug!(upstream = %self.target.upstream(), ?code, opaque = cmd.opaque, ?rule, "fault proxy: applying rule");
        }
        match rule {
            Rule::Pass => {
                self.expect_response(&cmd, OnResponse::Forward);
                self.send_upstream(cmd).await
            }
            Rule::Delay(delay) => {
                self.expect_response(&cmd, OnResponse::Forward);
                self.timers.spawn(async move {
                    tokio::time::sleep(delay).await;
                    Delayed::Request(cmd)
                });
                Flow::Continue
            }
            Rule::Error { code, remark } => {
                if cmd.is_oneway() {
                    return Flow::Continue;
                }
                let response = RemotingCommand::response_to(&cmd, code, remark)
                    .with_serialize_type(cmd.serialize_type);
                self.send_client(response).await
            }
            Rule::Drop => Flow::Continue,
            Rule::CloseConnection => Flow::Close,
            Rule::DelayResponse(delay) => {
                self.expect_response(&cmd, OnResponse::Delay(delay));
                self.send_upstream(cmd).await
            }
            Rule::DropResponse => {
                self.expect_response(&cmd, OnResponse::Drop);
                self.send_upstream(cmd).await
            }
        }
    }

    async fn on_upstream_frame(&mut self, mut cmd: RemotingCommand) -> Flow {
        if !cmd.is_response() {
            // A broker → client request (e.g. NOTIFY_CONSUMER_IDS_CHANGED).
            return self.send_client(cmd).await;
        }
        let Some(pending) = self.pending.remove(&cmd.opaque) else {
            // Not a request we saw (or a late answer): pass it on.
            return self.send_client(cmd).await;
        };
        if matches!(self.target, Target::NameServer(_))
            && pending.code == RequestCode::GET_ROUTEINFO_BY_TOPIC
            && cmd.response_code() == ResponseCode::SUCCESS
            && !cmd.body.is_empty()
        {
            match self.shared.rewrite_route(&cmd.body) {
                Ok(body) => cmd.body = body.into(),
                Err(e) => {
                    // Never hand the client a real broker address: it would
                    // bypass the proxy (e.g. a route refresh answered while
                    // the proxy shuts down).
                    warn!(error = %e, "fault proxy: route not rewritten; closing the client connection");
                    return Flow::Close;
                }
            }
        }
        match pending.on_response {
            OnResponse::Forward => self.send_client(cmd).await,
            OnResponse::Delay(delay) => {
                self.timers.spawn(async move {
                    tokio::time::sleep(delay).await;
                    Delayed::Response(cmd)
                });
                Flow::Continue
            }
            OnResponse::Drop => Flow::Continue,
        }
    }
}
