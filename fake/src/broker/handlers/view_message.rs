//! VIEW_MESSAGE_BY_ID (33) (Java `QueryMessageProcessor`): the stored record
//! at a commit-log offset (from an offset message id).

use std::sync::Arc;

use rmq_protocol::{RemotingCommand, ResponseCode};

use crate::broker::BrokerShared;
use crate::net::{Incoming, response};

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let Some(offset) = incoming
        .cmd
        .ext_field("offset")
        .and_then(|o| o.trim().parse::<i64>().ok())
    else {
        return response(
            ResponseCode::SYSTEM_ERROR,
            "the custom field <offset> is null".to_owned(),
        );
    };
    match b.state().store.by_commit_offset(offset) {
        Some(m) => response(ResponseCode::SUCCESS, None).with_body(m.record.clone()),
        None => response(
            ResponseCode::SYSTEM_ERROR,
            format!("can not find message by the offset, {offset}"),
        ),
    }
}
