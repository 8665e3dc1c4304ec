//! The name server's [`Service`]: which request code gets which answer.

use std::sync::Arc;

use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::NameServer;
use crate::net::{ConnShared, Handled, Incoming, Service, response};

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: RequestCode = RequestCode(206);

/// The name server's [`Service`].
#[derive(Debug)]
pub(crate) struct NameServerService(pub(crate) Arc<NameServer>);

impl Service for NameServerService {
    fn handle(&self, incoming: Incoming) -> Option<Handled> {
        let code = incoming.cmd.request_code();
        let answer = match code {
            RequestCode::GET_ROUTEINFO_BY_TOPIC => self.0.get_route(&incoming.cmd),
            RequestCode::GET_BROKER_CLUSTER_INFO => {
                response(ResponseCode::SUCCESS, None).with_body(self.0.cluster_body())
            }
            GET_ALL_TOPIC_LIST_FROM_NAMESERVER => {
                response(ResponseCode::SUCCESS, None).with_body(self.0.topic_list())
            }
            // 4.9.x's name server answers nothing to a code it does not know.
            _ if !self.0.flavor.is_v5() => return None,
            other => not_supported(other),
        };
        incoming.reply(answer)
    }

    fn connection_closed(&self, _conn: &Arc<ConnShared>) {}
}

/// Java's answer to a code without processor.
pub(crate) fn not_supported(code: RequestCode) -> RemotingCommand {
    response(
        ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
        format!(" request type {} not supported", code.0),
    )
}
