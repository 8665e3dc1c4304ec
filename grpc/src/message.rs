//! Received `apache.rocketmq.v2.Message`s as the shared [`MessageExt`]: the
//! system properties become the properties a remoting consumer of the same
//! broker sees (`tag` → `TAGS`, `keys` → `KEYS`, `message_id` →
//! `UNIQ_KEY`, `message_group` → `__SHARDINGKEY`, `delivery_timestamp` →
//! `TIMER_DELIVER_MS`, `priority` → `_SYS_MSG_PRIORITY_`, `lite_topic` →
//! `__LITE_TOPIC`), the delivery attempt the reconsume times (attempt − 1),
//! the rest the `MessageExt` fields. A born host that is a host name (what
//! the gRPC clients send) is no address: it is kept as the `__BORNHOST`
//! property, as a remoting consumer sees it, and `born_host` stays
//! `0.0.0.0:0`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use rmq_protocol::message::{CompressionType, DEFAULT_MAX_BODY_SIZE, property};
use rmq_protocol::{Message, MessageExt};

use crate::error::{Error, Result};
use crate::proto;
use crate::session::timestamp_to_ms;

/// What a received message carries besides the [`MessageExt`]: what acks
/// it and how often it was delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The receipt handle (acks the message, changes its invisible time).
    pub receipt_handle: String,
    /// Deliveries so far, this one included (1 = first).
    pub delivery_attempt: i32,
}

/// Maps a received message; `broker_name` is the broker of the queue it was
/// received from (the message does not name it).
///
/// # Errors
///
/// [`Error::Protocol`] when the message has no system properties or
/// receipt handle, or its body does not inflate.
pub fn message_ext(msg: proto::Message, broker_name: &str) -> Result<(MessageExt, Receipt)> {
    const RPC: &str = "ReceiveMessage";
    let handle = msg
        .system_properties
        .as_ref()
        .and_then(|s| s.receipt_handle.clone())
        .filter(|h| !h.is_empty());
    let ext = to_message_ext(msg, broker_name, RPC)?;
    let Some(receipt_handle) = handle else {
        return Err(Error::Protocol {
            rpc: RPC,
            reason: format!(
                "message {} of {} without a receipt handle",
                ext.msg_id, ext.message.topic
            ),
        });
    };
    let delivery_attempt = ext.reconsume_times.saturating_add(1);
    Ok((
        ext,
        Receipt {
            receipt_handle,
            delivery_attempt,
        },
    ))
}

/// Maps the half message of a `RecoverOrphanedTransactionCommand` (it has no
/// receipt handle) as [`message_ext`] maps a received one.
///
/// # Errors
///
/// [`Error::Protocol`] when the message has no system properties or its body
/// does not inflate.
pub fn half_message_ext(msg: proto::Message, broker_name: &str) -> Result<MessageExt> {
    to_message_ext(msg, broker_name, "RecoverOrphanedTransaction")
}

fn to_message_ext(msg: proto::Message, broker_name: &str, rpc: &'static str) -> Result<MessageExt> {
    let bad = |reason: String| Error::Protocol { rpc, reason };
    let topic = msg.topic.map(|t| t.name).unwrap_or_default();
    let Some(sys) = msg.system_properties else {
        return Err(bad(format!(
            "a message of {topic} without system properties"
        )));
    };
    let body = if sys.body_encoding == proto::Encoding::Gzip as i32 {
        CompressionType::Zlib
            .decompress(&msg.body, DEFAULT_MAX_BODY_SIZE)
            .map_err(|e| bad(format!("message {}: {e}", sys.message_id)))?
    } else {
        msg.body
    };
    let mut m = Message::new(topic, body);
    m.properties = msg.user_properties.into();
    if let Some(tag) = sys.tag.as_deref().filter(|t| !t.is_empty()) {
        m.set_property(property::TAGS, tag);
    }
    if !sys.keys.is_empty() {
        m.set_property(property::KEYS, sys.keys.join(property::KEY_SEPARATOR));
    }
    if !sys.message_id.is_empty() {
        m.set_property(property::UNIQ_KEY, sys.message_id.as_str());
    }
    if let Some(group) = sys.message_group.as_deref().filter(|g| !g.is_empty()) {
        m.set_property(property::SHARDING_KEY, group);
    }
    if let Some(at) = &sys.delivery_timestamp {
        m.set_property(property::TIMER_DELIVER_MS, timestamp_to_ms(at).to_string());
    }
    if let Some(p) = sys.priority {
        m.set_property(property::PRIORITY, p.to_string());
    }
    if let Some(lite) = sys.lite_topic.as_deref().filter(|l| !l.is_empty()) {
        m.set_property(property::LITE_TOPIC, lite);
    }
    let born_host = host(&sys.born_host);
    if born_host.ip().is_unspecified() && !sys.born_host.trim().is_empty() {
        m.set_property(property::BORN_HOST, sys.born_host.trim());
    }
    let attempt = sys.delivery_attempt.unwrap_or(1).max(1);
    Ok(MessageExt {
        message: m,
        broker_name: broker_name.to_owned(),
        queue_id: sys.queue_id,
        queue_offset: sys.queue_offset.unwrap_or(-1),
        born_timestamp: sys.born_timestamp.as_ref().map_or(0, timestamp_to_ms),
        born_host,
        store_timestamp: sys.store_timestamp.as_ref().map_or(0, timestamp_to_ms),
        store_host: host(&sys.store_host),
        reconsume_times: attempt - 1,
        msg_id: sys.message_id,
        ..MessageExt::default()
    })
}

/// `ip:port`, or a bare IP (port 0); anything else is `0.0.0.0:0`.
fn host(text: &str) -> SocketAddr {
    let text = text.trim().trim_start_matches('/');
    text.parse::<SocketAddr>()
        .or_else(|_| text.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .unwrap_or_else(|_| SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{resource, timestamp_ms};

    #[test]
    fn system_properties_become_the_remoting_properties() {
        let msg = proto::Message {
            topic: Some(resource("", "T")),
            user_properties: [("u".to_owned(), "v".to_owned())].into(),
            system_properties: Some(proto::SystemProperties {
                tag: Some("tg".into()),
                keys: vec!["k1".into(), "k2".into()],
                message_id: "ID".into(),
                born_timestamp: Some(timestamp_ms(1234)),
                born_host: "10.0.0.1:555".into(),
                store_host: "10.0.0.2".into(),
                receipt_handle: Some("RH".into()),
                queue_id: 3,
                queue_offset: Some(7),
                delivery_attempt: Some(2),
                message_group: Some("g".into()),
                ..Default::default()
            }),
            body: bytes::Bytes::from_static(b"b"),
        };
        let (m, r) = message_ext(msg, "broker-a").unwrap();
        assert_eq!(m.topic, "T");
        assert_eq!(m.property(property::TAGS), Some("tg"));
        assert_eq!(m.property(property::KEYS), Some("k1 k2"));
        assert_eq!(m.property(property::SHARDING_KEY), Some("g"));
        assert_eq!(m.property("u"), Some("v"));
        assert_eq!(m.msg_id, "ID");
        assert_eq!((m.queue_id, m.queue_offset, m.reconsume_times), (3, 7, 1));
        assert_eq!(m.born_timestamp, 1234);
        assert_eq!(m.born_host.to_string(), "10.0.0.1:555");
        assert_eq!(m.store_host.to_string(), "10.0.0.2:0");
        assert_eq!(m.broker_name, "broker-a");
        assert_eq!(r.receipt_handle, "RH");
        assert_eq!(r.delivery_attempt, 2);
        assert_eq!(m.property(property::BORN_HOST), None);
    }

    #[test]
    fn priority_lite_topic_and_a_host_name() {
        let msg = proto::Message {
            topic: Some(resource("", "T")),
            system_properties: Some(proto::SystemProperties {
                message_id: "ID".into(),
                born_host: "app-host-1".into(),
                receipt_handle: Some("RH".into()),
                priority: Some(3),
                lite_topic: Some("order-1".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let (m, _) = message_ext(msg, "broker-a").unwrap();
        assert_eq!(m.priority(), Some(3));
        assert_eq!(m.lite_topic(), Some("order-1"));
        assert!(m.born_host.ip().is_unspecified());
        assert_eq!(m.property(property::BORN_HOST), Some("app-host-1"));
    }

    #[test]
    fn no_receipt_handle_is_a_protocol_error() {
        let msg = proto::Message {
            system_properties: Some(proto::SystemProperties::default()),
            ..Default::default()
        };
        assert!(matches!(message_ext(msg, "b"), Err(Error::Protocol { .. })));
    }
}
