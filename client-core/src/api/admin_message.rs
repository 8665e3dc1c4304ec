//! Message lookups: VIEW_MESSAGE_BY_ID (by commit-log offset) and
//! QUERY_MESSAGE (by key or unique key).

use std::time::Duration;

use rmq_protocol::header::{
    QueryMessageRequestHeader, UNIQUE_KEY_QUERY_FLAG, ViewMessageRequestHeader,
};
use rmq_protocol::message::{decode_message, decode_messages};
use rmq_protocol::{MessageExt, RemotingCommand, RequestCode, ResponseCode};

use crate::error::{Error, Result};
use crate::instance::ClientInstance;

impl ClientInstance {
    /// The message stored at `commit_log_offset` on the broker at `addr`
    /// (VIEW_MESSAGE_BY_ID; both come from an offset message id, see
    /// [`parse_offset_msg_id`](rmq_protocol::message::parse_offset_msg_id)).
    /// `topic` lets 5.x brokers check the message's topic. Timeout: the
    /// config's request timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] (SYSTEM_ERROR "can not find message by the
    /// offset") when nothing is stored there, [`Error::Remoting`] when the
    /// call failed, [`Error::Protocol`] when the stored bytes do not decode.
    pub async fn view_message(
        &self,
        addr: &str,
        commit_log_offset: i64,
        topic: Option<&str>,
    ) -> Result<MessageExt> {
        let header = ViewMessageRequestHeader {
            offset: commit_log_offset,
            topic: topic.map(str::to_owned),
        };
        let request = RemotingCommand::request(RequestCode::VIEW_MESSAGE_BY_ID, &header);
        let response = self.invoke_ok(addr, request).await?;
        Ok(decode_message(&response.body)?)
    }

    /// The messages the broker at `addr` has indexed under `header.key`
    /// (QUERY_MESSAGE): a `KEYS` entry, or with `unique_key` a `UNIQ_KEY`
    /// (the message id the producer returned). The index is a hash index:
    /// callers filter the answer on the real key, as the Java client does.
    /// Empty when nothing matched (QUERY_NOT_FOUND). Timeout: three times
    /// the config's request timeout (Java).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for other refusals, [`Error::Remoting`] when the
    /// call failed, [`Error::Protocol`] when the stored bytes do not decode.
    pub async fn query_message(
        &self,
        addr: &str,
        header: QueryMessageRequestHeader,
        unique_key: bool,
    ) -> Result<Vec<MessageExt>> {
        let request = RemotingCommand::request(RequestCode::QUERY_MESSAGE, &header)
            .with_ext_field(UNIQUE_KEY_QUERY_FLAG, unique_key.to_string());
        let timeout = self
            .inner
            .config
            .request_timeout()
            .saturating_mul(3)
            .max(Duration::from_millis(1));
        let response = self.inner.remoting.invoke(addr, request, timeout).await?;
        match response.response_code() {
            ResponseCode::SUCCESS => Ok(decode_messages(&response.body)?),
            ResponseCode::QUERY_NOT_FOUND => Ok(Vec::new()),
            _ => Err(Error::broker(addr, RequestCode::QUERY_MESSAGE, &response)),
        }
    }
}
