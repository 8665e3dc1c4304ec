//! The dispatch table: which handler serves which request code.

use std::sync::Arc;

use rmq_protocol::{RemotingCommand, RequestCode};

use crate::broker::BrokerShared;
use crate::namesrv::not_supported;
use crate::net::{Handled, Incoming};

use super::{
    check_client_config, consumer_list, consumer_offset, create_topic, heartbeat, lock,
    producer_connections, pull, queue_offset, runtime_info, send, send_back, unregister,
    view_message,
};

/// GET_BROKER_RUNTIME_INFO.
const GET_BROKER_RUNTIME_INFO: RequestCode = RequestCode(28);
/// GET_PRODUCER_CONNECTION_LIST.
const GET_PRODUCER_CONNECTION_LIST: RequestCode = RequestCode(204);

/// A plain handler: request in, answer out.
type Plain = fn(&Arc<BrokerShared>, &Incoming) -> RemotingCommand;

/// Routes a request to its handler.
pub(in crate::broker) fn dispatch(b: &Arc<BrokerShared>, incoming: Incoming) -> Option<Handled> {
    let code = incoming.cmd.request_code();
    let plain: Plain = match code {
        RequestCode::PULL_MESSAGE => return pull::handle(b, incoming),
        RequestCode::LITE_PULL_MESSAGE if b.cfg.flavor.is_v5() => return pull::handle(b, incoming),
        RequestCode::SEND_MESSAGE
        | RequestCode::SEND_MESSAGE_V2
        | RequestCode::SEND_BATCH_MESSAGE => send::handle,
        RequestCode::QUERY_CONSUMER_OFFSET => consumer_offset::query,
        RequestCode::UPDATE_CONSUMER_OFFSET => consumer_offset::update,
        RequestCode::UPDATE_AND_CREATE_TOPIC => create_topic::handle,
        GET_BROKER_RUNTIME_INFO => runtime_info::handle,
        RequestCode::SEARCH_OFFSET_BY_TIMESTAMP => queue_offset::search,
        RequestCode::GET_MAX_OFFSET => queue_offset::max,
        RequestCode::GET_MIN_OFFSET => queue_offset::min,
        RequestCode::VIEW_MESSAGE_BY_ID => view_message::handle,
        RequestCode::HEART_BEAT => heartbeat::handle,
        RequestCode::UNREGISTER_CLIENT => unregister::handle,
        RequestCode::CONSUMER_SEND_MSG_BACK => send_back::handle,
        RequestCode::GET_CONSUMER_LIST_BY_GROUP => consumer_list::handle,
        RequestCode::LOCK_BATCH_MQ => lock::lock,
        RequestCode::UNLOCK_BATCH_MQ => lock::unlock,
        RequestCode::CHECK_CLIENT_CONFIG => check_client_config::handle,
        GET_PRODUCER_CONNECTION_LIST => producer_connections::handle,
        other => {
            let answer = not_supported(other);
            return incoming.reply(answer);
        }
    };
    let answer = plain(b, &incoming);
    incoming.reply(answer)
}
