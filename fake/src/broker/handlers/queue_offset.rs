//! SEARCH_OFFSET_BY_TIMESTAMP (29), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31)
//! (Java `AdminBrokerProcessor`). A queue that does not exist reads as
//! empty.

use std::sync::Arc;

use rmq_protocol::header::{
    BoundaryType, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, OffsetResponseHeader,
    SearchOffsetRequestHeader,
};
use rmq_protocol::{RemotingCommand, ResponseCode};

use super::header;
use crate::broker::BrokerShared;
use crate::net::{Incoming, response_with};

fn offset(offset: i64) -> RemotingCommand {
    response_with(ResponseCode::SUCCESS, &OffsetResponseHeader { offset })
}

pub(super) fn max(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    match header::<GetMaxOffsetRequestHeader>(&incoming.cmd) {
        Ok(h) => offset(b.state().store.max_offset(&h.topic, h.queue_id)),
        Err(answer) => answer,
    }
}

pub(super) fn min(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    match header::<GetMinOffsetRequestHeader>(&incoming.cmd) {
        Ok(h) => offset(b.state().store.min_offset(&h.topic, h.queue_id)),
        Err(answer) => answer,
    }
}

pub(super) fn search(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    match header::<SearchOffsetRequestHeader>(&incoming.cmd) {
        Ok(h) => offset(b.state().store.search_offset(
            &h.topic,
            h.queue_id,
            h.timestamp,
            h.boundary_type.unwrap_or(BoundaryType::Lower),
            b.cfg.flavor,
        )),
        Err(answer) => answer,
    }
}
