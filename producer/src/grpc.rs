//! The producer over the RocketMQ 5.x proxy (gRPC, [`rmq_grpc::Session`]):
//! chosen by [`ProducerBuilder::endpoint`](crate::ProducerBuilder::endpoint).
//!
//! Messages map to `apache.rocketmq.v2.Message` as the Java gRPC client
//! builds them, and arrive at remoting consumers of the same broker as the
//! properties they came from: `TAGS` ↔ `tag`, `KEYS` ↔ `keys`, `UNIQ_KEY` ↔
//! `message_id`, `__SHARDINGKEY` ↔ `message_group` (a FIFO message),
//! `TIMER_DELIVER_MS` (or `TIMER_DELAY_MS` / `TIMER_DELAY_SEC` from now) ↔
//! `delivery_timestamp` (a delayed message), `TRAN_MSG` ↔ the `TRANSACTION`
//! message type (a half message, ended with `EndTransaction`),
//! `_SYS_MSG_PRIORITY_` ↔ `priority` (a `PRIORITY` message), `__LITE_TOPIC`
//! ↔ `lite_topic` (a `LITE` message); every other property is a user
//! property. As the Java gRPC client does, a message gets a version-1 id
//! (`01…`, Java `MessageIdCodec`) unless it has a `UNIQ_KEY`, its born host
//! is this host's name, and a message whose type the topic does not take
//! (the route's `accept_message_types`, when the proxy's settings say to
//! validate) is refused before sending ([`InvalidMessage::TopicType`]). Not carried: `DELAY` levels (a typed error:
//! use a delivery time), the Java `flag`, the producer group (the proxy uses
//! the topic as the group of a half message).
//!
//! The proxy picks the queue itself (by a consistent hash of the message
//! group for FIFO messages, round robin otherwise) and answers only the
//! offset, so a send cannot be aimed at a queue (`send_to_queue` and
//! `send_with_selector` are [`Error::TransportUnsupported`]) and the
//! [`SendResult::message_queue`] of a gRPC send has the topic only (no
//! broker name, queue id −1).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmq_client_core::ClientConfig;
use rmq_client_core::{SendResult, SendStatus, now_ms};
use rmq_grpc::{
    ClientSettings, GrpcConfig, GrpcCredentials, ServerCommand, Session, proto, resource,
    timestamp_ms,
};
use rmq_protocol::message::{MessageType, is_reply, property};
use rmq_protocol::{Message, MessageQueue};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::ProducerConfig;
use crate::error::{Error, InvalidMessage, Result};
use crate::msg_id::next_message_id_v1;
use crate::send::Outcome;
use crate::validate::check_message;

/// How long a topic's queues from `QueryRoute` are used before asking again.
const ROUTE_TTL: Duration = Duration::from_secs(30);

/// A topic's writable queues and when they were fetched.
type CachedRoute = (Instant, Arc<Vec<proto::MessageQueue>>);

/// Everything a gRPC send needs; shared by all handles of one producer.
#[derive(Debug)]
pub(crate) struct GrpcSender {
    pub(crate) config: ProducerConfig,
    pub(crate) session: Session,
    routes: RwLock<HashMap<String, CachedRoute>>,
    born_host: String,
}

/// A [`GrpcConfig`] for the proxy at `endpoint` with the client
/// configuration's namespace (sent as the resource namespace, as the Java
/// gRPC client does), that signs with its credentials and speaks TLS when
/// it does (the consumers' twin is `rmq_consumer_base::grpc_config`).
fn grpc_config(endpoint: &str, client: &ClientConfig) -> rmq_grpc::Result<GrpcConfig> {
    let mut grpc = GrpcConfig::new(endpoint)?.with_namespace(client.namespace().as_str());
    if let Some(c) = client.credentials() {
        let mut creds = GrpcCredentials::new(c.access_key(), c.secret_key())?;
        if let Some(token) = c.security_token() {
            creds = creds.with_security_token(token)?;
        }
        grpc = grpc.with_credentials(creds);
    }
    #[cfg(feature = "tls")]
    if let Some(tls) = client.tls() {
        grpc = grpc.with_tls(tls.clone());
    }
    #[cfg(not(feature = "tls"))]
    if client.has_tls() {
        return Err(rmq_grpc::Error::InvalidCredentials(
            "the client configuration asks for TLS, but this build has no TLS towards the proxy: \
             enable the `tls` feature"
                .into(),
        ));
    }
    Ok(grpc)
}

impl GrpcSender {
    /// Starts the session with the proxy at `endpoint`.
    pub(crate) async fn start(
        config: ProducerConfig,
        endpoint: &str,
        client: &ClientConfig,
    ) -> Result<GrpcSender> {
        Self::start_with(config, endpoint, client, &[], None).await
    }

    /// Starts the session with the proxy at `endpoint`, declaring `topics` (the proxy sends the
    /// orphaned transactions of those topics to `commands`).
    pub(crate) async fn start_with(
        config: ProducerConfig,
        endpoint: &str,
        client: &ClientConfig,
        topics: &[String],
        commands: Option<mpsc::Sender<ServerCommand>>,
    ) -> Result<GrpcSender> {
        let grpc = grpc_config(endpoint, client)?.with_request_timeout(config.send_timeout);
        let max_body = i32::try_from(config.max_message_size).unwrap_or(i32::MAX);
        let settings = ClientSettings::producer(topics, max_body);
        let session = Session::start(grpc, settings, commands).await?;
        // The host name, as the Java gRPC client's `Utilities.hostName()`.
        let born_host = rmq_grpc::hostname();
        tracing::info!(group = %config.group, endpoint, client_id = session.client_id(), "producer started (gRPC)");
        Ok(GrpcSender {
            config,
            session,
            routes: RwLock::new(HashMap::new()),
            born_host,
        })
    }

    /// The writable queues of `topic` (cached for [`ROUTE_TTL`]).
    async fn queues(&self, topic: &str) -> Result<Arc<Vec<proto::MessageQueue>>> {
        if let Ok(routes) = self.routes.read() {
            if let Some((at, queues)) = routes.get(topic) {
                if at.elapsed() < ROUTE_TTL {
                    return Ok(queues.clone());
                }
            }
        }
        let all = self.session.query_route(topic).await?;
        let writable: Vec<_> = all
            .into_iter()
            .filter(|q| {
                let p =
                    proto::Permission::try_from(q.permission).unwrap_or(proto::Permission::None);
                matches!(p, proto::Permission::Write | proto::Permission::ReadWrite)
            })
            .collect();
        if writable.is_empty() {
            return Err(Error::NoWritableQueue {
                topic: topic.to_owned(),
            });
        }
        let queues = Arc::new(writable);
        if let Ok(mut routes) = self.routes.write() {
            routes.insert(topic.to_owned(), (Instant::now(), queues.clone()));
        }
        Ok(queues)
    }

    /// Refuses a message of `message_type` for `topic` when the topic's
    /// route says it takes other types and the proxy's settings ask clients
    /// to check (`validate_message_type`, default on; Java
    /// `ProducerImpl.send0`).
    async fn check_topic_type(&self, topic: &str, message_type: MessageType) -> Result<()> {
        let validate = self.session.server_settings().is_none_or(|s| {
            !matches!(&s.pub_sub, Some(proto::settings::PubSub::Publishing(p)) if !p.validate_message_type)
        });
        if !validate {
            return Ok(());
        }
        let queues = self.queues(topic).await?;
        let Some(first) = queues.first() else {
            return Ok(());
        };
        let wanted = proto_type(message_type) as i32;
        if first.accept_message_types.contains(&wanted) {
            return Ok(());
        }
        let accepted = first
            .accept_message_types
            .iter()
            .map(|t| {
                proto::MessageType::try_from(*t).map_or("UNKNOWN", |t| match t {
                    proto::MessageType::Unspecified => "UNSPECIFIED",
                    other => other.as_str_name(),
                })
            })
            .collect::<Vec<_>>()
            .join(" or ");
        Err(InvalidMessage::TopicType {
            topic: topic.to_owned(),
            message_type,
            accepted: if accepted.is_empty() {
                "no".to_owned()
            } else {
                accepted
            },
        }
        .into())
    }

    /// The publish queues of `topic` as [`MessageQueue`]s.
    pub(crate) async fn publish_queues(&self, topic: &str) -> Result<Vec<MessageQueue>> {
        let queues = self.queues(topic).await?;
        Ok(queues.iter().map(|q| message_queue(topic, q)).collect())
    }

    /// Sends `msgs` (one request; the proxy picks the queue). Stamps a
    /// `UNIQ_KEY` on messages that have none (kept on failure, so a resend
    /// keeps its id).
    pub(crate) async fn send(&self, msgs: &mut [Message]) -> Outcome<SendResult> {
        let timeout = self.config.send_timeout;
        match tokio::time::timeout(timeout, self.send_inner(msgs)).await {
            // Refused before any SendMessage.
            Ok(Err(e @ (Error::InvalidMessage(_) | Error::TransportUnsupported(_)))) => {
                Outcome::failed(e)
            }
            Ok(result) => Outcome::once(result),
            Err(_) => Outcome::once(Err(Error::Timeout {
                timeout,
                last: None,
            })),
        }
    }

    async fn send_inner(&self, msgs: &mut [Message]) -> Result<SendResult> {
        let Some(first) = msgs.first() else {
            return Err(InvalidMessage::EmptyBatch.into());
        };
        let topic = first.topic.clone();
        let message_type = MessageType::of(first);
        for m in msgs.iter_mut() {
            check_message(m, self.config.max_message_size)?;
            if is_reply(m) {
                return Err(Error::TransportUnsupported(
                    "request-reply needs the remoting transport (name servers): the proxy's \
                     protocol has no reply push"
                        .into(),
                ));
            }
            if m.topic != topic {
                return Err(InvalidMessage::Batch(
                    "every message of a batch must have the same topic".into(),
                )
                .into());
            }
            if MessageType::of(m) != message_type {
                return Err(InvalidMessage::Batch(
                    "every message of a batch must be of the same type".into(),
                )
                .into());
            }
            if m.unique_key().is_none() {
                m.set_property(property::UNIQ_KEY, next_message_id_v1());
            }
        }
        if msgs.len() > 1 {
            if let Some(what) = msgs.iter().find_map(crate::validate::sent_alone) {
                return Err(InvalidMessage::Batch(format!(
                    "a message of the batch has {what}, which the broker applies to single \
                     messages only; send it on its own"
                ))
                .into());
            }
        }
        let now = now_ms();
        let wire = msgs
            .iter()
            .map(|m| to_proto(m, now, &self.born_host))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        self.check_topic_type(&topic, message_type).await?;
        let entries = self.session.send_message(wire).await?;
        let mut ids = Vec::with_capacity(entries.len());
        let mut offset = None;
        let mut transaction_id = None;
        let mut recall_handle = None;
        for e in &entries {
            if let Some(s) = &e.status {
                if s.code != proto::Code::Ok as i32 {
                    return Err(Error::Grpc(rmq_grpc::Error::Proxy {
                        rpc: "SendMessage",
                        code: s.code,
                        message: s.message.clone(),
                    }));
                }
            }
            ids.push(e.message_id.as_str());
            offset.get_or_insert(e.offset);
            if !e.transaction_id.is_empty() {
                transaction_id.get_or_insert_with(|| e.transaction_id.clone());
            }
            if !e.recall_handle.is_empty() {
                recall_handle.get_or_insert_with(|| e.recall_handle.clone());
            }
        }
        Ok(SendResult {
            status: SendStatus::SendOk,
            msg_id: ids.join(","),
            offset_msg_id: String::new(),
            message_queue: MessageQueue::new(topic, "", -1),
            queue_offset: offset.unwrap_or(-1),
            transaction_id,
            region_id: "DefaultRegion".to_owned(),
            trace_on: false,
            recall_handle,
        })
    }
}

/// `EndTransaction` of the half message `message_id` of `topic` through `session`: `commit` or
/// roll back; `from_check` when it answers the proxy's orphaned-transaction command.
pub(crate) async fn end_transaction(
    session: &Session,
    topic: &str,
    message_id: &str,
    transaction_id: &str,
    commit: bool,
    from_check: bool,
) -> Result<()> {
    let resolution = if commit {
        proto::TransactionResolution::Commit
    } else {
        proto::TransactionResolution::Rollback
    };
    let source = if from_check {
        proto::TransactionSource::SourceServerCheck
    } else {
        proto::TransactionSource::SourceClient
    };
    let request = proto::EndTransactionRequest {
        topic: Some(resource("", topic)),
        message_id: message_id.to_owned(),
        transaction_id: transaction_id.to_owned(),
        resolution: resolution as i32,
        source: source as i32,
        trace_context: String::new(),
    };
    Ok(session.end_transaction(request).await?)
}

/// The proxy's name of a message type.
fn proto_type(t: MessageType) -> proto::MessageType {
    match t {
        MessageType::Fifo => proto::MessageType::Fifo,
        MessageType::Delay => proto::MessageType::Delay,
        MessageType::Transaction => proto::MessageType::Transaction,
        MessageType::Priority => proto::MessageType::Priority,
        MessageType::Lite => proto::MessageType::Lite,
        _ => proto::MessageType::Normal,
    }
}

fn message_queue(topic: &str, q: &proto::MessageQueue) -> MessageQueue {
    let broker = q.broker.as_ref().map_or("", |b| b.name.as_str());
    MessageQueue::new(topic, broker, q.id)
}

/// Maps a message to its gRPC form (see the module docs).
pub(crate) fn to_proto(
    msg: &Message,
    now: i64,
    born_host: &str,
) -> std::result::Result<proto::Message, InvalidMessage> {
    let not_over_grpc = |what: &str| InvalidMessage::NotOverGrpc(what.to_owned());
    let mut props = msg.properties.clone();
    if props.remove(property::DELAY).is_some() {
        return Err(not_over_grpc(
            "a delay level (DELAY): the proxy takes a delivery time (TIMER_DELIVER_MS) instead",
        ));
    }
    let transactional = crate::validate::is_transactional(msg);
    if transactional {
        props.remove(property::TRAN_MSG);
        props.remove(property::PGROUP);
    }
    let tag = props.remove(property::TAGS).filter(|t| !t.is_empty());
    let keys = props
        .remove(property::KEYS)
        .map(|k| {
            k.split(property::KEY_SEPARATOR)
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let message_id = props.remove(property::UNIQ_KEY).unwrap_or_default();
    props.remove(property::WAIT);
    let group = props
        .remove(property::SHARDING_KEY)
        .filter(|g| !g.is_empty());
    // Checked before (`check_types`): a valid priority or lite topic, and
    // not together with a group, a delivery time or a transaction.
    let priority = match props.remove(property::PRIORITY) {
        Some(raw) => Some(raw.parse::<i32>().map_err(|_| {
            InvalidMessage::NotOverGrpc(format!("{}={raw:?} is not a number", property::PRIORITY))
        })?),
        None => None,
    };
    let lite_topic = props.remove(property::LITE_TOPIC);
    let ms = |name: &str, raw: String| {
        raw.trim()
            .parse::<i64>()
            .map_err(|_| InvalidMessage::NotOverGrpc(format!("{name}={raw:?} is not a number")))
    };
    let mut deliver = None;
    if let Some(raw) = props.remove(property::TIMER_DELIVER_MS) {
        deliver = Some(ms(property::TIMER_DELIVER_MS, raw)?);
    }
    if let Some(raw) = props.remove(property::TIMER_DELAY_MS) {
        deliver = Some(now.saturating_add(ms(property::TIMER_DELAY_MS, raw)?));
    }
    if let Some(raw) = props.remove(property::TIMER_DELAY_SEC) {
        deliver =
            Some(now.saturating_add(ms(property::TIMER_DELAY_SEC, raw)?.saturating_mul(1000)));
    }
    let message_type = match (&group, deliver) {
        _ if transactional => {
            if group.is_some() || deliver.is_some() {
                return Err(not_over_grpc(
                    "a transactional message with a message group or a delivery time",
                ));
            }
            proto::MessageType::Transaction
        }
        (Some(_), Some(_)) => {
            return Err(not_over_grpc(
                "a message group together with a delivery time",
            ));
        }
        (Some(_), None) => proto::MessageType::Fifo,
        (None, Some(_)) => proto::MessageType::Delay,
        (None, None) if priority.is_some() => proto::MessageType::Priority,
        (None, None) if lite_topic.is_some() => proto::MessageType::Lite,
        (None, None) => proto::MessageType::Normal,
    };
    let checksum = md5_hex(&msg.body);
    Ok(proto::Message {
        topic: Some(resource("", &msg.topic)),
        user_properties: props.to_map(),
        system_properties: Some(proto::SystemProperties {
            tag,
            keys,
            message_id,
            body_digest: Some(proto::Digest {
                r#type: proto::DigestType::Md5 as i32,
                checksum,
            }),
            body_encoding: proto::Encoding::Identity as i32,
            message_type: message_type as i32,
            born_timestamp: Some(timestamp_ms(now)),
            born_host: born_host.to_owned(),
            delivery_timestamp: deliver.map(timestamp_ms),
            message_group: group,
            lite_topic,
            priority,
            ..Default::default()
        }),
        body: msg.body.clone(),
    })
}

fn md5_hex(body: &[u8]) -> String {
    use md5::Digest as _;
    let digest = md5::Md5::digest(body);
    let mut s = String::with_capacity(32);
    for b in digest {
        s.push_str(&format!("{b:02X}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_map_to_the_proxy_message() {
        let msg = Message::new("T", "body")
            .with_tags("tg")
            .with_keys(["k1", "k2"])
            .with_property(property::UNIQ_KEY, "ID1")
            .with_property(property::WAIT, "true")
            .with_property(property::SHARDING_KEY, "g1")
            .with_property("user", "v");
        let p = to_proto(&msg, 1_000, "10.0.0.1").unwrap();
        let s = p.system_properties.unwrap();
        assert_eq!(s.tag.as_deref(), Some("tg"));
        assert_eq!(s.keys, ["k1", "k2"]);
        assert_eq!(s.message_id, "ID1");
        assert_eq!(s.message_group.as_deref(), Some("g1"));
        assert_eq!(s.message_type, proto::MessageType::Fifo as i32);
        assert_eq!(s.born_host, "10.0.0.1");
        assert_eq!(
            s.body_digest.unwrap().checksum,
            "841A2D689AD86BD1611447453C22C6FC"
        );
        assert_eq!(
            p.user_properties,
            HashMap::from([("user".to_owned(), "v".to_owned())])
        );
        assert_eq!(p.body.as_ref(), b"body");
    }

    #[test]
    fn delivery_times() {
        let at = Message::new("T", "b").with_property(property::TIMER_DELIVER_MS, "5000");
        let s = to_proto(&at, 1_000, "h")
            .unwrap()
            .system_properties
            .unwrap();
        assert_eq!(s.message_type, proto::MessageType::Delay as i32);
        assert_eq!(
            s.delivery_timestamp.map(|t| rmq_grpc::timestamp_to_ms(&t)),
            Some(5000)
        );
        let after = Message::new("T", "b").with_property(property::TIMER_DELAY_SEC, "2");
        let s = to_proto(&after, 1_000, "h")
            .unwrap()
            .system_properties
            .unwrap();
        assert_eq!(
            s.delivery_timestamp.map(|t| rmq_grpc::timestamp_to_ms(&t)),
            Some(3000)
        );
    }

    #[test]
    fn a_half_message_is_a_transaction_message_without_the_remoting_marks() {
        let half = Message::new("T", "b")
            .with_property(property::TRAN_MSG, "true")
            .with_property(property::PGROUP, "pg")
            .with_property("user", "v");
        let p = to_proto(&half, 0, "h").unwrap();
        let s = p.system_properties.unwrap();
        assert_eq!(s.message_type, proto::MessageType::Transaction as i32);
        assert_eq!(
            p.user_properties,
            HashMap::from([("user".to_owned(), "v".to_owned())])
        );
        let grouped = half.clone().with_property(property::SHARDING_KEY, "g");
        assert!(matches!(
            to_proto(&grouped, 0, "h"),
            Err(InvalidMessage::NotOverGrpc(_))
        ));
    }

    #[test]
    fn priority_and_lite_topic_are_system_properties() {
        let prio = Message::new("T", "b")
            .with_priority(4)
            .with_property("u", "v");
        let p = to_proto(&prio, 0, "host-1").unwrap();
        let s = p.system_properties.unwrap();
        assert_eq!(s.priority, Some(4));
        assert_eq!(s.message_type, proto::MessageType::Priority as i32);
        assert_eq!(s.born_host, "host-1");
        assert_eq!(
            p.user_properties,
            HashMap::from([("u".to_owned(), "v".to_owned())])
        );
        let lite = Message::new("T", "b").with_lite_topic("order-1");
        let s = to_proto(&lite, 0, "h").unwrap().system_properties.unwrap();
        assert_eq!(s.lite_topic.as_deref(), Some("order-1"));
        assert_eq!(s.message_type, proto::MessageType::Lite as i32);
        assert_eq!(s.priority, None);
        assert_eq!(proto_type(MessageType::Lite), proto::MessageType::Lite);
        assert_eq!(proto_type(MessageType::Normal), proto::MessageType::Normal);
    }

    #[test]
    fn what_the_proxy_cannot_carry_is_a_typed_error() {
        let level = Message::new("T", "b").with_delay_level(3);
        assert!(matches!(
            to_proto(&level, 0, "h"),
            Err(InvalidMessage::NotOverGrpc(_))
        ));
        let bad = Message::new("T", "b").with_property(property::TIMER_DELIVER_MS, "soon");
        assert!(matches!(
            to_proto(&bad, 0, "h"),
            Err(InvalidMessage::NotOverGrpc(_))
        ));
        let both = Message::new("T", "b")
            .with_property(property::SHARDING_KEY, "g")
            .with_property(property::TIMER_DELIVER_MS, "1");
        assert!(matches!(
            to_proto(&both, 0, "h"),
            Err(InvalidMessage::NotOverGrpc(_))
        ));
    }
}
