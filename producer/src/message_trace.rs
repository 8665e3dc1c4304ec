//! RocketMQ message trace of sends (Java `SendMessageTraceHookImpl`): a
//! `Pub` record after each answered send, handed to the producer's
//! [`TraceDispatcher`]. Nothing runs when trace is off.
//!
//! A batch (`send_batch`, an auto-batched flush) writes one `Pub` record per
//! message: its own id, offset id, keys, tags and body length, with the
//! batch's start time and cost. (Java's hook sees a `MessageBatch` as one
//! message and writes one record whose id is the joined ids, which
//! `queryMsgTraceById` of any one message does not find.)

use rmq_client_core::trace::TraceDispatcher;
use rmq_client_core::{ClientInstance, SendResult, SendStatus, now_ms};
use rmq_protocol::Message;
use rmq_protocol::message::property;
use rmq_protocol::trace::{NULL, PubRecord, TraceRecord, msg_type};

use crate::config::ProducerConfig;
use crate::producer::Backend;
use crate::send::{Outcome, Sender};

/// The dispatcher of a producer with trace on.
pub(crate) fn start(config: &ProducerConfig, instance: &ClientInstance) -> Option<TraceDispatcher> {
    config.enable_trace.then(|| {
        TraceDispatcher::start(
            instance.clone(),
            &config.group,
            config.trace_topic.as_deref(),
        )
    })
}

/// When the send started (ms), only when trace is on.
pub(crate) fn started(backend: &Backend) -> Option<i64> {
    match backend {
        Backend::Remoting(s) if s.trace.is_some() => Some(now_ms()),
        _ => None,
    }
}

/// Appends the `Pub` record of `msg` when trace is on and the broker
/// answered (Java records no `Pub` for a send that got no answer, nor when
/// the broker's `TRACE_ON` is false).
pub(crate) fn on_sent(
    backend: &Backend,
    started: Option<i64>,
    msg: &Message,
    outcome: &Outcome<SendResult>,
) {
    let (Some(started), Backend::Remoting(sender)) = (started, backend) else {
        return;
    };
    let (Some(trace), Ok(result)) = (&sender.trace, &outcome.result) else {
        return;
    };
    if !result.trace_on || msg.topic == trace.topic() {
        return;
    }
    let cost = now_ms().saturating_sub(started);
    let ids = Ids {
        msg_id: &result.msg_id,
        offset_msg_id: &result.offset_msg_id,
    };
    trace.append(pub_record(sender, started, cost, msg, ids, result));
}

/// Appends one `Pub` record per message of a batch sent in one request
/// (`msgs` stamped, in the batch's order) when trace is on and the broker
/// answered. `outcome` is the batch's answer: its ids joined with `,`.
pub(crate) fn on_batch_sent(
    backend: &Backend,
    started: Option<i64>,
    msgs: &[Message],
    outcome: &Outcome<SendResult>,
) {
    let (Some(started), Backend::Remoting(sender)) = (started, backend) else {
        return;
    };
    let (Some(trace), Ok(result)) = (&sender.trace, &outcome.result) else {
        return;
    };
    if !result.trace_on || msgs.first().is_none_or(|m| m.topic == trace.topic()) {
        return;
    }
    let cost = now_ms().saturating_sub(started);
    for (msg, ids) in msgs.iter().zip(batch_ids(msgs, result)) {
        trace.append(pub_record(sender, started, cost, msg, ids, result));
    }
}

/// The ids of one traced message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ids<'a> {
    msg_id: &'a str,
    offset_msg_id: &'a str,
}

/// Each message's ids in the answer to a batch: its `UNIQ_KEY` (else its
/// place in the joined ids), and its place in the joined offset ids when
/// the broker gave one per message (else the whole).
fn batch_ids<'a>(msgs: &'a [Message], result: &'a SendResult) -> Vec<Ids<'a>> {
    let ids: Vec<&str> = result.msg_id.split(',').collect();
    let offset_ids: Vec<&str> = result.offset_msg_id.split(',').collect();
    msgs.iter()
        .enumerate()
        .map(|(i, msg)| Ids {
            msg_id: msg
                .unique_key()
                .or_else(|| ids.get(i).copied())
                .unwrap_or(NULL),
            offset_msg_id: if offset_ids.len() == msgs.len() {
                offset_ids.get(i).copied().unwrap_or(NULL)
            } else {
                result.offset_msg_id.as_str()
            },
        })
        .collect()
}

fn pub_record(
    sender: &Sender,
    started: i64,
    cost: i64,
    msg: &Message,
    ids: Ids<'_>,
    result: &SendResult,
) -> TraceRecord {
    let keys: Vec<&str> = msg.keys().collect();
    let msg_type = if msg.property(property::TRAN_MSG) == Some("true") {
        msg_type::TRANS_HALF
    } else if msg.property(property::DELAY).is_some() || msg.is_timer() {
        msg_type::DELAY
    } else {
        msg_type::NORMAL
    };
    let store_host = sender
        .instance
        .find_broker_addr_in_publish(&result.message_queue.broker_name)
        .unwrap_or_else(|| NULL.to_owned());
    TraceRecord::Pub(PubRecord {
        timestamp: started,
        region_id: result.region_id.clone(),
        // Trace records name the group and topic out of the namespace (Java
        // `SendMessageTraceHookImpl`).
        group: sender.config.namespace.unwrap(&sender.config.group),
        topic: sender.config.namespace.unwrap(&msg.topic),
        msg_id: ids.msg_id.to_owned(),
        tags: msg.tags().unwrap_or(NULL).to_owned(),
        keys: if keys.is_empty() {
            NULL.to_owned()
        } else {
            keys.join(" ")
        },
        store_host,
        body_length: i32::try_from(msg.body.len()).unwrap_or(i32::MAX),
        cost_time: cost,
        msg_type,
        offset_msg_id: ids.offset_msg_id.to_owned(),
        success: result.status == SendStatus::SendOk,
    })
}

/// Flushes and stops the dispatcher (producer shutdown).
pub(crate) async fn shutdown(backend: &Backend) {
    if let Backend::Remoting(Sender {
        trace: Some(trace), ..
    }) = backend
    {
        trace.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::MessageQueue;

    fn answer(msg_id: &str, offset_msg_id: &str) -> SendResult {
        SendResult {
            status: SendStatus::SendOk,
            msg_id: msg_id.into(),
            offset_msg_id: offset_msg_id.into(),
            message_queue: MessageQueue::new("t", "b", 0),
            queue_offset: 0,
            transaction_id: None,
            region_id: "DefaultRegion".into(),
            trace_on: true,
            recall_handle: None,
        }
    }

    fn ids<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<Ids<'a>> {
        pairs
            .iter()
            .map(|&(msg_id, offset_msg_id)| Ids {
                msg_id,
                offset_msg_id,
            })
            .collect()
    }

    #[test]
    fn a_batch_answer_gives_each_message_its_ids() {
        let stamped = Message::new("t", "a").with_property(property::UNIQ_KEY, "A");
        let msgs = [stamped, Message::new("t", "b")];
        let r = answer("A,B", "X,Y");
        assert_eq!(batch_ids(&msgs, &r), ids(&[("A", "X"), ("B", "Y")]));
        // One offset id for the whole batch: every message carries it.
        let r = answer("A,B", "X");
        assert_eq!(batch_ids(&msgs, &r), ids(&[("A", "X"), ("B", "X")]));
    }
}
