//! CONSUMER_SEND_MSG_BACK (36) (Java
//! `AbstractSendMessageProcessor.consumerSendMsgBack`): a message the
//! consumer failed goes to `%RETRY%<group>` with a delay level (the
//! request's, or 3 + its reconsume count), or to `%DLQ%<group>` once its
//! reconsume count reached the maximum (or for a negative delay level).
//!
//! The new message keeps body (as stored), flag, sysFlag, properties, born
//! time and host; its reconsume count is one more; it gets `RETRY_TOPIC`
//! (the original topic, if not there yet), `ORIGIN_MESSAGE_ID` (kept, else
//! the offset message id of the failed message), `WAIT=false` and `DELAY`.

use std::sync::Arc;

use rmq_protocol::header::ConsumerSendMsgBackRequestHeader;
use rmq_protocol::message::property;
use rmq_protocol::{RemotingCommand, ResponseCode};

use super::{header, ok};
use crate::broker::BrokerShared;
use crate::broker::store::NewMessage;
use crate::broker::topics::{dlq_topic, retry_topic};
use crate::namesrv::FAQ;
use crate::net::{Incoming, response};

/// `version` from which the request's `maxReconsumeTimes` is honoured (V3_4_9).
const V3_4_9: i32 = 121;

fn random_below(n: i32) -> i32 {
    use std::hash::{BuildHasher, Hasher};
    if n <= 1 {
        return 0;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i32(n);
    i32::try_from(h.finish() % u64::try_from(n).unwrap_or(1)).unwrap_or(0)
}

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let h: ConsumerSendMsgBackRequestHeader = match header(&incoming.cmd) {
        Ok(h) => h,
        Err(answer) => return answer,
    };
    let mut st = b.state();
    let Some(group) = b.group(&mut st, &h.group) else {
        return response(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {} {FAQ}", h.group),
        );
    };
    if group.retry_queue_nums <= 0 {
        return ok();
    }
    let mut topic = retry_topic(&h.group);
    let mut queue_id = random_below(group.retry_queue_nums);
    b.ensure_topic(&mut st, &topic, group.retry_queue_nums);
    let Some(failed) = st.store.by_commit_offset(h.offset).cloned() else {
        return response(
            ResponseCode::SYSTEM_ERROR,
            format!("look message by offset failed, {}", h.offset),
        );
    };
    let mut properties = failed.properties.clone();
    properties
        .entry(property::RETRY_TOPIC.to_owned())
        .or_insert_with(|| failed.topic.clone());
    properties.insert(property::WAIT.to_owned(), "false".to_owned());
    let mut max = group.retry_max_times;
    if incoming.cmd.version >= V3_4_9 {
        if let Some(m) = h.max_reconsume_times {
            max = m;
        }
    }
    if failed.meta.reconsume_times >= max || h.delay_level < 0 {
        topic = dlq_topic(&h.group);
        queue_id = 0;
        b.ensure_topic(&mut st, &topic, 1);
        properties.insert(property::DELAY.to_owned(), "0".to_owned());
    } else {
        let level = if h.delay_level == 0 {
            3 + failed.meta.reconsume_times
        } else {
            h.delay_level
        };
        properties.insert(property::DELAY.to_owned(), level.to_string());
    }
    if properties
        .get(property::ORIGIN_MESSAGE_ID)
        .is_none_or(|id| id.trim().is_empty())
    {
        properties.insert(
            property::ORIGIN_MESSAGE_ID.to_owned(),
            failed.offset_msg_id(),
        );
    }
    let mut msg = NewMessage::again(&failed, topic, queue_id, properties);
    msg.meta.store_host = b.addr();
    msg.meta.reconsume_times = failed.meta.reconsume_times.saturating_add(1);
    match b.put_message(&mut st, msg) {
        Ok(_) => ok(),
        Err(e) => response(ResponseCode::SYSTEM_ERROR, format!("{e:?}")),
    }
}
