//! PULL_MESSAGE / LITE_PULL_MESSAGE: [`PullResult`].

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader, pull_sys_flag};
use rmq_protocol::message::{Properties, SharedValue, decode_messages, property};
use rmq_protocol::{
    MessageExt, MessageQueue, RawCommand, RemotingCommand, RequestCode, ResponseCode,
};

use super::PULL_TIMEOUT_OVERHEAD;
use crate::error::{Error, Result};
use crate::instance::ClientInstance;

/// What a pull found (Java `PullStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PullStatus {
    /// Messages were found (SUCCESS).
    Found,
    /// No new message (PULL_NOT_FOUND).
    NoNewMsg,
    /// Messages exist but none matched the filter (PULL_RETRY_IMMEDIATELY).
    NoMatchedMsg,
    /// The requested offset is illegal (PULL_OFFSET_MOVED); continue from
    /// [`PullResult::next_begin_offset`].
    OffsetIllegal,
}

impl PullStatus {
    /// The status for a response code, `None` for codes that are errors.
    pub fn from_code(code: ResponseCode) -> Option<PullStatus> {
        match code {
            ResponseCode::SUCCESS => Some(PullStatus::Found),
            ResponseCode::PULL_NOT_FOUND => Some(PullStatus::NoNewMsg),
            ResponseCode::PULL_RETRY_IMMEDIATELY => Some(PullStatus::NoMatchedMsg),
            ResponseCode::PULL_OFFSET_MOVED => Some(PullStatus::OffsetIllegal),
            _ => None,
        }
    }
}

/// The broker's answer to a pull (Java `PullResultExt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullResult {
    /// What was found.
    pub status: PullStatus,
    /// Offset for the next pull.
    pub next_begin_offset: i64,
    /// Queue min offset.
    pub min_offset: i64,
    /// Queue max offset.
    pub max_offset: i64,
    /// Broker id to pull this queue from next (0 = master).
    pub suggest_which_broker_id: i64,
    /// 5.x static topics: added to every decoded message's queue offset.
    pub offset_delta: Option<i64>,
    /// The raw stored messages (non-empty only for [`PullStatus::Found`]).
    pub body: Bytes,
}

impl PullResult {
    /// Maps a pull response (Java `MQClientAPIImpl.processPullResponse`).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for codes other than 0, 19, 20, 21;
    /// [`Error::Protocol`] when the response header is malformed.
    pub fn from_response(
        addr: &str,
        request: RequestCode,
        response: RemotingCommand,
    ) -> Result<PullResult> {
        Self::from_raw(addr, request, RawCommand::from(response))
    }

    /// [`from_response`](Self::from_response) of a response still in its
    /// frame: the header is read in place.
    pub(crate) fn from_raw(
        addr: &str,
        request: RequestCode,
        mut response: RawCommand,
    ) -> Result<PullResult> {
        let Some(status) = PullStatus::from_code(response.response_code()) else {
            return Err(Error::broker(addr, request, &response.into_command()));
        };
        let header: PullMessageResponseHeader = response.decode_header()?;
        let body = if status == PullStatus::Found {
            response.take_body()
        } else {
            Bytes::new()
        };
        Ok(PullResult {
            status,
            next_begin_offset: header.next_begin_offset,
            min_offset: header.min_offset,
            max_offset: header.max_offset,
            suggest_which_broker_id: header.suggest_which_broker_id,
            offset_delta: header.offset_delta,
            body,
        })
    }

    /// Decodes [`body`](PullResult::body) into the messages of `mq`: sets
    /// their broker name and queue id, the `MIN_OFFSET` / `MAX_OFFSET`
    /// properties, and adds `offset_delta` to their queue offsets (Java
    /// `PullAPIWrapper.processPullResult`, without the tag re-check, which
    /// is the consumer's). 5.x inner batches are unwrapped. Empty unless
    /// [`PullStatus::Found`].
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when a record is malformed.
    pub fn decode_messages(&self, mq: &MessageQueue) -> Result<Vec<MessageExt>> {
        if self.status != PullStatus::Found || self.body.is_empty() {
            return Ok(Vec::new());
        }
        let mut msgs = decode_messages(&self.body)?;
        for msg in &mut msgs {
            msg.broker_name.clone_from(&mq.broker_name);
            msg.queue_id = mq.queue_id;
            if let Some(delta) = self.offset_delta {
                msg.queue_offset = msg.queue_offset.saturating_add(delta);
            }
        }
        // One value and one list of the two pairs per batch, shared by its
        // messages.
        let min = SharedValue::from(itoa::Buffer::new().format(self.min_offset));
        let max = SharedValue::from(itoa::Buffer::new().format(self.max_offset));
        Properties::insert_shared_in(
            msgs.iter_mut().map(|m| &mut m.message.properties),
            &[(property::MIN_OFFSET, &min), (property::MAX_OFFSET, &max)],
        );
        Ok(msgs)
    }
}

/// The call timeout of a pull: the broker's hold plus
/// [`PULL_TIMEOUT_OVERHEAD`].
pub fn pull_timeout(header: &PullMessageRequestHeader) -> Duration {
    let hold = u64::try_from(header.suspend_timeout_millis).unwrap_or(0);
    Duration::from_millis(hold).saturating_add(PULL_TIMEOUT_OVERHEAD)
}

impl ClientInstance {
    /// Pull requests this instance sent so far to masters and to slaves
    /// (by the broker address table at the time of each request): shows
    /// where the broker's `suggestWhichBrokerId` sent the consumers.
    pub fn pull_counts(&self) -> PullCounts {
        PullCounts {
            from_master: self.inner.pulls[0].load(Ordering::Relaxed),
            from_slave: self.inner.pulls[1].load(Ordering::Relaxed),
        }
    }

    /// Pulls from the broker at `addr`: PULL_MESSAGE, or
    /// LITE_PULL_MESSAGE when the header's sysFlag has the lite-pull bit.
    /// `timeout` `None` means [`pull_timeout`] (the header's
    /// `suspendTimeoutMillis` + 15 s).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for codes other than 0, 19, 20, 21 (e.g.
    /// SUBSCRIPTION_NOT_LATEST, FLOW_CONTROL, NO_PERMISSION);
    /// [`Error::Remoting`] when the call failed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the request; the broker may still
    /// hold it until its suspend time.
    pub async fn pull_message(
        &self,
        addr: &str,
        header: &PullMessageRequestHeader,
        timeout: Option<Duration>,
    ) -> Result<PullResult> {
        let code = if header.sys_flag & pull_sys_flag::LITE_PULL != 0 {
            RequestCode::LITE_PULL_MESSAGE
        } else {
            RequestCode::PULL_MESSAGE
        };
        let timeout = timeout.unwrap_or_else(|| pull_timeout(header));
        let slave = self.inner.routes.load().is_slave_addr(addr);
        if let Some(count) = self.inner.pulls.get(usize::from(slave)) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        let response = self
            .inner
            .invoke_header_raw(addr, code, header, bytes::Bytes::new(), timeout)
            .await?;
        PullResult::from_raw(addr, code, response).map_err(|e| {
            self.inner
                .refusal(e, Some(&header.topic), Some(&header.consumer_group))
        })
    }
}

/// Pull requests sent, by the role of the broker they went to
/// ([`ClientInstance::pull_counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PullCounts {
    /// Sent to a master (broker id 0) or an address not in the route.
    pub from_master: u64,
    /// Sent to a slave (broker id 1 and up).
    pub from_slave: u64,
}

#[cfg(test)]
mod tests {
    use rmq_protocol::Message;
    use rmq_protocol::message::{MessageVersion, encode_stored_message};

    use super::*;

    fn response(code: ResponseCode) -> RemotingCommand {
        RemotingCommand::new_response(code, None)
            .with_ext_field("suggestWhichBrokerId", "1")
            .with_ext_field("nextBeginOffset", "7")
            .with_ext_field("minOffset", "2")
            .with_ext_field("maxOffset", "9")
    }

    #[test]
    fn codes_map_to_statuses() {
        for (code, status) in [
            (ResponseCode::SUCCESS, PullStatus::Found),
            (ResponseCode::PULL_NOT_FOUND, PullStatus::NoNewMsg),
            (
                ResponseCode::PULL_RETRY_IMMEDIATELY,
                PullStatus::NoMatchedMsg,
            ),
            (ResponseCode::PULL_OFFSET_MOVED, PullStatus::OffsetIllegal),
        ] {
            let r = PullResult::from_response(
                "a",
                RequestCode::PULL_MESSAGE,
                response(code).with_body("x"),
            )
            .unwrap();
            assert_eq!(r.status, status);
            assert_eq!(r.next_begin_offset, 7);
            assert_eq!(r.min_offset, 2);
            assert_eq!(r.max_offset, 9);
            assert_eq!(r.suggest_which_broker_id, 1);
            assert_eq!(r.body.is_empty(), status != PullStatus::Found);
        }
        let err = PullResult::from_response(
            "a",
            RequestCode::PULL_MESSAGE,
            response(ResponseCode::SUBSCRIPTION_NOT_LATEST),
        )
        .unwrap_err();
        assert_eq!(
            err.response_code(),
            Some(ResponseCode::SUBSCRIPTION_NOT_LATEST)
        );
        let bad = RemotingCommand::new_response(ResponseCode::PULL_NOT_FOUND, None);
        assert!(matches!(
            PullResult::from_response("a", RequestCode::PULL_MESSAGE, bad),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn decode_sets_queue_fields_and_offsets() {
        let mut body = Vec::new();
        for offset in [10_i64, 11] {
            let stored = MessageExt {
                message: Message::new("T", format!("m{offset}")),
                queue_offset: offset,
                queue_id: 99,
                ..MessageExt::default()
            };
            body.extend_from_slice(
                &encode_stored_message(&stored, MessageVersion::V1, None).unwrap(),
            );
        }
        let resp = response(ResponseCode::SUCCESS)
            .with_ext_field("offsetDelta", "100")
            .with_body(body);
        let r = PullResult::from_response("a", RequestCode::PULL_MESSAGE, resp).unwrap();
        let mq = MessageQueue::new("T", "broker-a", 3);
        let msgs = r.decode_messages(&mq).unwrap();
        assert_eq!(msgs.len(), 2);
        for (m, want) in msgs.iter().zip([110_i64, 111]) {
            assert_eq!(m.broker_name, "broker-a");
            assert_eq!(m.queue_id, 3);
            assert_eq!(m.queue_offset, want);
            assert_eq!(m.property(property::MIN_OFFSET), Some("2"));
            assert_eq!(m.property(property::MAX_OFFSET), Some("9"));
        }
    }

    #[test]
    fn timeout_is_hold_plus_overhead() {
        let h = PullMessageRequestHeader {
            suspend_timeout_millis: 15_000,
            ..Default::default()
        };
        assert_eq!(pull_timeout(&h), Duration::from_secs(30));
        let h = PullMessageRequestHeader {
            suspend_timeout_millis: -5,
            ..Default::default()
        };
        assert_eq!(pull_timeout(&h), Duration::from_secs(15));
    }
}
