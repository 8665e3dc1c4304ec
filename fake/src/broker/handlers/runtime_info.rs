//! GET_BROKER_RUNTIME_INFO (28) (Java `AdminBrokerProcessor`): a few of the
//! broker's runtime keys, enough for tools that read its version.

use std::fmt::Write;
use std::sync::Arc;

use rmq_protocol::{RemotingCommand, ResponseCode};

use crate::broker::BrokerShared;
use crate::net::{Incoming, response};

pub(super) fn handle(b: &Arc<BrokerShared>, _incoming: &Incoming) -> RemotingCommand {
    let flavor = b.cfg.flavor;
    let mut table = String::from("{\"table\":{");
    let _ = write!(
        table,
        "\"brokerVersion\":\"{}\",\"brokerVersionDesc\":\"{}\",\"bootTimestamp\":\"0\",\"msgPutTotalTodayNow\":\"0\"",
        flavor.version_ordinal(),
        flavor.version_desc()
    );
    table.push_str("}}");
    response(ResponseCode::SUCCESS, None).with_body(table.into_bytes())
}
