//! SEND_MESSAGE (10, V1 header), SEND_MESSAGE_V2 (310) and
//! SEND_BATCH_MESSAGE (320) (Java `SendMessageProcessor`,
//! `AbstractSendMessageProcessor.msgCheck`).
//!
//! * The topic is checked (name rules, system topics) and created on first
//!   use from the template topic the producer names (`TBW102`), with
//!   min(producer's default queue count, template's) queues.
//! * A message to `%RETRY%<group>` whose reconsume count is over the
//!   maximum, or whose group holds unexpired orderly locks, goes to
//!   `%DLQ%<group>` instead.
//! * Stored as sent: body (compressed or not), sysFlag, flag, born time; the
//!   born host is the connection's peer, the store host the broker. The
//!   broker adds `CLUSTER`; 5.x adds a `UNIQ_KEY` when there is none, 4.9.x
//!   drops `WAIT`.
//! * Batches are split into their messages; 5.x stores each with exactly its
//!   own properties, 4.9.x appends the batch's (with `CLUSTER`).

use std::collections::HashMap;
use std::sync::Arc;

use rmq_protocol::header::{
    SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use rmq_protocol::message::{
    PROPERTY_SEPARATOR, decode_batch, decode_properties, encode_properties, property, sys_flag,
};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::{header, illegal_queue_code};
use crate::broker::store::{MessageMeta, NewMessage, PutError, StoredMsg, encode};
use crate::broker::topics::{
    AUTO_CREATE_TOPIC, RETRY_PREFIX, TopicConfig, dlq_topic, is_not_allowed_send_topic,
    validate_topic,
};
use crate::broker::{BrokerShared, BrokerState};
use crate::config::BrokerFlavor;
use crate::namesrv::FAQ;
use crate::net::{Incoming, response, response_with};

/// `version` from which a send's `maxReconsumeTimes` is honoured (V3_4_9).
const V3_4_9: i32 = 121;
/// The broker's region (Java `regionId` default).
const REGION: &str = "DefaultRegion";
/// Queues of a dead-letter topic (Java `DLQ_NUMS_PER_GROUP`).
const DLQ_QUEUES: i32 = 1;
/// Where transactions' half messages wait (Java `RMQ_SYS_TRANS_HALF_TOPIC`).
const HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let cmd = &incoming.cmd;
    let header: SendMessageRequestHeader = if cmd.request_code() == RequestCode::SEND_MESSAGE {
        match header(cmd) {
            Ok(h) => h,
            Err(answer) => return with_region(answer),
        }
    } else {
        match header::<SendMessageRequestHeaderV2>(cmd) {
            Ok(h) => h.into(),
            Err(answer) => return with_region(answer),
        }
    };
    let mut st = b.state();
    let answer = match check(b, &mut st, &header, incoming) {
        Err(answer) => answer,
        Ok(topic) => {
            let req = SendRequest {
                b,
                h: &header,
                incoming,
            };
            if cmd.request_code() == RequestCode::SEND_BATCH_MESSAGE {
                send_batch(req, &mut st, topic)
            } else {
                send_one(req, &mut st, topic)
            }
        }
    };
    with_region(answer)
}

/// One send request: the broker, the request's decoded header, the request.
#[derive(Clone, Copy)]
struct SendRequest<'a> {
    b: &'a BrokerShared,
    h: &'a SendMessageRequestHeader,
    incoming: &'a Incoming,
}

/// Java `preSend` adds these to every send answer.
fn with_region(answer: RemotingCommand) -> RemotingCommand {
    answer
        .with_ext_field(property::MSG_REGION, REGION)
        .with_ext_field(property::TRACE_ON, "true")
}

/// Java `msgCheck`: the topic's config, created on first use.
fn check(
    b: &BrokerShared,
    st: &mut BrokerState,
    h: &SendMessageRequestHeader,
    incoming: &Incoming,
) -> Result<TopicConfig, RemotingCommand> {
    if let Err(remark) = validate_topic(&h.topic) {
        let code = illegal_queue_code(b.cfg.flavor);
        return Err(response(code, remark));
    }
    if is_not_allowed_send_topic(&h.topic) {
        return Err(response(
            ResponseCode::NO_PERMISSION,
            format!("Sending message to topic[{}] is forbidden.", h.topic),
        ));
    }
    let config = match st.topics.get(&h.topic) {
        Some(c) => c.clone(),
        None => {
            let template_ok = b.cfg.auto_create_topic || h.default_topic != AUTO_CREATE_TOPIC;
            let created = if template_ok {
                st.topics.create_from_template(
                    &h.topic,
                    &h.default_topic,
                    h.default_topic_queue_nums,
                )
            } else {
                None
            };
            match created {
                Some(c) => {
                    b.put_topic(st, &h.topic, c.clone());
                    c
                }
                None if h.topic.starts_with(RETRY_PREFIX) => b.ensure_topic(st, &h.topic, 1),
                None => {
                    return Err(response(
                        ResponseCode::TOPIC_NOT_EXIST,
                        format!("topic[{}] not exist, apply first please!{FAQ}", h.topic),
                    ));
                }
            }
        }
    };
    let valid = config.write_queue_nums.max(config.read_queue_nums);
    if h.queue_id >= valid {
        let code = illegal_queue_code(b.cfg.flavor);
        return Err(response(
            code,
            format!(
                "request queueId[{}] is illegal, TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}] Producer: {}",
                h.queue_id,
                h.topic,
                config.read_queue_nums,
                config.write_queue_nums,
                incoming.conn.peer
            ),
        ));
    }
    Ok(config)
}

/// A random queue among `n` (Java `randomQueueId`).
fn random_queue(n: i32) -> i32 {
    use std::hash::{BuildHasher, Hasher};
    if n <= 1 {
        return 0;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    let r = h.finish() % u64::try_from(n).unwrap_or(1);
    i32::try_from(r).unwrap_or(0)
}

/// The queue to write: the header's, or a random writable one for −1.
fn queue_for(h: &SendMessageRequestHeader, config: &TopicConfig) -> i32 {
    if h.queue_id < 0 {
        random_queue(config.write_queue_nums)
    } else {
        h.queue_id
    }
}

/// The header's properties string, decoded.
fn header_properties(
    h: &SendMessageRequestHeader,
) -> Result<HashMap<String, String>, RemotingCommand> {
    match h
        .properties
        .as_deref()
        .map(|p| decode_properties(p.as_bytes()))
    {
        None => Ok(HashMap::new()),
        Some(Ok(p)) => Ok(p),
        Some(Err(e)) => Err(response(ResponseCode::MESSAGE_ILLEGAL, e.to_string())),
    }
}

fn illegal(e: &PutError, max: usize) -> RemotingCommand {
    let remark = match e {
        PutError::TooLarge => format!(
            "the message is illegal, maybe msg body or properties length not matched. msg body length limit {}B, msg properties length limit 32KB.",
            max
        ),
        PutError::Illegal(why) => format!("the message is illegal: {why}"),
    };
    response(ResponseCode::MESSAGE_ILLEGAL, remark)
}

fn send_one(
    req: SendRequest<'_>,
    st: &mut BrokerState,
    topic_config: TopicConfig,
) -> RemotingCommand {
    let SendRequest { b, h, incoming } = req;
    let mut queue_id = queue_for(h, &topic_config);
    let mut properties = match header_properties(h) {
        Ok(p) => p,
        Err(answer) => return answer,
    };
    let mut topic = h.topic.clone();
    // Java handleRetryAndDLQ.
    if let Some(group) = topic.strip_prefix(RETRY_PREFIX).map(str::to_owned) {
        let Some(group_config) = b.group(st, &group) else {
            return response(
                ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("subscription group not exist, {group} {FAQ}"),
            );
        };
        let mut max = group_config.retry_max_times;
        if incoming.cmd.version >= V3_4_9 {
            if let Some(m) = h.max_reconsume_times {
                max = m;
            }
        }
        let reconsume = h.reconsume_times.unwrap_or(0);
        // 5.x: a group holding orderly locks gets its retries dead-lettered.
        let orderly_locked =
            b.cfg.flavor.is_v5() && !st.locks.all_expired(&group, b.now_ms(), b.lease_ms());
        if reconsume > max || orderly_locked {
            properties.insert(property::DELAY.to_owned(), "-1".to_owned());
            topic = dlq_topic(&group);
            b.ensure_topic(st, &topic, DLQ_QUEUES);
            queue_id = random_queue(DLQ_QUEUES);
        }
    }
    if b.cfg.flavor.is_v5() {
        // 5.x builds a send context for its send hooks, which puts these
        // into the stored message (Java `buildMsgContext`).
        properties.insert(property::MSG_REGION.to_owned(), REGION.to_owned());
        properties.insert(property::TRACE_ON.to_owned(), "true".to_owned());
    }
    if b.cfg.flavor.is_v5()
        && properties
            .get(property::UNIQ_KEY)
            .is_none_or(String::is_empty)
    {
        properties.insert(property::UNIQ_KEY.to_owned(), b.new_uniq_key());
    }
    let delayed = properties
        .get(property::DELAY)
        .and_then(|d| d.trim().parse::<i32>().ok())
        .is_some_and(|d| d > 0);
    if b.cfg.flavor == BrokerFlavor::V4_9 && !delayed {
        // "There is no need to store WAIT=true": 4.9.x drops it, unless the
        // message is delayed (then the commit log re-encodes it with WAIT).
        properties.remove(property::WAIT);
    }
    properties.insert(property::CLUSTER.to_owned(), b.cfg.cluster_name.clone());
    let uniq = properties.get(property::UNIQ_KEY).cloned();
    let mut sys_flag = h.sys_flag;
    let prepared = properties
        .get(property::TRAN_MSG)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if prepared && !(h.reconsume_times.unwrap_or(0) > 0 && delayed) {
        // A transaction's half message: kept out of sight (Java
        // `TransactionalMessageBridge.parseHalfMessageInner`).
        properties.insert(property::REAL_TOPIC.to_owned(), topic);
        properties.insert(property::REAL_QID.to_owned(), queue_id.to_string());
        topic = HALF_TOPIC.to_owned();
        queue_id = 0;
        sys_flag = sys_flag::reset_transaction_type(sys_flag, sys_flag::TRANSACTION_NOT_TYPE);
    }
    let mut msg = sent_message(req, topic, queue_id, properties);
    msg.meta.sys_flag = sys_flag;
    match b.put_message(st, msg) {
        Ok(stored) => answer(b, &[stored], queue_id, uniq),
        Err(e) => illegal(&e, b.cfg.max_message_size),
    }
}

fn send_batch(
    req: SendRequest<'_>,
    st: &mut BrokerState,
    topic_config: TopicConfig,
) -> RemotingCommand {
    let SendRequest { b, h, incoming } = req;
    let queue_id = queue_for(h, &topic_config);
    if h.topic.len() > 127 {
        return response(
            ResponseCode::MESSAGE_ILLEGAL,
            format!("message topic length too long {}", h.topic.len()),
        );
    }
    if h.topic.starts_with(RETRY_PREFIX) {
        return response(
            ResponseCode::MESSAGE_ILLEGAL,
            format!("batch request does not support retry group {}", h.topic),
        );
    }
    let mut batch_props = match header_properties(h) {
        Ok(p) => p,
        Err(answer) => return answer,
    };
    batch_props.insert(property::CLUSTER.to_owned(), b.cfg.cluster_name.clone());
    let messages = match decode_batch(&incoming.cmd.body, &h.topic) {
        Ok(m) if !m.is_empty() => m,
        Ok(_) => {
            return response(
                ResponseCode::MESSAGE_ILLEGAL,
                "the batch is empty".to_owned(),
            );
        }
        Err(e) => return response(ResponseCode::MESSAGE_ILLEGAL, e.to_string()),
    };
    if batch_props
        .get(property::DELAY)
        .and_then(|d| d.parse::<i32>().ok())
        .is_some_and(|d| d > 0)
    {
        return response(
            ResponseCode::MESSAGE_ILLEGAL,
            "the batch message cannot be delayed".to_owned(),
        );
    }
    let mut stored = Vec::with_capacity(messages.len());
    let batch_text = encode(&batch_props, b.cfg.flavor);
    for m in messages {
        let mut properties = m.properties.to_map();
        let mut properties_text = None;
        if b.cfg.flavor == BrokerFlavor::V4_9 {
            // 4.9.x appends the batch's properties string to each message's
            // (a key in both is then written twice; the later one counts).
            let mut text = encode_properties(&properties);
            if !text.is_empty() && !batch_text.is_empty() && !text.ends_with(PROPERTY_SEPARATOR) {
                text.push(PROPERTY_SEPARATOR);
            }
            text.push_str(&batch_text);
            properties.extend(batch_props.iter().map(|(k, v)| (k.clone(), v.clone())));
            properties_text = Some(text);
        }
        properties.remove(property::DELAY);
        let mut msg = sent_message(req, h.topic.clone(), queue_id, properties);
        msg.meta.flag = m.flag;
        msg.body = m.body;
        msg.properties_text = properties_text;
        match b.put_message(st, msg) {
            Ok(s) => stored.push(s),
            Err(e) => return illegal(&e, b.cfg.max_message_size),
        }
    }
    let uniq = batch_props.get(property::UNIQ_KEY).cloned();
    answer(b, &stored, queue_id, uniq)
}

/// A message as the send request `h` carries it, to store in `topic` /
/// `queue_id` with `properties`: the header's flags, times and reconsume
/// count, the request's body, the sender's and this broker's addresses.
fn sent_message(
    req: SendRequest<'_>,
    topic: String,
    queue_id: i32,
    properties: HashMap<String, String>,
) -> NewMessage {
    let SendRequest { b, h, incoming } = req;
    let meta = MessageMeta {
        sys_flag: h.sys_flag,
        flag: h.flag,
        born_timestamp: h.born_timestamp,
        born_host: incoming.conn.peer,
        store_host: b.addr(),
        reconsume_times: h.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
    };
    NewMessage::new(topic, queue_id, meta, incoming.cmd.body.clone(), properties)
}

fn answer(
    b: &BrokerShared,
    stored: &[Arc<StoredMsg>],
    queue_id: i32,
    uniq: Option<String>,
) -> RemotingCommand {
    let msg_id = stored
        .iter()
        .map(|s| s.offset_msg_id())
        .collect::<Vec<_>>()
        .join(",");
    let header = SendMessageResponseHeader {
        msg_id,
        queue_id,
        queue_offset: stored.first().map_or(0, |s| s.queue_offset),
        transaction_id: uniq.filter(|_| b.cfg.flavor.is_v5()),
        ..SendMessageResponseHeader::default()
    };
    response_with(ResponseCode::SUCCESS, &header)
}
