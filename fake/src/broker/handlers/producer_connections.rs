//! GET_PRODUCER_CONNECTION_LIST (204) (Java `AdminBrokerProcessor`): the
//! connections of a producer group.

use std::fmt::Write;
use std::sync::Arc;

use rmq_protocol::{RemotingCommand, ResponseCode};

use crate::broker::BrokerShared;
use crate::net::{Incoming, response};

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let Some(group) = incoming.cmd.ext_field("producerGroup") else {
        return response(
            ResponseCode::SYSTEM_ERROR,
            "the custom field <producerGroup> is null".to_owned(),
        );
    };
    let st = b.state();
    let Some(channels) = st.clients.producers.get(group).filter(|c| !c.is_empty()) else {
        return response(
            ResponseCode::SYSTEM_ERROR,
            "the producer group not exist".to_owned(),
        );
    };
    let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    let mut json = String::from("{\"connectionSet\":[");
    for (i, c) in channels.values().enumerate() {
        if i > 0 {
            json.push(',');
        }
        let _ = write!(
            json,
            "{{\"clientAddr\":{},\"clientId\":{},\"language\":{},\"version\":{}}}",
            q(&c.conn.peer.to_string()),
            q(&c.client_id),
            q(c.language.name()),
            c.version
        );
    }
    json.push_str("]}");
    response(ResponseCode::SUCCESS, None).with_body(json.into_bytes())
}
