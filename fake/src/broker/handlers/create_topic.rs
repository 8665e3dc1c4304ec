//! UPDATE_AND_CREATE_TOPIC (17) (Java `AdminBrokerProcessor`): creates or
//! updates a topic on this broker and routes it.

use std::sync::Arc;

use rmq_protocol::header::CreateTopicRequestHeader;
use rmq_protocol::{RemotingCommand, ResponseCode};

use super::{header, ok};
use crate::broker::BrokerShared;
use crate::broker::topics::{AUTO_CREATE_TOPIC, SCHEDULE_TOPIC, TopicConfig, validate_topic};
use crate::net::{Incoming, response};

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let h: CreateTopicRequestHeader = match header(&incoming.cmd) {
        Ok(h) => h,
        Err(answer) => return answer,
    };
    if let Err(remark) = validate_topic(&h.topic) {
        return response(ResponseCode::SYSTEM_ERROR, remark);
    }
    if h.topic == AUTO_CREATE_TOPIC || h.topic == SCHEDULE_TOPIC {
        return response(
            ResponseCode::SYSTEM_ERROR,
            format!("The topic[{}] is conflict with system topic.", h.topic),
        );
    }
    let config = TopicConfig {
        read_queue_nums: h.read_queue_nums,
        write_queue_nums: h.write_queue_nums,
        perm: h.perm,
        topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
        order: h.order,
    };
    let mut st = b.state();
    b.put_topic(&mut st, &h.topic, config);
    ok()
}
