//! QUERY_CONSUMER_OFFSET (14) and UPDATE_CONSUMER_OFFSET (15) (Java
//! `ConsumerManageProcessor`).
//!
//! A group without a stored offset gets 0 when the queue's first message is
//! still there (5.x; 4.9.x also for an empty queue), else QUERY_NOT_FOUND
//! (22). 5.x refuses updates for unknown groups (26) and topics (17); 4.9.x
//! stores them.

use std::sync::Arc;

use rmq_protocol::header::{
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::{RemotingCommand, ResponseCode};

use super::{header, ok};
use crate::broker::BrokerShared;
use crate::config::BrokerFlavor;
use crate::net::{Incoming, response, response_with};

pub(super) fn query(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let h: QueryConsumerOffsetRequestHeader = match header(&incoming.cmd) {
        Ok(h) => h,
        Err(answer) => return answer,
    };
    let st = b.state();
    let key = (h.consumer_group.clone(), h.topic.clone(), h.queue_id);
    if let Some(offset) = st.offsets.get(&key).copied().filter(|o| *o >= 0) {
        return response_with(ResponseCode::SUCCESS, &OffsetResponseHeader { offset });
    }
    let min = st.store.min_offset(&h.topic, h.queue_id);
    let zero = match b.cfg.flavor {
        BrokerFlavor::V5 => {
            if h.set_zero_if_not_found == Some(false) {
                return response(
                    ResponseCode::QUERY_NOT_FOUND,
                    "Not found, do not set to zero, maybe this group boot first".to_owned(),
                );
            }
            // checkInMemByConsumeOffset(0): the first message must exist.
            min <= 0 && st.store.message_at(&h.topic, h.queue_id, 0).is_some()
        }
        // !checkInDiskByConsumeOffset(0): true in memory and for an empty queue.
        BrokerFlavor::V4_9 => min <= 0,
    };
    if zero {
        response_with(ResponseCode::SUCCESS, &OffsetResponseHeader { offset: 0 })
    } else {
        response(
            ResponseCode::QUERY_NOT_FOUND,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first".to_owned(),
        )
    }
}

pub(super) fn update(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let h: UpdateConsumerOffsetRequestHeader = match header(&incoming.cmd) {
        Ok(h) => h,
        Err(answer) => return answer,
    };
    let mut st = b.state();
    if b.cfg.flavor.is_v5() {
        if !st.groups.contains_key(&h.consumer_group) {
            return response(
                ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("Group {} not exist!", h.consumer_group),
            );
        }
        if !st.topics.contains(&h.topic) {
            return response(
                ResponseCode::TOPIC_NOT_EXIST,
                format!("Topic {} not exist!", h.topic),
            );
        }
    }
    b.commit_offset(
        &mut st,
        &h.consumer_group,
        &h.topic,
        h.queue_id,
        h.commit_offset,
    );
    ok()
}
