//! CHECK_CLIENT_CONFIG (46) (Java `ClientManageProcessor.checkClientConfig`):
//! whether a SQL92 subscription compiles (Java clients ask before they
//! start).

use std::sync::Arc;

use rmq_protocol::body::{ExpressionType, SubscriptionData, lenient_json};
use rmq_protocol::{RemotingCommand, ResponseCode};
use serde::Deserialize;

use super::ok;
use crate::broker::BrokerShared;
use crate::broker::filter::Sql;
use crate::net::{Incoming, response};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct CheckClientRequestBody {
    subscription_data: Option<SubscriptionData>,
}

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: &Incoming) -> RemotingCommand {
    let body: CheckClientRequestBody =
        match lenient_json::decode(&incoming.cmd.body, "CheckClientRequestBody") {
            Ok(body) => body,
            Err(e) => return response(ResponseCode::SYSTEM_ERROR, e.to_string()),
        };
    let Some(sub) = body.subscription_data else {
        return ok();
    };
    if sub.expression_type == ExpressionType::Tag {
        return ok();
    }
    if !b.cfg.property_filter {
        return response(
            ResponseCode::SYSTEM_ERROR,
            format!(
                "The broker does not support consumer to filter message by {}",
                sub.expression_type
            ),
        );
    }
    match Sql::compile(&sub.sub_string) {
        Ok(_) => ok(),
        Err(e) => response(ResponseCode::SUBSCRIPTION_PARSE_FAILED, e.to_string()),
    }
}
