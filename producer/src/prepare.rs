//! Turning a [`Message`] (or a batch) into what goes on the wire: the
//! `UNIQ_KEY`/`WAIT` properties, the properties string, the (compressed or
//! batch-encoded) body and the SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE header
//! (Java `SendMessageRequestHeaderV2`, `MessageDecoder.encodeMessages`). Pure functions, no I/O.

use std::collections::HashMap;

use bytes::Bytes;
use rmq_client_core::{BrokerVersion, now_ms};
use rmq_protocol::header::SendMessageRequestHeaderV2;
use rmq_protocol::message::{encode_batch, encode_properties, is_reply, property, sys_flag};
use rmq_protocol::namespace::Namespace;
use rmq_protocol::{Message, MessageQueue, Properties};

use crate::config::ProducerConfig;
use crate::error::{InvalidMessage, Result};
use crate::msg_id::next_uniq_id;
use crate::validate::{AUTO_CREATE_TOPIC, check_batch, check_message, is_transactional};

/// A message or batch ready to send: everything of the request except the
/// queue and the born timestamp, which each attempt sets.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub(crate) topic: String,
    /// The properties string of the header (for a batch: only `WAIT`).
    pub(crate) properties: String,
    /// Body as sent: compressed, or the batch encoding.
    pub(crate) body: Bytes,
    pub(crate) sys_flag: i32,
    pub(crate) flag: i32,
    pub(crate) reconsume_times: i32,
    pub(crate) max_reconsume_times: Option<i32>,
    /// `Some(ids)` for a batch: every message's `UNIQ_KEY`, in order.
    pub(crate) batch_ids: Option<Vec<String>>,
    /// The newest broker feature a message asks for (a delivery time, a
    /// priority, a lite topic): only a broker of that version or newer may
    /// get it.
    pub(crate) requires: Option<Requirement>,
    /// Whether it is a reply (`MSG_TYPE=reply`): sent with
    /// SEND_REPLY_MESSAGE_V2, which the broker pushes to the requester.
    pub(crate) reply: bool,
}

/// A broker feature a message asks for, and the version that brought it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Requirement {
    /// What it is, for the error: `"priority messages"`, ...
    pub(crate) feature: &'static str,
    /// The oldest broker version with it.
    pub(crate) since: BrokerVersion,
}

/// `V5_4_0`: priority messages.
const PRIORITY_SINCE: BrokerVersion = BrokerVersion(493);
/// `V5_5_0`: lite topics.
const LITE_TOPIC_SINCE: BrokerVersion = BrokerVersion(513);

/// The newest broker feature `msg` asks for, if any.
pub(crate) fn requirement(msg: &Message) -> Option<Requirement> {
    if msg.properties.contains_key(property::LITE_TOPIC) {
        Some(Requirement {
            feature: "lite topics",
            since: LITE_TOPIC_SINCE,
        })
    } else if msg.properties.contains_key(property::PRIORITY) {
        Some(Requirement {
            feature: "priority messages",
            since: PRIORITY_SINCE,
        })
    } else if msg.is_timer() {
        Some(Requirement {
            feature: "delivery-time (timer) messages",
            since: BrokerVersion::V5_0_0,
        })
    } else {
        None
    }
}

/// Gives `msg` a `UNIQ_KEY` (unless it has one) and `WAIT=true` (unless
/// `WAIT` is set), as the Java producer does.
pub(crate) fn stamp(msg: &mut Message) {
    if msg.unique_key().is_none_or(str::is_empty) {
        msg.set_property(property::UNIQ_KEY, next_uniq_id());
    }
    if msg.property(property::WAIT).is_none() {
        msg.set_property(property::WAIT, "true");
    }
}

/// Puts `msg` into the producer's `namespace` (Java: `DefaultMQProducer`
/// wraps the topic of every send, `sendKernelImpl` sets `INSTANCE_ID`);
/// nothing without a namespace. Wrapping twice changes nothing, so a
/// message handed back and sent again stays right.
pub(crate) fn enter_namespace(msg: &mut Message, namespace: &Namespace) {
    if namespace.is_none() {
        return;
    }
    namespace.wrap_in_place(&mut msg.topic);
    msg.set_property(property::INSTANCE_ID, namespace.as_str());
}

/// Validates and stamps one message and builds what every attempt sends.
/// `msg` keeps the added properties, so a failed send hands back a message
/// whose resend keeps its id.
///
/// # Errors
///
/// [`InvalidMessage`] from validation, or a protocol error when the
/// properties string is too long or compression fails.
pub(crate) fn prepare_message(msg: &mut Message, config: &ProducerConfig) -> Result<Prepared> {
    enter_namespace(msg, &config.namespace);
    check_message(msg, config.max_message_size)?;
    stamp(msg);

    let mut reconsume_times = 0;
    let mut max_reconsume_times = None;
    let properties = if rmq_protocol::names::is_retry_topic(&msg.topic) {
        // Java moves these two from the properties into the header.
        let mut props = msg.properties.clone();
        if let Some(v) = props.remove(property::RECONSUME_TIME) {
            reconsume_times = v.trim().parse().unwrap_or(0);
        }
        if let Some(v) = props.remove(property::MAX_RECONSUME_TIMES) {
            max_reconsume_times = v.trim().parse().ok();
        }
        checked_properties(&props)?
    } else {
        msg.properties_string()?
    };

    let (body, mut sys_flag) = if msg.body.len() >= config.compress_over {
        let compressed = config
            .compression_type
            .compress(&msg.body, config.compress_level)?;
        (compressed, config.compression_type.sys_flag_bits())
    } else {
        (msg.body.clone(), 0)
    };
    if is_transactional(msg) {
        // Java `sendKernelImpl`: a half message says so in its sysFlag too.
        sys_flag |= sys_flag::TRANSACTION_PREPARED_TYPE;
    }

    Ok(Prepared {
        topic: msg.topic.clone(),
        properties,
        body,
        sys_flag,
        flag: msg.flag,
        reconsume_times,
        max_reconsume_times,
        batch_ids: None,
        requires: requirement(msg),
        reply: is_reply(msg),
    })
}

/// The properties string of a map (validated, length-checked).
fn checked_properties(props: &Properties) -> Result<String> {
    let carrier = Message {
        properties: props.clone(),
        ..Message::default()
    };
    Ok(carrier.properties_string()?)
}

/// Validates and stamps a batch and encodes it (Java `MessageBatch`): every
/// message gets its own `UNIQ_KEY`; the header's properties carry only
/// `WAIT` (a batch-level `UNIQ_KEY` would overwrite the inner ids on 4.9.x
/// brokers, Java `MessageBatch.encode`); no compression.
///
/// # Errors
///
/// [`InvalidMessage`] for a batch that breaks the rules or encodes to more
/// than `max_message_size` bytes.
pub(crate) fn prepare_batch(msgs: &mut [Message], config: &ProducerConfig) -> Result<Prepared> {
    for msg in msgs.iter_mut() {
        enter_namespace(msg, &config.namespace);
    }
    check_batch(msgs, config.max_message_size)?;
    msgs.iter_mut().for_each(stamp);
    let requires = msgs.iter().find_map(requirement);
    encode_stamped_batch(msgs, requires, config)
}

/// Encodes a batch whose messages were each validated and stamped already
/// and share one topic and one `WAIT` value: what [`prepare_batch`] does
/// after its checks. The auto-batching path sends its batches this way
/// (each message was checked and stamped when it was added, and a pending
/// batch is keyed by topic and `WAIT`); `requires` is the broker feature
/// one of them asks for (a timer property).
///
/// # Errors
///
/// [`InvalidMessage::TooLarge`] when the batch encodes to more than
/// `max_message_size` bytes, or a protocol error from the encoding.
pub(crate) fn encode_stamped_batch(
    msgs: &[Message],
    requires: Option<Requirement>,
    config: &ProducerConfig,
) -> Result<Prepared> {
    let body = encode_batch(msgs)?;
    if body.len() > config.max_message_size {
        return Err(InvalidMessage::TooLarge {
            size: body.len(),
            max: config.max_message_size,
        }
        .into());
    }
    let first = msgs.first().ok_or(InvalidMessage::EmptyBatch)?;
    let wait = HashMap::from([(
        property::WAIT.to_owned(),
        first.wait_store_msg_ok().to_string(),
    )]);
    let ids = msgs
        .iter()
        .map(|m| m.unique_key().unwrap_or_default().to_owned())
        .collect();
    Ok(Prepared {
        topic: first.topic.clone(),
        properties: encode_properties(&wait),
        body,
        sys_flag: 0,
        flag: 0,
        reconsume_times: 0,
        max_reconsume_times: None,
        batch_ids: Some(ids),
        requires,
        reply: false,
    })
}

impl Prepared {
    /// The send header for one attempt on `queue`, born now.
    pub(crate) fn header(
        &self,
        group: &str,
        queue: &MessageQueue,
        default_topic_queue_nums: i32,
    ) -> SendMessageRequestHeaderV2 {
        SendMessageRequestHeaderV2 {
            producer_group: group.to_owned(),
            topic: self.topic.clone(),
            default_topic: AUTO_CREATE_TOPIC.to_owned(),
            default_topic_queue_nums,
            queue_id: queue.queue_id,
            sys_flag: self.sys_flag,
            born_timestamp: now_ms(),
            flag: self.flag,
            properties: (!self.properties.is_empty()).then(|| self.properties.clone()),
            reconsume_times: Some(self.reconsume_times),
            unit_mode: Some(false),
            max_reconsume_times: self.max_reconsume_times,
            batch: Some(self.batch_ids.is_some()),
            broker_name: Some(queue.broker_name.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::message::{CompressionType, decode_batch, decode_properties, sys_flag};

    fn config() -> ProducerConfig {
        ProducerConfig {
            group: "g".into(),
            ..ProducerConfig::default()
        }
    }

    #[test]
    fn namespaced_messages_are_wrapped_once() {
        let config = ProducerConfig {
            group: "ns%g".into(),
            namespace: Namespace::new("ns"),
            ..ProducerConfig::default()
        };
        let mut msg = Message::new("t", "hello");
        let p = prepare_message(&mut msg, &config).unwrap();
        assert_eq!(p.topic, "ns%t");
        assert_eq!(msg.topic, "ns%t");
        assert_eq!(msg.property(property::INSTANCE_ID), Some("ns"));
        // Sent again (handed back after a failure): still wrapped once.
        let p = prepare_message(&mut msg, &config).unwrap();
        assert_eq!(p.topic, "ns%t");
        let mut batch = vec![Message::new("t", "a"), Message::new("t", "b")];
        let p = prepare_batch(&mut batch, &config).unwrap();
        assert_eq!(p.topic, "ns%t");
        assert!(batch.iter().all(|m| m.topic == "ns%t"));
        // Without a namespace nothing changes.
        let mut plain = Message::new("t", "x");
        prepare_message(&mut plain, &ProducerConfig::default()).unwrap();
        assert_eq!(plain.topic, "t");
        assert_eq!(plain.property(property::INSTANCE_ID), None);
    }

    #[test]
    fn stamps_id_and_wait() {
        let mut msg = Message::new("t", "hello").with_tags("a").with_keys(["k1"]);
        let p = prepare_message(&mut msg, &config()).unwrap();
        let id = msg.unique_key().unwrap().to_owned();
        assert_eq!(msg.property(property::WAIT), Some("true"));
        let props = decode_properties(p.properties.as_bytes()).unwrap();
        assert_eq!(props, msg.properties);
        assert_eq!(&p.body[..], b"hello");
        assert_eq!(p.sys_flag, 0);
        // A second prepare keeps the id; a user id and WAIT=false are kept.
        prepare_message(&mut msg, &config()).unwrap();
        assert_eq!(msg.unique_key(), Some(id.as_str()));
        let mut own = Message::new("t", "x")
            .with_property(property::UNIQ_KEY, "MINE")
            .with_property(property::WAIT, "false");
        prepare_message(&mut own, &config()).unwrap();
        assert_eq!(own.unique_key(), Some("MINE"));
        assert!(!own.wait_store_msg_ok());
    }

    #[test]
    fn broker_features_a_message_needs() {
        let need = |m: Message| requirement(&m).map(|r| (r.feature, r.since));
        assert_eq!(need(Message::new("t", "x")), None);
        assert_eq!(
            need(Message::new("t", "x").deliver_after(std::time::Duration::from_secs(1))),
            Some(("delivery-time (timer) messages", BrokerVersion::V5_0_0))
        );
        assert_eq!(
            need(Message::new("t", "x").with_priority(1)),
            Some(("priority messages", BrokerVersion(493)))
        );
        assert_eq!(BrokerVersion(493).to_string(), "V5_4_0");
        assert_eq!(
            need(Message::new("t", "x").with_lite_topic("l")),
            Some(("lite topics", BrokerVersion(513)))
        );
        let mut reply = Message::new("t", "x").with_property(property::MSG_TYPE, "reply");
        assert!(prepare_message(&mut reply, &config()).unwrap().reply);
        assert!(
            !prepare_message(&mut Message::new("t", "x"), &config())
                .unwrap()
                .reply
        );
    }

    #[test]
    fn half_messages_carry_the_prepared_flag() {
        let mut msg = Message::new("t", "x").with_property(property::TRAN_MSG, "true");
        let p = prepare_message(&mut msg, &config()).unwrap();
        assert_eq!(p.sys_flag, sys_flag::TRANSACTION_PREPARED_TYPE);
        let mut big = Message::new("t", vec![b'a'; 4096]).with_property(property::TRAN_MSG, "true");
        let p = prepare_message(&mut big, &config()).unwrap();
        assert_eq!(p.sys_flag, 0x301 | sys_flag::TRANSACTION_PREPARED_TYPE);
    }

    #[test]
    fn compresses_at_threshold() {
        let body = vec![b'a'; 4096];
        let mut msg = Message::new("t", body.clone());
        let p = prepare_message(&mut msg, &config()).unwrap();
        assert_eq!(p.sys_flag, 0x301);
        assert_eq!(p.sys_flag & sys_flag::COMPRESSED, sys_flag::COMPRESSED);
        let back = CompressionType::from_sys_flag(p.sys_flag)
            .unwrap()
            .decompress(&p.body, 1 << 20)
            .unwrap();
        assert_eq!(&back[..], &body[..]);
        // The caller's message keeps its plain body.
        assert_eq!(&msg.body[..], &body[..]);
        let mut small = Message::new("t", vec![b'a'; 4095]);
        assert_eq!(prepare_message(&mut small, &config()).unwrap().sys_flag, 0);
        let lz4 = ProducerConfig {
            compression_type: CompressionType::Lz4,
            ..config()
        };
        let p = prepare_message(&mut Message::new("t", body), &lz4).unwrap();
        assert_eq!(p.sys_flag, 0x101);
    }

    #[test]
    fn retry_topic_moves_reconsume_fields() {
        let mut msg = Message::new("%RETRY%g", "x")
            .with_property(property::RECONSUME_TIME, "3")
            .with_property(property::MAX_RECONSUME_TIMES, "16");
        let p = prepare_message(&mut msg, &config()).unwrap();
        assert_eq!(p.reconsume_times, 3);
        assert_eq!(p.max_reconsume_times, Some(16));
        let props = decode_properties(p.properties.as_bytes()).unwrap();
        assert!(!props.contains_key(property::RECONSUME_TIME));
        assert!(!props.contains_key(property::MAX_RECONSUME_TIMES));
        let h = p.header("g", &MessageQueue::new("%RETRY%g", "b", 0), 4);
        assert_eq!(h.reconsume_times, Some(3));
        assert_eq!(h.max_reconsume_times, Some(16));
    }

    #[test]
    fn rejects_invalid() {
        let e = prepare_message(&mut Message::new("t", ""), &config()).unwrap_err();
        assert!(matches!(
            e,
            crate::Error::InvalidMessage(InvalidMessage::EmptyBody)
        ));
        let small = ProducerConfig {
            max_message_size: 3,
            ..config()
        };
        let e = prepare_message(&mut Message::new("t", "four"), &small).unwrap_err();
        assert!(matches!(
            e,
            crate::Error::InvalidMessage(InvalidMessage::TooLarge { size: 4, max: 3 })
        ));
    }

    #[test]
    fn batch_encoding_and_header() {
        let mut msgs: Vec<_> = (0..3)
            .map(|i| Message::new("t", format!("m{i}")).with_tags("x"))
            .collect();
        let p = prepare_batch(&mut msgs, &config()).unwrap();
        let ids = p.batch_ids.clone().unwrap();
        assert_eq!(ids.len(), 3);
        let decoded = decode_batch(&p.body, "t").unwrap();
        assert_eq!(decoded, msgs);
        for (m, id) in msgs.iter().zip(&ids) {
            assert_eq!(m.unique_key(), Some(id.as_str()));
        }
        assert_eq!(p.properties, "WAIT\u{1}true\u{2}");
        let h = p.header("g", &MessageQueue::new("t", "broker-a", 2), 4);
        assert_eq!(h.batch, Some(true));
        assert_eq!(h.queue_id, 2);
        assert_eq!(h.sys_flag, 0);
        assert_eq!(h.default_topic, "TBW102");
        assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
        // Too large once encoded.
        let tight = ProducerConfig {
            max_message_size: 40,
            ..config()
        };
        let mut two = vec![Message::new("t", "a"), Message::new("t", "b")];
        let e = prepare_batch(&mut two, &tight).unwrap_err();
        assert!(matches!(
            e,
            crate::Error::InvalidMessage(InvalidMessage::TooLarge { .. })
        ));
        // Bodies over the threshold are not compressed in a batch.
        let mut big = vec![Message::new("t", vec![b'z'; 5000])];
        let p = prepare_batch(&mut big, &config()).unwrap();
        assert_eq!(p.sys_flag, 0);
    }
}
