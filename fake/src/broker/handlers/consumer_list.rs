//! GET_CONSUMER_LIST_BY_GROUP (38) (Java `ConsumerManageProcessor`): the
//! client ids of the group's live connections here.

use std::sync::Arc;

use rmq_protocol::body::ConsumerListBody;
use rmq_protocol::header::GetConsumerListByGroupRequestHeader;
use rmq_protocol::{RemotingCommand, ResponseCode};

use super::header;
use crate::broker::BrokerShared;
use crate::net::{Incoming, response};

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let h: GetConsumerListByGroupRequestHeader = match header(&incoming.cmd) {
        Ok(h) => h,
        Err(answer) => return answer,
    };
    let ids = b
        .state()
        .clients
        .consumers
        .get(&h.consumer_group)
        .map(|g| g.client_ids())
        .unwrap_or_default();
    if ids.is_empty() {
        return response(
            ResponseCode::SYSTEM_ERROR,
            format!("no consumer for this group, {}", h.consumer_group),
        );
    }
    let body = ConsumerListBody {
        consumer_id_list: ids,
    };
    match body.to_json_bytes() {
        Ok(bytes) => response(ResponseCode::SUCCESS, None).with_body(bytes),
        Err(e) => response(ResponseCode::SYSTEM_ERROR, e.to_string()),
    }
}
