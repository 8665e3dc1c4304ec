//! The broker's request handlers: one per request code (or family of codes
//! the Java broker serves with one processor), each in its own file.
//!
//! | code | file | Java |
//! |---|---|---|
//! | SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) | `send.rs` | `SendMessageProcessor` |
//! | PULL_MESSAGE (11), LITE_PULL_MESSAGE (361, 5.x) | `pull.rs` | `PullMessageProcessor`, `DefaultPullMessageResultHandler` |
//! | QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15) | `consumer_offset.rs` | `ConsumerManageProcessor` |
//! | UPDATE_AND_CREATE_TOPIC (17) | `create_topic.rs` | `AdminBrokerProcessor` |
//! | GET_BROKER_RUNTIME_INFO (28) | `runtime_info.rs` | `AdminBrokerProcessor` |
//! | SEARCH_OFFSET_BY_TIMESTAMP (29), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) | `queue_offset.rs` | `AdminBrokerProcessor` |
//! | VIEW_MESSAGE_BY_ID (33) | `view_message.rs` | `QueryMessageProcessor` |
//! | HEART_BEAT (34) | `heartbeat.rs` | `ClientManageProcessor` |
//! | UNREGISTER_CLIENT (35) | `unregister.rs` | `ClientManageProcessor` |
//! | CONSUMER_SEND_MSG_BACK (36) | `send_back.rs` | `AbstractSendMessageProcessor.consumerSendMsgBack` |
//! | GET_CONSUMER_LIST_BY_GROUP (38) | `consumer_list.rs` | `ConsumerManageProcessor` |
//! | LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42) | `lock.rs` | `AdminBrokerProcessor`, `RebalanceLockManager` |
//! | CHECK_CLIENT_CONFIG (46) | `check_client_config.rs` | `ClientManageProcessor` |
//! | GET_PRODUCER_CONNECTION_LIST (204) | `producer_connections.rs` | `AdminBrokerProcessor` |
//!
//! Any other code is answered REQUEST_CODE_NOT_SUPPORTED, as a broker
//! without a processor for it does. New request families (pop / ack,
//! END_TRANSACTION with check-backs) are a new file and one line in
//! [`dispatch`].

// A refusal is the answer itself (a `RemotingCommand`), built once per
// refused request: boxing it would only add an allocation.
#![allow(clippy::result_large_err)]

mod check_client_config;
mod consumer_list;
mod consumer_offset;
mod create_topic;
mod heartbeat;
mod lock;
mod producer_connections;
mod pull;
mod queue_offset;
mod runtime_info;
mod send;
mod send_back;
mod unregister;
mod view_message;

use std::sync::Arc;

use rmq_protocol::header::CommandHeader;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::BrokerShared;
use crate::namesrv::not_supported;
use crate::net::{Handled, Incoming, response};

/// GET_BROKER_RUNTIME_INFO.
const GET_BROKER_RUNTIME_INFO: RequestCode = RequestCode(28);
/// GET_PRODUCER_CONNECTION_LIST.
const GET_PRODUCER_CONNECTION_LIST: RequestCode = RequestCode(204);

/// A plain handler: request in, answer out.
type Plain = fn(&Arc<BrokerShared>, &Incoming) -> RemotingCommand;

/// Routes a request to its handler.
pub(super) fn dispatch(b: &Arc<BrokerShared>, incoming: Incoming) -> Option<Handled> {
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

/// Decodes the request header, or the SYSTEM_ERROR answer the Java broker
/// gives for a missing or malformed field.
pub(super) fn header<H: CommandHeader>(cmd: &RemotingCommand) -> Result<H, RemotingCommand> {
    H::read_from(&cmd.ext_fields).map_err(|e| {
        let remark = match e {
            rmq_protocol::Error::MissingField { field } => {
                format!("the custom field <{field}> is null")
            }
            other => other.to_string(),
        };
        response(ResponseCode::SYSTEM_ERROR, remark)
    })
}

/// A SUCCESS answer without header or body.
pub(super) fn ok() -> RemotingCommand {
    response(ResponseCode::SUCCESS, None)
}
