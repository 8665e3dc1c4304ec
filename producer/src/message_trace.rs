//! RocketMQ message trace of sends (Java `SendMessageTraceHookImpl`): a
//! `Pub` record after each answered send, handed to the producer's
//! [`TraceDispatcher`]. Nothing runs when trace is off.

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
    trace.append(pub_record(sender, started, msg, result));
}

fn pub_record(sender: &Sender, started: i64, msg: &Message, result: &SendResult) -> TraceRecord {
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
        msg_id: result.msg_id.clone(),
        tags: msg.tags().unwrap_or(NULL).to_owned(),
        keys: if keys.is_empty() {
            NULL.to_owned()
        } else {
            keys.join(" ")
        },
        store_host,
        body_length: i32::try_from(msg.body.len()).unwrap_or(i32::MAX),
        cost_time: now_ms().saturating_sub(started),
        msg_type,
        offset_msg_id: result.offset_msg_id.clone(),
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
