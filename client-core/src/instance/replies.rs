//! Request-reply, requester side (Java `RequestFutureHolder` and
//! `ClientRemotingProcessor.receiveReplyMessage`): the requests waiting for
//! their reply, by correlation id, and the handler of the broker's
//! PUSH_REPLY_MESSAGE_TO_CLIENT.
//!
//! A waiter is registered before the request is sent
//! ([`ClientInstance::expect_reply`]) and removed when its
//! [`PendingReply`] is dropped, whether the reply came, the wait timed out
//! or the caller gave up: the table never holds a finished request. A reply
//! whose waiter is gone (it came late) is dropped with a debug log and
//! answered SUCCESS, as Java does. The table is bounded
//! ([`MAX_PENDING_REPLIES`]).

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use rmq_protocol::header::ReplyMessageRequestHeader;
use rmq_protocol::message::{CompressionType, DEFAULT_MAX_BODY_SIZE, property, sys_flag};
use rmq_protocol::{Message, MessageExt, Properties, RemotingCommand, RequestCode, ResponseCode};
use tokio::sync::oneshot;
use tracing::{debug, warn};

use super::ClientInstance;
use crate::clock::now_ms;
use crate::error::{Error, Result};

/// The most requests of one client instance that wait for a reply at once
/// (Java's table is unbounded; it drops expired requests every second).
pub const MAX_PENDING_REPLIES: usize = 65_536;

/// The requests waiting for a reply, by correlation id.
#[derive(Debug, Default)]
pub(crate) struct ReplyTable {
    waiters: Mutex<HashMap<String, oneshot::Sender<MessageExt>>>,
}

impl ReplyTable {
    fn waiters(&self) -> MutexGuard<'_, HashMap<String, oneshot::Sender<MessageExt>>> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `reply` to the waiter of its correlation id; `false` when
    /// there is none (it came late, or is for another client).
    fn complete(&self, reply: MessageExt) -> bool {
        let Some(id) = reply.property(property::CORRELATION_ID) else {
            return false;
        };
        let waiter = self.waiters().remove(id);
        match waiter {
            Some(tx) => tx.send(reply).is_ok(),
            None => false,
        }
    }
}

/// A request's wait for its reply ([`ClientInstance::expect_reply`]): a
/// future of the reply (`None` when the client instance shut down first).
/// Dropping it removes the request from the table, so a reply that comes
/// later is dropped.
#[derive(Debug)]
pub struct PendingReply {
    correlation_id: String,
    rx: oneshot::Receiver<MessageExt>,
    table: Arc<ReplyTable>,
}

impl PendingReply {
    /// The request's correlation id.
    pub fn correlation_id(&self) -> &str {
        &self.correlation_id
    }
}

impl Future for PendingReply {
    type Output = Option<MessageExt>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(Result::ok)
    }
}

impl Drop for PendingReply {
    fn drop(&mut self) {
        self.table.waiters().remove(&self.correlation_id);
    }
}

impl ClientInstance {
    /// Registers a request with `correlation_id` (its
    /// [`property::CORRELATION_ID`]) as waiting for its reply: the reply the
    /// broker pushes (PUSH_REPLY_MESSAGE_TO_CLIENT) completes the returned
    /// future. Call it before sending the request (the reply can come
    /// before the send's answer); its [`REPLY_TO_CLIENT`](property::REPLY_TO_CLIENT)
    /// must be this instance's [`client_id`](Self::client_id), and the
    /// brokers must know this client as a producer (registered and
    /// heartbeating).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when [`MAX_PENDING_REPLIES`] requests wait
    /// already, or a request with this correlation id waits;
    /// [`Error::Shutdown`] after shutdown.
    pub fn expect_reply(&self, correlation_id: &str) -> Result<PendingReply> {
        if self.inner.is_closing() {
            return Err(Error::Shutdown);
        }
        let table = Arc::clone(&self.inner.replies);
        let (tx, rx) = oneshot::channel();
        {
            let mut waiters = table.waiters();
            if waiters.len() >= MAX_PENDING_REPLIES {
                return Err(Error::Config(format!(
                    "{MAX_PENDING_REPLIES} requests of this client wait for a reply already; \
                     wait for some to finish"
                )));
            }
            if waiters.contains_key(correlation_id) {
                return Err(Error::Config(format!(
                    "a request with correlation id {correlation_id:?} waits for its reply already"
                )));
            }
            waiters.insert(correlation_id.to_owned(), tx);
        }
        Ok(PendingReply {
            correlation_id: correlation_id.to_owned(),
            rx,
            table,
        })
    }

    /// The number of requests of this instance waiting for a reply.
    pub fn pending_replies(&self) -> usize {
        self.inner.replies.waiters().len()
    }
}

/// Registers the PUSH_REPLY_MESSAGE_TO_CLIENT handler on the instance's
/// remoting client. It holds the reply table only (not the instance).
pub(super) fn register(instance: &ClientInstance) {
    let table = Arc::clone(&instance.inner.replies);
    instance.inner.remoting.register_handler(
        RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT,
        Arc::new(move |addr: &str, request: RemotingCommand| {
            let table = Arc::clone(&table);
            let addr = addr.to_owned();
            async move { Some(push_reply(&table, &addr, &request)) }
        }),
    );
}

/// PUSH_REPLY_MESSAGE_TO_CLIENT: decode the reply and hand it to its
/// waiter; SUCCESS unless it does not decode.
fn push_reply(table: &ReplyTable, addr: &str, request: &RemotingCommand) -> RemotingCommand {
    match reply_message(request, now_ms()) {
        Ok(reply) => {
            let id = reply
                .property(property::CORRELATION_ID)
                .unwrap_or_default()
                .to_owned();
            if table.complete(reply) {
                debug!(addr, correlation_id = %id, "reply received");
            } else {
                debug!(addr, correlation_id = %id,
                    "reply for no waiting request (it timed out or was given up): dropped");
            }
            RemotingCommand::response_to(request, ResponseCode::SUCCESS, None)
        }
        Err(e) => {
            warn!(addr, error = %rmq_protocol::ErrorChain(&e), "cannot decode a pushed reply");
            RemotingCommand::response_to(
                request,
                ResponseCode::SYSTEM_ERROR,
                Some("process reply message fail".to_owned()),
            )
        }
    }
}

/// The reply a PUSH_REPLY_MESSAGE_TO_CLIENT carries, as Java builds it:
/// the header's topic, queue, times, hosts, flag and properties, the body
/// (decompressed when its sysFlag says so), and `ARRIVE_TIME` = `now`.
fn reply_message(request: &RemotingCommand, now: i64) -> rmq_protocol::Result<MessageExt> {
    let h: ReplyMessageRequestHeader = request.decode_header()?;
    let mut sys = h.sys_flag;
    let body = if sys & sys_flag::COMPRESSED != 0 {
        sys &= !sys_flag::COMPRESSED;
        CompressionType::from_sys_flag(h.sys_flag)?
            .decompress(&request.body, DEFAULT_MAX_BODY_SIZE)?
    } else {
        request.body.clone()
    };
    let mut properties = match &h.properties {
        Some(p) => Properties::from(rmq_protocol::message::decode_properties(p.as_bytes())?),
        None => Properties::new(),
    };
    properties.insert(property::REPLY_MESSAGE_ARRIVE_TIME, now.to_string());
    let host = |h: &Option<String>| {
        h.as_deref()
            .and_then(|a| a.parse::<SocketAddr>().ok())
            .unwrap_or_else(|| MessageExt::default().born_host)
    };
    let message = Message {
        topic: h.topic.clone(),
        flag: h.flag,
        properties,
        body,
    };
    Ok(MessageExt {
        msg_id: message.unique_key().unwrap_or_default().to_owned(),
        message,
        queue_id: h.queue_id,
        sys_flag: sys,
        born_timestamp: h.born_timestamp,
        born_host: host(&h.born_host),
        store_timestamp: h.store_timestamp.unwrap_or_default(),
        store_host: host(&h.store_host),
        reconsume_times: h.reconsume_times.unwrap_or_default(),
        ..MessageExt::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::header::CommandHeader;

    fn push(correlation_id: &str, body: bytes::Bytes, sys_flag: i32) -> RemotingCommand {
        let header = ReplyMessageRequestHeader {
            topic: "C_REPLY_TOPIC".into(),
            queue_id: 2,
            sys_flag,
            born_timestamp: 10,
            flag: 3,
            properties: Some(format!(
                "CORRELATION_ID\u{1}{correlation_id}\u{2}UNIQ_KEY\u{1}U1\u{2}MSG_TYPE\u{1}reply\u{2}"
            )),
            born_host: Some("127.0.0.1:5000".into()),
            store_host: Some("127.0.0.1:10911".into()),
            store_timestamp: Some(20),
            ..Default::default()
        };
        let mut cmd =
            RemotingCommand::new_request(RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT).with_body(body);
        cmd.ext_fields = header.to_ext_fields();
        cmd
    }

    #[test]
    fn a_push_becomes_the_reply_java_builds() {
        let m = reply_message(&push("c1", "pong".into(), 0), 99).unwrap();
        assert_eq!(m.message.topic, "C_REPLY_TOPIC");
        assert_eq!(&m.message.body[..], b"pong");
        assert_eq!(m.queue_id, 2);
        assert_eq!(m.message.flag, 3);
        assert_eq!(m.born_timestamp, 10);
        assert_eq!(m.store_timestamp, 20);
        assert_eq!(m.born_host, "127.0.0.1:5000".parse().unwrap());
        assert_eq!(m.msg_id, "U1");
        assert_eq!(m.property(property::REPLY_MESSAGE_ARRIVE_TIME), Some("99"));
        let zipped = CompressionType::Zlib.compress(b"pong", 5).unwrap();
        let m = reply_message(&push("c1", zipped, 0x301), 99).unwrap();
        assert_eq!(&m.message.body[..], b"pong");
        assert_eq!(m.sys_flag & sys_flag::COMPRESSED, 0);
        let bad = RemotingCommand::new_request(RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT);
        assert!(reply_message(&bad, 0).is_err());
    }

    #[tokio::test]
    async fn replies_reach_their_waiter_once_and_late_ones_are_dropped() {
        let table = Arc::new(ReplyTable::default());
        let (tx, rx) = oneshot::channel();
        table.waiters().insert("c1".into(), tx);
        let pending = PendingReply {
            correlation_id: "c1".into(),
            rx,
            table: Arc::clone(&table),
        };
        let ok = push_reply(&table, "b", &push("c1", "pong".into(), 0));
        assert_eq!(ok.response_code(), ResponseCode::SUCCESS);
        let reply = pending.await.expect("the reply");
        assert_eq!(&reply.message.body[..], b"pong");
        assert!(table.waiters().is_empty());
        // A second (late) reply finds no waiter: dropped, still SUCCESS.
        let late = push_reply(&table, "b", &push("c1", "late".into(), 0));
        assert_eq!(late.response_code(), ResponseCode::SUCCESS);
        let bad = push_reply(
            &table,
            "b",
            &RemotingCommand::new_request(RequestCode::PUSH_REPLY_MESSAGE_TO_CLIENT),
        );
        assert_eq!(bad.response_code(), ResponseCode::SYSTEM_ERROR);
        // A waiter given up (dropped) leaves the table.
        let (tx, rx) = oneshot::channel();
        table.waiters().insert("c2".into(), tx);
        drop(PendingReply {
            correlation_id: "c2".into(),
            rx,
            table: Arc::clone(&table),
        });
        assert!(table.waiters().is_empty());
    }
}
