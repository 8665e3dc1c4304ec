//! What every handler answers with: header decoding (and its refusal) and
//! the plain SUCCESS answer.

use rmq_protocol::header::CommandHeader;
use rmq_protocol::{RemotingCommand, ResponseCode};

use crate::config::BrokerFlavor;
use crate::net::response;

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

/// The code answering a queue id the topic does not have: INVALID_PARAMETER
/// on 5.x, SYSTEM_ERROR on 4.9.x.
pub(super) fn illegal_queue_code(flavor: BrokerFlavor) -> ResponseCode {
    match flavor {
        BrokerFlavor::V5 => ResponseCode::INVALID_PARAMETER,
        BrokerFlavor::V4_9 => ResponseCode::SYSTEM_ERROR,
    }
}
