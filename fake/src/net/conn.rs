//! One connection: the reader task (decode, count, attribute, apply faults,
//! hand to the service) and the writer task (drain the outgoing queue).
//!
//! A frame that does not decode closes the connection, as the real broker
//! does; nothing a client sends can make this panic.

use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use rmq_protocol::body::{HeartbeatData, LockBatchRequestBody};
use rmq_protocol::{RemotingCodec, RemotingCommand, RequestCode};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};
use tracing::{debug, warn};

use super::{ConnShared, Incoming, NetShared, Post, Responder, Service, response};
use crate::fault::Action;

pub(super) async fn run(
    conn: Arc<ConnShared>,
    stream: TcpStream,
    mut rx: mpsc::Receiver<RemotingCommand>,
    service: Arc<dyn Service>,
    net: Arc<NetShared>,
) {
    let (read, write) = stream.into_split();
    let mut reader = FramedRead::new(read, RemotingCodec::new());
    let mut writer = FramedWrite::new(write, RemotingCodec::new());

    let writer_conn = Arc::clone(&conn);
    let writer_task = async move {
        loop {
            tokio::select! {
                () = writer_conn.closed() => break,
                next = rx.recv() => match next {
                    Some(cmd) => {
                        if let Err(e) = writer.send(cmd).await {
                            debug!(conn = %writer_conn.id, error = %e, "fake: write failed");
                            break;
                        }
                    }
                    None => break,
                },
            }
        }
        writer_conn.close();
    };

    let reader_conn = Arc::clone(&conn);
    let reader_net = Arc::clone(&net);
    let reader_task = async move {
        loop {
            let frame = tokio::select! {
                () = reader_conn.closed() => break,
                frame = reader.next() => frame,
            };
            match frame {
                Some(Ok(cmd)) => {
                    if !on_frame(&reader_conn, cmd, &service, &reader_net).await {
                        break;
                    }
                }
                Some(Err(e)) => {
                    warn!(conn = %reader_conn.id, peer = %reader_conn.peer, error = %e,
                        "fake: bad frame, closing the connection");
                    break;
                }
                None => break,
            }
        }
        reader_conn.close();
        service.connection_closed(&reader_conn);
    };

    tokio::join!(writer_task, reader_task);
    net.unregister(conn.id);
    debug!(conn = %conn.id, "fake: connection closed");
}

/// Handles one decoded frame; `false` ends the connection.
async fn on_frame(
    conn: &Arc<ConnShared>,
    cmd: RemotingCommand,
    service: &Arc<dyn Service>,
    net: &Arc<NetShared>,
) -> bool {
    if cmd.is_response() {
        // Answers to the server's own requests: nothing waits for them.
        return true;
    }
    let code = cmd.request_code();
    attribute(conn, &cmd);
    net.counters.record(&conn.server, code);
    let action = net.faults.lookup(code, &conn.server, conn);
    let post = match action {
        None => Post::None,
        Some(Action::Drop) => return true,
        Some(Action::CloseConnection) => return false,
        Some(Action::Error { code: rc, remark }) => {
            Responder::new(Arc::clone(conn), &cmd, Post::None)
                .respond(response(rc, remark))
                .await;
            return true;
        }
        Some(Action::Delay(d)) => {
            let (conn2, service2) = (Arc::clone(conn), Arc::clone(service));
            conn.spawn(async move {
                tokio::time::sleep(d).await;
                handle(&conn2, cmd, &service2, Post::None).await;
            });
            return true;
        }
        Some(Action::DelayResponse(d)) => Post::Delay(d),
        Some(Action::DropResponse) => Post::Drop,
        Some(Action::RewriteCode(rc)) => Post::Rewrite(rc),
        Some(Action::Intercept(f)) => match f(&cmd) {
            Some(answer) => {
                Responder::new(Arc::clone(conn), &cmd, Post::None)
                    .respond(answer)
                    .await;
                return true;
            }
            None => Post::None,
        },
    };
    handle(conn, cmd, service, post).await;
    true
}

async fn handle(
    conn: &Arc<ConnShared>,
    cmd: RemotingCommand,
    service: &Arc<dyn Service>,
    post: Post,
) {
    let responder = Responder::new(Arc::clone(conn), &cmd, post);
    let incoming = Incoming {
        conn: Arc::clone(conn),
        cmd,
        responder,
    };
    if let Some(handled) = service.handle(incoming) {
        handled.responder.respond(handled.response).await;
    }
}

/// Attributes the connection to a client when the request names one.
fn attribute(conn: &ConnShared, cmd: &RemotingCommand) {
    let id = match cmd.request_code() {
        RequestCode::HEART_BEAT => HeartbeatData::decode(&cmd.body).ok().map(|h| h.client_id),
        RequestCode::UNREGISTER_CLIENT => cmd.ext_field("clientID").map(str::to_owned),
        RequestCode::LOCK_BATCH_MQ | RequestCode::UNLOCK_BATCH_MQ => {
            LockBatchRequestBody::decode(&cmd.body)
                .ok()
                .map(|b| b.client_id)
        }
        _ => None,
    };
    if let Some(id) = id.filter(|i| !i.is_empty()) {
        conn.set_client_id(&id);
    }
}
