//! SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE: [`SendResult`].

use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::header::{
    CommandHeader, FieldSource, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use rmq_protocol::message::{find_property, property};
use rmq_protocol::{MessageQueue, RawCommand, RemotingCommand, RequestCode, ResponseCode};

use crate::error::{Error, Result};
use crate::instance::ClientInstance;

/// How a stored message was stored (Java `SendStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SendStatus {
    /// Stored and flushed as configured (SUCCESS).
    SendOk,
    /// Stored; the disk flush timed out (FLUSH_DISK_TIMEOUT).
    FlushDiskTimeout,
    /// Stored; the slave sync timed out (FLUSH_SLAVE_TIMEOUT).
    FlushSlaveTimeout,
    /// Stored; no slave was available (SLAVE_NOT_AVAILABLE).
    SlaveNotAvailable,
}

impl SendStatus {
    /// The status for a response code, `None` unless the code means
    /// "stored" (Java `MQClientAPIImpl.processSendResponse`).
    pub fn from_code(code: ResponseCode) -> Option<SendStatus> {
        match code {
            ResponseCode::SUCCESS => Some(SendStatus::SendOk),
            ResponseCode::FLUSH_DISK_TIMEOUT => Some(SendStatus::FlushDiskTimeout),
            ResponseCode::FLUSH_SLAVE_TIMEOUT => Some(SendStatus::FlushSlaveTimeout),
            ResponseCode::SLAVE_NOT_AVAILABLE => Some(SendStatus::SlaveNotAvailable),
            _ => None,
        }
    }
}

/// The broker's answer to a send (Java `SendResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    /// How the message was stored.
    pub status: SendStatus,
    /// The message id the application sees: the `UNIQ_KEY` property (for a
    /// batch, the messages' ids joined with `,`); empty when none was set.
    pub msg_id: String,
    /// The broker's offset message id (for a batch, joined with `,`).
    pub offset_msg_id: String,
    /// The queue written: the header's topic, `broker_name`, and the
    /// queue id the broker answered.
    pub message_queue: MessageQueue,
    /// Consume-queue offset of the (first) message.
    pub queue_offset: i64,
    /// Transaction id, for transactional sends.
    pub transaction_id: Option<String>,
    /// Region id (`MSG_REGION`, default `DefaultRegion`).
    pub region_id: String,
    /// Whether the broker has tracing on (`TRACE_ON`, default `true`).
    pub trace_on: bool,
    /// The handle that recalls the message before its delivery time
    /// (`Producer::recall`): a 5.3.2+ broker (or proxy) answers one for a
    /// timer message (a delivery time, not a delay level); `None` for other
    /// messages and older brokers.
    pub recall_handle: Option<String>,
}

/// The default region id when the broker sends none (Java
/// `MixAll.DEFAULT_TRACE_REGION_ID`).
const DEFAULT_REGION: &str = "DefaultRegion";

/// Maps a send response to a [`SendResult`].
///
/// `msg_id` is the application message id (`UNIQ_KEY`, joined for a
/// batch); `topic` and `broker_name` name the queue.
///
/// # Errors
///
/// [`Error::Broker`] for a code that does not mean "stored",
/// [`Error::Protocol`] when the response header is malformed.
pub fn send_result_from_response(
    addr: &str,
    request: RequestCode,
    topic: &str,
    broker_name: &str,
    msg_id: String,
    response: &RemotingCommand,
) -> Result<SendResult> {
    let Some(status) = SendStatus::from_code(response.response_code()) else {
        return Err(Error::broker(addr, request, response));
    };
    send_result(status, topic, broker_name, msg_id, &response.ext_fields)
}

/// [`send_result_from_response`] of a response still in its frame: the
/// header is read in place.
fn send_result_from_raw(
    addr: &str,
    request: RequestCode,
    topic: &str,
    broker_name: &str,
    msg_id: String,
    response: RawCommand,
) -> Result<SendResult> {
    let Some(status) = SendStatus::from_code(response.response_code()) else {
        return Err(Error::broker(addr, request, &response.into_command()));
    };
    send_result(status, topic, broker_name, msg_id, &response)
}

/// The result of a stored send whose response header is in `fields`.
fn send_result(
    status: SendStatus,
    topic: &str,
    broker_name: &str,
    msg_id: String,
    fields: &(impl FieldSource + ?Sized),
) -> Result<SendResult> {
    let header = SendMessageResponseHeader::read_from_source(fields)?;
    Ok(SendResult {
        status,
        msg_id,
        offset_msg_id: header.msg_id,
        message_queue: MessageQueue::new(topic, broker_name, header.queue_id),
        queue_offset: header.queue_offset,
        transaction_id: header.transaction_id,
        region_id: header
            .msg_region
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| DEFAULT_REGION.to_owned()),
        trace_on: header.trace_on.unwrap_or(true),
        recall_handle: header.recall_handle.filter(|h| !h.is_empty()),
    })
}

/// The `UNIQ_KEY` in an encoded properties string, or empty.
fn uniq_key(properties: Option<&str>) -> String {
    properties
        .and_then(|p| find_property(p, property::UNIQ_KEY))
        .unwrap_or_default()
        .to_owned()
}

impl ClientInstance {
    /// Sends one message (SEND_MESSAGE_V2) to the broker at `addr` and
    /// waits for its result. `header.properties` should carry the
    /// `UNIQ_KEY` (it becomes [`SendResult::msg_id`]); `body` is the
    /// (possibly compressed) body; `broker_name` names the queue in the
    /// result. `addr` is used as given (see [`ClientConfig::send_addr`]
    /// for the VIP channel).
    ///
    /// [`ClientConfig::send_addr`]: crate::ClientConfig::send_addr
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for a code other than the four "stored" codes,
    /// [`Error::Remoting`] when the call failed (see its `written` flags
    /// for whether the message may have been stored).
    pub async fn send_message(
        &self,
        addr: &str,
        broker_name: &str,
        header: SendMessageRequestHeaderV2,
        body: Bytes,
        timeout: Duration,
    ) -> Result<SendResult> {
        let code = RequestCode::SEND_MESSAGE_V2;
        let msg_id = uniq_key(header.properties.as_deref());
        self.send_and_map(code, addr, broker_name, header, body, msg_id, timeout)
            .await
    }

    /// Sends an encoded batch (SEND_BATCH_MESSAGE, see
    /// [`rmq_protocol::message::encode_batch`]); `msg_ids` are the
    /// messages' `UNIQ_KEY`s, joined with `,` into [`SendResult::msg_id`].
    ///
    /// # Errors
    ///
    /// As [`send_message`](ClientInstance::send_message).
    pub async fn send_batch(
        &self,
        addr: &str,
        broker_name: &str,
        header: SendMessageRequestHeaderV2,
        body: Bytes,
        msg_ids: &[String],
        timeout: Duration,
    ) -> Result<SendResult> {
        let code = RequestCode::SEND_BATCH_MESSAGE;
        let msg_id = msg_ids.join(",");
        self.send_and_map(code, addr, broker_name, header, body, msg_id, timeout)
            .await
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn send_and_map(
        &self,
        code: RequestCode,
        addr: &str,
        broker_name: &str,
        header: SendMessageRequestHeaderV2,
        body: Bytes,
        msg_id: String,
        timeout: Duration,
    ) -> Result<SendResult> {
        let response = self
            .inner
            .invoke_header_raw(addr, code, &header, body, timeout)
            .await?;
        send_result_from_raw(addr, code, &header.topic, broker_name, msg_id, response).map_err(
            |e| {
                self.inner
                    .refusal(e, Some(&header.topic), Some(&header.producer_group))
            },
        )
    }

    /// Sends one message (SEND_MESSAGE_V2) oneway: resolves once the frame
    /// is written; the broker's outcome is never known.
    ///
    /// # Errors
    ///
    /// [`Error::Remoting`] when it could not be written.
    pub async fn send_message_oneway(
        &self,
        addr: &str,
        header: SendMessageRequestHeaderV2,
        body: Bytes,
        timeout: Duration,
    ) -> Result<()> {
        self.send_oneway_as(RequestCode::SEND_MESSAGE_V2, addr, header, body, timeout)
            .await
    }

    /// A send of `code` with `header` and `body`, oneway.
    pub(crate) async fn send_oneway_as(
        &self,
        code: RequestCode,
        addr: &str,
        header: SendMessageRequestHeaderV2,
        body: Bytes,
        timeout: Duration,
    ) -> Result<()> {
        let request = RemotingCommand::request(code, &header).with_body(body);
        self.inner
            .remoting
            .invoke_oneway(addr, request, timeout)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(code: ResponseCode) -> RemotingCommand {
        RemotingCommand::new_response(code, Some("why".into()))
            .with_ext_field("msgId", "0A00000100002A9F0000000000000010")
            .with_ext_field("queueId", "3")
            .with_ext_field("queueOffset", "42")
            .with_ext_field("MSG_REGION", "R1")
            .with_ext_field("TRACE_ON", "false")
    }

    #[test]
    fn stored_codes_map_to_statuses() {
        for (code, status) in [
            (ResponseCode::SUCCESS, SendStatus::SendOk),
            (
                ResponseCode::FLUSH_DISK_TIMEOUT,
                SendStatus::FlushDiskTimeout,
            ),
            (
                ResponseCode::FLUSH_SLAVE_TIMEOUT,
                SendStatus::FlushSlaveTimeout,
            ),
            (
                ResponseCode::SLAVE_NOT_AVAILABLE,
                SendStatus::SlaveNotAvailable,
            ),
        ] {
            let r = send_result_from_response(
                "a:1",
                RequestCode::SEND_MESSAGE_V2,
                "T",
                "broker-a",
                "U1".into(),
                &response(code),
            )
            .unwrap();
            assert_eq!(r.status, status);
            assert_eq!(r.msg_id, "U1");
            assert_eq!(r.offset_msg_id, "0A00000100002A9F0000000000000010");
            assert_eq!(r.message_queue, MessageQueue::new("T", "broker-a", 3));
            assert_eq!(r.queue_offset, 42);
            assert_eq!(r.region_id, "R1");
            assert!(!r.trace_on);
            assert_eq!(r.transaction_id, None);
        }
    }

    #[test]
    fn other_codes_are_broker_errors() {
        let err = send_result_from_response(
            "a:1",
            RequestCode::SEND_MESSAGE_V2,
            "T",
            "b",
            String::new(),
            &response(ResponseCode::TOPIC_NOT_EXIST),
        )
        .unwrap_err();
        match err {
            Error::Broker {
                addr,
                code,
                remark,
                request,
            } => {
                assert_eq!(addr, "a:1");
                assert_eq!(code, ResponseCode::TOPIC_NOT_EXIST);
                assert_eq!(remark.as_deref(), Some("why"));
                assert_eq!(request, RequestCode::SEND_MESSAGE_V2);
            }
            other => panic!("{other:?}"),
        }
    }

    fn parse_v2(response: &RemotingCommand) -> SendResult {
        send_result_from_response(
            "a",
            RequestCode::SEND_MESSAGE_V2,
            "T",
            "b",
            String::new(),
            response,
        )
        .unwrap()
    }

    #[test]
    fn defaults_and_bad_header() {
        let ok = RemotingCommand::new_response(ResponseCode::SUCCESS, None)
            .with_ext_field("msgId", "X")
            .with_ext_field("queueId", "0")
            .with_ext_field("queueOffset", "0")
            .with_ext_field("transactionId", "TX");
        let r = parse_v2(&ok);
        assert_eq!(r.region_id, "DefaultRegion");
        assert!(r.trace_on);
        assert_eq!(r.transaction_id.as_deref(), Some("TX"));
        assert_eq!(r.recall_handle, None);
        let timer = ok.clone().with_ext_field("recallHandle", "djEgVCBi");
        let r = parse_v2(&timer);
        assert_eq!(r.recall_handle.as_deref(), Some("djEgVCBi"));

        let bad = RemotingCommand::new_response(ResponseCode::SUCCESS, None);
        let err = send_result_from_response(
            "a",
            RequestCode::SEND_MESSAGE_V2,
            "T",
            "b",
            String::new(),
            &bad,
        )
        .unwrap_err();
        assert!(matches!(err, Error::Protocol(_)));
    }

    #[test]
    fn uniq_key_from_properties() {
        assert_eq!(
            uniq_key(Some("TAGS\u{1}a\u{2}UNIQ_KEY\u{1}ABC\u{2}")),
            "ABC"
        );
        assert_eq!(uniq_key(Some("TAGS\u{1}a\u{2}")), "");
        assert_eq!(uniq_key(None), "");
    }
}
