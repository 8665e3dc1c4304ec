//! The settle calls besides the ack: a longer invisible time
//! (CHANGE_MESSAGE_INVISIBLETIME, [`change_invisible`]) and the move of a
//! message redelivered too often to `%DLQ%<group>`
//! (CONSUMER_SEND_MSG_BACK with delay level -1, then the ack: [`to_dlq`]),
//! and the delay of a message to consume again ([`retry_delay`]).

use std::time::Duration;

use rmq_protocol::MessageExt;
use rmq_protocol::header::{ChangeInvisibleTimeRequestHeader, ConsumerSendMsgBackRequestHeader};
use rmq_protocol::message::property;
use rmq_protocol::pop::ExtraInfo;
use tracing::{info, warn};

use super::ack::{ack_all, addr_of};
use super::error::PopCallError;
use super::handle::PopHandle;
use super::request::millis;
use super::wire::PopWire;

/// The broker's default delay levels (`messageDelayLevel`): the invisible
/// time a message to consume again gets, by its next delay level.
pub const DELAY_LEVELS: [Duration; 18] = [
    Duration::from_secs(1),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(30),
    Duration::from_secs(60),
    Duration::from_secs(120),
    Duration::from_secs(180),
    Duration::from_secs(240),
    Duration::from_secs(300),
    Duration::from_secs(360),
    Duration::from_secs(420),
    Duration::from_secs(480),
    Duration::from_secs(540),
    Duration::from_secs(600),
    Duration::from_secs(1200),
    Duration::from_secs(1800),
    Duration::from_secs(3600),
    Duration::from_secs(7200),
];

/// How long a message to consume again stays hidden: the delay of `level`
/// (1 to 18), or of 3 + its reconsume times when `level` is 0, as the
/// broker picks for a send-back (Java `ConsumeMessagePopConcurrentlyService`).
pub fn retry_delay(level: i32, reconsume_times: i32) -> Duration {
    let level = if level > 0 {
        level
    } else {
        reconsume_times.saturating_add(3)
    };
    let index = usize::try_from(level.clamp(1, 18) - 1).unwrap_or(0);
    DELAY_LEVELS
        .get(index)
        .copied()
        .unwrap_or(Duration::from_secs(10))
}

/// Hides the message of `h` for `invisible` from now; answers its new
/// handle (the new checkpoint covers this message alone, Java
/// `MQClientAPIImpl.changeInvisibleTimeAsync`).
///
/// # Errors
///
/// [`PopCallError`]: the message then comes back after its current
/// invisible time.
pub async fn change_invisible<W: PopWire>(
    wire: &W,
    group: &str,
    h: &PopHandle,
    invisible: Duration,
) -> Result<PopHandle, PopCallError> {
    let addr = addr_of(wire, h).await?;
    let ck = &h.ck;
    let header = ChangeInvisibleTimeRequestHeader {
        consumer_group: group.to_owned(),
        topic: ck.real_topic(&h.topic, group),
        queue_id: ck.queue_id,
        extra_info: ck.to_string(),
        offset: ck.queue_offset,
        invisible_time: millis(invisible),
        broker_name: Some(ck.broker_name.clone()),
    };
    let answer = wire
        .change_invisible(&addr, header)
        .await
        .map_err(|error| PopCallError::Call { addr, error })?;
    Ok(PopHandle {
        topic: h.topic.clone(),
        ck: ExtraInfo {
            ck_queue_offset: ck.queue_offset,
            pop_time: answer.pop_time,
            invisible_time: answer.invisible_time,
            revive_qid: answer.revive_qid,
            ..ck.clone()
        },
    })
}

/// The CONSUMER_SEND_MSG_BACK header that moves `msg` of `broker_name`
/// straight to `%DLQ%<group>` (delay level -1); `origin_topic` is the
/// popped topic as the broker names it (the message's own topic may have
/// left a namespace).
pub fn dlq_header(
    group: &str,
    max_reconsume_times: i32,
    msg: &MessageExt,
    origin_topic: &str,
    broker_name: &str,
) -> ConsumerSendMsgBackRequestHeader {
    ConsumerSendMsgBackRequestHeader {
        offset: msg.commit_log_offset,
        group: group.to_owned(),
        delay_level: -1,
        origin_msg_id: Some(
            msg.property(property::ORIGIN_MESSAGE_ID)
                .unwrap_or(&msg.msg_id)
                .to_owned(),
        ),
        origin_topic: Some(origin_topic.to_owned()),
        unit_mode: Some(false),
        max_reconsume_times: Some(max_reconsume_times),
        broker_name: Some(broker_name.to_owned()),
    }
}

/// Moves a popped message to `%DLQ%<group>`, then acks it (what the 5.x
/// proxy does). Logged either way; `false` when the message was not moved
/// (it then comes back after its invisible time).
pub async fn to_dlq<W: PopWire>(
    wire: &W,
    group: &str,
    max_reconsume_times: i32,
    msg: &MessageExt,
    h: &PopHandle,
) -> bool {
    let moved = match addr_of(wire, h).await {
        Ok(addr) => {
            let header = dlq_header(group, max_reconsume_times, msg, &h.topic, &h.ck.broker_name);
            wire.send_back(&addr, header)
                .await
                .map_err(|error| PopCallError::Call { addr, error })
        }
        Err(e) => Err(e),
    };
    if let Err(e) = moved {
        warn!(msg_id = %msg.msg_id, error = %e, "moving a message to the DLQ failed; it comes back after its invisible time");
        return false;
    }
    info!(group, msg_id = %msg.msg_id, reconsume_times = msg.reconsume_times, "message moved to the DLQ");
    for failed in ack_all(wire, group, &[h]).await {
        warn!(msg_id = %msg.msg_id, error = %failed.error, "ack after the move to the DLQ failed");
    }
    true
}
