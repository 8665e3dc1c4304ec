//! SEND_REPLY_MESSAGE_V2 (325): the reply of a request-reply exchange, which
//! the broker pushes to the requester (Java `MQClientAPIImpl.sendMessage`
//! with a reply message).

use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::RequestCode;
use rmq_protocol::header::SendMessageRequestHeaderV2;

use crate::api::send::SendResult;
use crate::error::Result;
use crate::instance::ClientInstance;

impl ClientInstance {
    /// Sends a reply (SEND_REPLY_MESSAGE_V2) to the broker at `addr`: the
    /// broker pushes it to the requester named in its `REPLY_TO_CLIENT`
    /// property (PUSH_REPLY_MESSAGE_TO_CLIENT) and stores it in the reply
    /// topic. Otherwise as [`send_message`](ClientInstance::send_message).
    ///
    /// # Errors
    ///
    /// As [`send_message`](ClientInstance::send_message); SYSTEM_ERROR
    /// with `push reply message fail, channel of <client id> not found.`
    /// when the requester is not connected to that broker (the broker still
    /// stores the reply).
    pub async fn send_reply_message(
        &self,
        addr: &str,
        broker_name: &str,
        header: SendMessageRequestHeaderV2,
        body: Bytes,
        msg_id: String,
        timeout: Duration,
    ) -> Result<SendResult> {
        self.send_and_map(
            RequestCode::SEND_REPLY_MESSAGE_V2,
            addr,
            broker_name,
            header,
            body,
            msg_id,
            timeout,
        )
        .await
    }

    /// [`send_reply_message`](ClientInstance::send_reply_message), oneway:
    /// resolves once the frame is written.
    ///
    /// # Errors
    ///
    /// [`Error::Remoting`](crate::Error::Remoting) when it could not be
    /// written.
    pub async fn send_reply_message_oneway(
        &self,
        addr: &str,
        header: SendMessageRequestHeaderV2,
        body: Bytes,
        timeout: Duration,
    ) -> Result<()> {
        self.send_oneway_as(
            RequestCode::SEND_REPLY_MESSAGE_V2,
            addr,
            header,
            body,
            timeout,
        )
        .await
    }
}
