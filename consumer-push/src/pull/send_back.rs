//! CONSUMER_SEND_MSG_BACK: a message the listener did not consume goes back
//! to the broker, which redelivers it through `%RETRY%<group>` (or moves it
//! to `%DLQ%<group>`). Used by both consume services.

use rmq_protocol::header::ConsumerSendMsgBackRequestHeader;
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::{Instrument, debug, warn};

use crate::inner::Inner;
use crate::telemetry::{self, QueueMetrics};

/// CONSUMER_SEND_MSG_BACK to the master of the queue's broker (Java falls
/// back to the message's store host when the master is unknown); `true`
/// when the broker took the message back.
pub(crate) async fn send_back(
    inner: &Inner,
    msg: &MessageExt,
    delay_level: i32,
    mq: &MessageQueue,
    metrics: &QueueMetrics,
) -> bool {
    let span = telemetry::send_back_span(inner.core.group(), mq, msg, delay_level);
    let ok = send_back_call(inner, msg, delay_level, mq)
        .instrument(span.clone())
        .await;
    telemetry::sent_back(&span, ok);
    // The broker moves it to the DLQ (Java `SendMessageProcessor`
    // `asyncConsumerSendMsgBack`): delay level < 0 or past the max times.
    let max = inner.config.effective_max_reconsume_times();
    metrics.sent_back(ok, delay_level < 0 || msg.reconsume_times >= max);
    ok
}

async fn send_back_call(
    inner: &Inner,
    msg: &MessageExt,
    delay_level: i32,
    mq: &MessageQueue,
) -> bool {
    let instance = inner.core.instance();
    let addr = match instance.master_addr(mq).await {
        Ok(addr) => addr,
        Err(e) => {
            debug!(queue = %mq, error = %rmq_protocol::ErrorChain(&e), "no master address for the send-back; using the store host");
            msg.store_host.to_string()
        }
    };
    let mut header = send_back_header(
        msg,
        inner.core.group(),
        delay_level,
        inner.config.effective_max_reconsume_times(),
        &mq.broker_name,
    );
    // The message's topic left the namespace for the listener; the broker
    // names it as stored (Java wraps it again before the send-back).
    let ns = inner.core.namespace();
    if !ns.is_none() {
        header.origin_topic = header.origin_topic.map(|t| ns.wrap(&t));
    }
    match instance.consumer_send_back(&addr, header).await {
        Ok(()) => {
            debug!(queue = %mq, offset = msg.queue_offset, reconsume_times = msg.reconsume_times, "sent back");
            true
        }
        Err(e) => {
            warn!(
                queue = %mq, offset = msg.queue_offset, msg_id = %msg.msg_id, error = %rmq_protocol::ErrorChain(&e),
                "send-back failed; the message stays and is consumed again locally"
            );
            false
        }
    }
}

/// The CONSUMER_SEND_MSG_BACK header for a failed message (Java
/// `MQClientAPIImpl.consumerSendMessageBack`): the commit-log offset, the
/// context's delay level, the message id as the application sees it, the
/// (restored) original topic, the resolved max reconsume times and the
/// broker name.
pub(crate) fn send_back_header(
    msg: &MessageExt,
    group: &str,
    delay_level: i32,
    max_reconsume_times: i32,
    broker_name: &str,
) -> ConsumerSendMsgBackRequestHeader {
    ConsumerSendMsgBackRequestHeader {
        offset: msg.commit_log_offset,
        group: group.to_owned(),
        delay_level,
        origin_msg_id: Some(msg.msg_id.clone()),
        origin_topic: Some(msg.topic.clone()),
        unit_mode: Some(false),
        max_reconsume_times: Some(max_reconsume_times),
        broker_name: Some(broker_name.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields() {
        let mut m = MessageExt {
            queue_offset: 7,
            commit_log_offset: 4242,
            msg_id: "UNIQ".into(),
            ..MessageExt::default()
        };
        m.message.topic = "orders".into();
        let h = send_back_header(&m, "G", 0, 16, "broker-a");
        assert_eq!(h.offset, 4242);
        assert_eq!(h.group, "G");
        assert_eq!(h.delay_level, 0);
        assert_eq!(h.origin_msg_id.as_deref(), Some("UNIQ"));
        assert_eq!(h.origin_topic.as_deref(), Some("orders"));
        assert_eq!(h.unit_mode, Some(false));
        assert_eq!(h.max_reconsume_times, Some(16));
        assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
    }
}
