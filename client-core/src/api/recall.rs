//! RECALL_MESSAGE (370, RocketMQ 5.3.2+): recall a timer message before its
//! delivery time (Java `MQClientAPIImpl.recallMessage`).

use std::time::Duration;

use rmq_protocol::header::{RecallMessageRequestHeader, RecallMessageResponseHeader};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::error::Result;
use crate::instance::{ClientInstance, Scope};

impl ClientInstance {
    /// Asks the broker at `addr` to recall the timer message of
    /// `header.recall_handle` (RECALL_MESSAGE): the broker writes a recall
    /// record, and its timer never delivers the message. Answers the
    /// message's id (its `UNIQ_KEY`; empty when the broker named none).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`](crate::Error::Broker) for a refusal, e.g.
    /// NO_PERMISSION `recall failed, operation is forbidden` (the broker's
    /// `recallMessageEnable` is off), ILLEGAL_OPERATION `recall handle is
    /// invalid`, `recall failed, topic not match`, `recall failed,
    /// timestamp invalid` (the delivery time passed: delivered already),
    /// TOPIC_NOT_EXIST, REQUEST_CODE_NOT_SUPPORTED (a broker older than
    /// 5.3.2); [`Error::Remoting`](crate::Error::Remoting) when the call
    /// failed.
    pub async fn recall_message(
        &self,
        addr: &str,
        header: &RecallMessageRequestHeader,
        timeout: Duration,
    ) -> Result<String> {
        let request = RemotingCommand::request(RequestCode::RECALL_MESSAGE, header);
        let scope = Scope::of(&header.topic, &header.producer_group);
        let response = self.inner.call_ok(addr, request, timeout, scope).await?;
        let answer: RecallMessageResponseHeader = response.decode_header()?;
        Ok(answer.msg_id.unwrap_or_default())
    }
}
