//! Pop consumption calls (5.x brokers): POP_MESSAGE ([`PopResult`]),
//! ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME,
//! QUERY_ASSIGNMENT and SET_MESSAGE_REQUEST_MODE.
//!
//! A 4.9.x broker answers every one of them with REQUEST_CODE_NOT_SUPPORTED
//! ([`is_pop_unsupported`]).

use std::time::Duration;

use rmq_protocol::body::{
    BatchAckMessageRequestBody, MessageQueueAssignment, QueryAssignmentRequestBody,
    QueryAssignmentResponseBody, SetMessageRequestModeRequestBody,
};
use rmq_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    EmptyHeader, PopMessageRequestHeader, PopMessageResponseHeader,
};
use rmq_protocol::message::decode_messages;
use rmq_protocol::pop::{
    ExtraInfo, POP_CK, RetryFlag, parse_msg_offset_info, parse_order_count_info,
    parse_start_offset_info,
};
use rmq_protocol::{MessageExt, RemotingCommand, RequestCode, ResponseCode};

use crate::error::{Error, Result};
use crate::instance::{ClientInstance, Scope};

/// Timeout of ACK_MESSAGE, BATCH_ACK_MESSAGE and
/// CHANGE_MESSAGE_INVISIBLETIME (Java: 3 s).
pub const ACK_TIMEOUT: Duration = Duration::from_secs(3);
/// Added to a pop's `pollTime` for its call timeout (Java: 10 s).
pub const POP_TIMEOUT_OVERHEAD: Duration = Duration::from_secs(10);

/// What a pop found (Java `PopStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PopStatus {
    /// Messages were popped (SUCCESS).
    Found,
    /// Nothing to pop within the poll time (POLLING_TIMEOUT,
    /// PULL_NOT_FOUND, NO_MESSAGE).
    NoNewMsg,
    /// The broker holds too many polls of this group (POLLING_FULL); ask
    /// again later.
    PollingFull,
}

impl PopStatus {
    /// The status for a response code, `None` for codes that are errors.
    pub fn from_code(code: ResponseCode) -> Option<PopStatus> {
        match code {
            ResponseCode::SUCCESS => Some(PopStatus::Found),
            ResponseCode::POLLING_TIMEOUT
            | ResponseCode::PULL_NOT_FOUND
            | ResponseCode::NO_MESSAGE => Some(PopStatus::NoNewMsg),
            ResponseCode::POLLING_FULL => Some(PopStatus::PollingFull),
            _ => None,
        }
    }
}

/// The broker's answer to a pop (Java `PopResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopResult {
    /// What was found.
    pub status: PopStatus,
    /// When the broker popped the batch (ms since the epoch).
    pub pop_time: i64,
    /// The invisible time granted (ms).
    pub invisible_time: i64,
    /// Messages left to pop.
    pub rest_num: i64,
    /// The popped messages, each with its [`POP_CK`] property (its
    /// [`ExtraInfo`]) and its broker name set. A redelivered message has
    /// its original topic on 5.x brokers (the extra info names the retry
    /// topic); a broker that does not restore it leaves the retry topic.
    pub messages: Vec<MessageExt>,
}

impl PopResult {
    /// Maps a pop response of the broker `broker_name` (Java
    /// `MQClientAPIImpl.processPopResponse`): decodes the messages and gives
    /// each its extra info; for an orderly pop, each message's reconsume
    /// times are its earlier deliveries (the answer's `orderCountInfo`).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for codes other than the [`PopStatus`] ones;
    /// [`Error::Protocol`] when the header, the offset lists or a record is
    /// malformed.
    pub fn from_response(
        addr: &str,
        broker_name: &str,
        response: RemotingCommand,
    ) -> Result<PopResult> {
        let Some(status) = PopStatus::from_code(response.response_code()) else {
            return Err(Error::broker(addr, RequestCode::POP_MESSAGE, &response));
        };
        if status != PopStatus::Found {
            return Ok(PopResult {
                status,
                pop_time: 0,
                invisible_time: 0,
                rest_num: 0,
                messages: Vec::new(),
            });
        }
        let header: PopMessageResponseHeader = response.decode_header()?;
        let starts = parse_start_offset_info(header.start_offset_info.as_deref().unwrap_or(""))?;
        let offsets = parse_msg_offset_info(header.msg_offset_info.as_deref().unwrap_or(""))?;
        // Orderly pops only: how often each message was delivered before.
        let counts = parse_order_count_info(header.order_count_info.as_deref().unwrap_or(""))?;
        let mut messages = decode_messages(&response.body)?;
        for msg in &mut messages {
            // A 5.x broker restores a redelivered message's topic and puts
            // its own POP_CK on it; older ones leave the retry topic.
            let retry = msg
                .property(POP_CK)
                .and_then(|ck| ExtraInfo::parse(ck).ok())
                .map_or_else(|| RetryFlag::of_topic(&msg.topic), |ck| ck.retry);
            let key = (retry, msg.queue_id);
            let Some(&ck_queue_offset) = starts.get(&key) else {
                return Err(rmq_protocol::Error::InvalidField {
                    field: "startOffsetInfo",
                    value: format!("no entry for queue {} of {}", msg.queue_id, msg.topic),
                }
                .into());
            };
            // The broker lists the queue offsets it popped; a message's own
            // offset is one of them unless the topic is static (mapped).
            let queue_offset = match offsets.get(&key) {
                Some(list) if !list.is_empty() && !list.contains(&msg.queue_offset) => {
                    list.first().copied().unwrap_or(msg.queue_offset)
                }
                _ => msg.queue_offset,
            };
            let ck = ExtraInfo {
                ck_queue_offset,
                pop_time: header.pop_time,
                invisible_time: header.invisible_time,
                revive_qid: header.revive_qid,
                retry,
                broker_name: broker_name.to_owned(),
                queue_id: msg.queue_id,
                queue_offset,
            };
            let delivered = counts.of(retry, msg.queue_id, msg.queue_offset);
            if delivered > 0 {
                msg.reconsume_times = delivered;
            }
            msg.broker_name = broker_name.to_owned();
            msg.message.set_property(POP_CK, ck.to_string());
        }
        Ok(PopResult {
            status,
            pop_time: header.pop_time,
            invisible_time: header.invisible_time,
            rest_num: header.rest_num,
            messages,
        })
    }
}

/// The call timeout of a pop: its poll time plus [`POP_TIMEOUT_OVERHEAD`].
pub fn pop_timeout(header: &PopMessageRequestHeader) -> Duration {
    let hold = u64::try_from(header.poll_time).unwrap_or(0);
    Duration::from_millis(hold).saturating_add(POP_TIMEOUT_OVERHEAD)
}

/// Whether `e` is a broker saying it does not know a pop request (a 4.x
/// broker: REQUEST_CODE_NOT_SUPPORTED).
pub fn is_pop_unsupported(e: &Error) -> bool {
    e.response_code() == Some(ResponseCode::REQUEST_CODE_NOT_SUPPORTED)
}

impl ClientInstance {
    /// Pops from the broker `broker_name` at `addr`. `timeout` `None`
    /// means [`pop_timeout`].
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for refusals (REQUEST_CODE_NOT_SUPPORTED from a
    /// 4.x broker, see [`is_pop_unsupported`]; SUBSCRIPTION_PARSE_FAILED,
    /// NO_PERMISSION...), [`Error::Remoting`] when the call failed,
    /// [`Error::Protocol`] for a malformed answer.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the request. Messages the broker popped
    /// for an abandoned request stay hidden until their invisible time
    /// passes, then come back.
    pub async fn pop_message(
        &self,
        addr: &str,
        broker_name: &str,
        header: PopMessageRequestHeader,
        timeout: Option<Duration>,
    ) -> Result<PopResult> {
        let timeout = timeout.unwrap_or_else(|| pop_timeout(&header));
        let request = RemotingCommand::request(RequestCode::POP_MESSAGE, &header);
        let response = self.inner.invoke(addr, request, timeout).await?;
        PopResult::from_response(addr, broker_name, response).map_err(|e| {
            self.inner
                .refusal(e, Some(&header.topic), Some(&header.consumer_group))
        })
    }

    /// Acks one popped message (ACK_MESSAGE). Timeout [`ACK_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] when the broker refuses, [`Error::Remoting`] when
    /// the call failed.
    pub async fn ack_message(&self, addr: &str, header: AckMessageRequestHeader) -> Result<()> {
        let request = RemotingCommand::request(RequestCode::ACK_MESSAGE, &header);
        let scope = Scope::of(&header.topic, &header.consumer_group);
        self.inner
            .call_ok(addr, request, ACK_TIMEOUT, scope)
            .await?;
        Ok(())
    }

    /// Acks many popped messages of one broker in one request
    /// (BATCH_ACK_MESSAGE). Timeout [`ACK_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// As [`ack_message`](ClientInstance::ack_message).
    pub async fn batch_ack_message(
        &self,
        addr: &str,
        body: &BatchAckMessageRequestBody,
    ) -> Result<()> {
        let request = RemotingCommand::request(RequestCode::BATCH_ACK_MESSAGE, &EmptyHeader)
            .with_body(body.to_json_bytes()?);
        let group = body.acks.first().map(|a| a.consumer_group.as_str());
        self.inner
            .call_ok(addr, request, ACK_TIMEOUT, Scope { topic: None, group })
            .await?;
        Ok(())
    }

    /// Hides a popped message for `header.invisible_time` from now
    /// (CHANGE_MESSAGE_INVISIBLETIME); answers its new checkpoint, from
    /// which the caller builds the message's new extra info. Timeout
    /// [`ACK_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// As [`ack_message`](ClientInstance::ack_message);
    /// [`Error::Protocol`] for a malformed answer.
    pub async fn change_invisible_time(
        &self,
        addr: &str,
        header: ChangeInvisibleTimeRequestHeader,
    ) -> Result<ChangeInvisibleTimeResponseHeader> {
        let request = RemotingCommand::request(RequestCode::CHANGE_MESSAGE_INVISIBLETIME, &header);
        let scope = Scope::of(&header.topic, &header.consumer_group);
        let response = self
            .inner
            .call_ok(addr, request, ACK_TIMEOUT, scope)
            .await?;
        Ok(response.decode_header()?)
    }

    /// The queues of `body.topic` the broker at `addr` assigns this member
    /// (QUERY_ASSIGNMENT). Timeout: the config's request timeout.
    ///
    /// # Errors
    ///
    /// As [`ack_message`](ClientInstance::ack_message);
    /// [`Error::Protocol`] for a malformed body.
    pub async fn query_assignment(
        &self,
        addr: &str,
        body: &QueryAssignmentRequestBody,
    ) -> Result<Vec<MessageQueueAssignment>> {
        let request = RemotingCommand::request(RequestCode::QUERY_ASSIGNMENT, &EmptyHeader)
            .with_body(body.to_json_bytes()?);
        let scope = Scope::of(&body.topic, &body.consumer_group);
        let response = self.inner.call_ok_default(addr, request, scope).await?;
        Ok(QueryAssignmentResponseBody::decode(&response.body)?.message_queue_assignments)
    }

    /// Sets whether a group pulls or pops a topic at the broker at `addr`
    /// (SET_MESSAGE_REQUEST_MODE, an admin call). Timeout: the config's
    /// request timeout.
    ///
    /// # Errors
    ///
    /// As [`ack_message`](ClientInstance::ack_message).
    pub async fn set_message_request_mode(
        &self,
        addr: &str,
        body: &SetMessageRequestModeRequestBody,
    ) -> Result<()> {
        let request = RemotingCommand::request(RequestCode::SET_MESSAGE_REQUEST_MODE, &EmptyHeader)
            .with_body(body.to_json_bytes()?);
        let scope = Scope::of(&body.topic, &body.consumer_group);
        self.inner.call_ok_default(addr, request, scope).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::Message;
    use rmq_protocol::message::{MessageVersion, encode_stored_message};

    use super::*;

    fn stored(topic: &str, queue_id: i32, offset: i64) -> Vec<u8> {
        let m = MessageExt {
            message: Message::new(topic, format!("m{offset}")),
            queue_offset: offset,
            queue_id,
            ..MessageExt::default()
        };
        encode_stored_message(&m, MessageVersion::V1, None)
            .unwrap()
            .to_vec()
    }

    #[test]
    fn found_messages_get_their_extra_info() {
        let mut body = stored("T", 1, 5);
        body.extend(stored("T", 1, 6));
        body.extend(stored("%RETRY%G_T", 0, 2));
        let resp = RemotingCommand::new_response(ResponseCode::SUCCESS, None)
            .with_ext_field("popTime", "1000")
            .with_ext_field("invisibleTime", "30000")
            .with_ext_field("reviveQid", "4")
            .with_ext_field("restNum", "7")
            .with_ext_field("startOffsetInfo", "0 1 5;1 0 2")
            .with_ext_field("msgOffsetInfo", "0 1 5,6;1 0 2")
            .with_body(body);
        let r = PopResult::from_response("a", "broker-a", resp).unwrap();
        assert_eq!(r.status, PopStatus::Found);
        assert_eq!(r.rest_num, 7);
        let cks: Vec<&str> = r
            .messages
            .iter()
            .map(|m| m.property(POP_CK).unwrap())
            .collect();
        assert_eq!(
            cks,
            [
                "5 1000 30000 4 0 broker-a 1 5",
                "5 1000 30000 4 0 broker-a 1 6",
                "2 1000 30000 4 1 broker-a 0 2"
            ]
        );
        assert!(r.messages.iter().all(|m| m.broker_name == "broker-a"));
    }

    #[test]
    fn orderly_pops_carry_earlier_deliveries_as_reconsume_times() {
        let mut body = stored("T", 1, 5);
        body.extend(stored("T", 1, 6));
        body.extend(stored("T", 2, 9));
        let resp = RemotingCommand::new_response(ResponseCode::SUCCESS, None)
            .with_ext_field("popTime", "1000")
            .with_ext_field("invisibleTime", "30000")
            .with_ext_field("reviveQid", "999")
            .with_ext_field("restNum", "0")
            .with_ext_field("startOffsetInfo", "0 1 5;0 2 9")
            .with_ext_field("msgOffsetInfo", "0 1 5,6;0 2 9")
            .with_ext_field("orderCountInfo", "0 qo1%5 2;0 qo1%6 1;0 2 0")
            .with_body(body);
        let r = PopResult::from_response("a", "broker-a", resp).unwrap();
        let times: Vec<i32> = r.messages.iter().map(|m| m.reconsume_times).collect();
        assert_eq!(times, [2, 1, 0]);
    }

    #[test]
    fn statuses_and_errors() {
        for (code, status) in [
            (ResponseCode::POLLING_TIMEOUT, PopStatus::NoNewMsg),
            (ResponseCode::PULL_NOT_FOUND, PopStatus::NoNewMsg),
            (ResponseCode::POLLING_FULL, PopStatus::PollingFull),
        ] {
            let resp = RemotingCommand::new_response(code, None);
            let r = PopResult::from_response("a", "b", resp).unwrap();
            assert_eq!(r.status, status);
            assert!(r.messages.is_empty());
        }
        let old = RemotingCommand::new_response(
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            Some("request type 200050 not supported".into()),
        );
        let e = PopResult::from_response("a", "b", old).unwrap_err();
        assert!(is_pop_unsupported(&e));
        let missing = RemotingCommand::new_response(ResponseCode::SUCCESS, None)
            .with_ext_field("popTime", "1")
            .with_ext_field("invisibleTime", "1")
            .with_ext_field("reviveQid", "1")
            .with_ext_field("restNum", "0")
            .with_body(stored("T", 3, 0));
        assert!(matches!(
            PopResult::from_response("a", "b", missing),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn timeout_is_poll_plus_overhead() {
        let h = PopMessageRequestHeader {
            poll_time: 15_000,
            ..Default::default()
        };
        assert_eq!(pop_timeout(&h), Duration::from_secs(25));
    }
}
