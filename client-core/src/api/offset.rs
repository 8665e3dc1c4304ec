//! Offset calls: QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET,
//! GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP.

use rmq_protocol::header::{
    BoundaryType, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader, SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::OFFSET_TIMEOUT;
use crate::error::{Error, Result};
use crate::instance::{ClientInstance, Scope};

impl ClientInstance {
    /// The group's stored offset for a queue; `None` when the broker has
    /// none (QUERY_NOT_FOUND). Timeout 5 s (Java).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for other codes, [`Error::Remoting`] when the call
    /// failed, [`Error::Protocol`] when the answer has no offset.
    pub async fn query_consumer_offset(
        &self,
        addr: &str,
        header: QueryConsumerOffsetRequestHeader,
    ) -> Result<Option<i64>> {
        let code = RequestCode::QUERY_CONSUMER_OFFSET;
        let request = RemotingCommand::request(code, &header);
        let response = self
            .inner
            .remoting
            .invoke(addr, request, OFFSET_TIMEOUT)
            .await?;
        match response.response_code() {
            ResponseCode::SUCCESS => {
                let h: OffsetResponseHeader = response.decode_header()?;
                Ok(Some(h.offset))
            }
            ResponseCode::QUERY_NOT_FOUND => Ok(None),
            _ => Err(self.inner.refusal(
                Error::broker(addr, code, &response),
                Some(&header.topic),
                Some(&header.consumer_group),
            )),
        }
    }

    /// Stores the group's offset for a queue and waits for the answer.
    /// Timeout 5 s (Java).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] when the broker refuses, [`Error::Remoting`] when
    /// the call failed.
    pub async fn update_consumer_offset(
        &self,
        addr: &str,
        header: UpdateConsumerOffsetRequestHeader,
    ) -> Result<()> {
        let request = RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, &header);
        self.inner
            .call_ok(
                addr,
                request,
                OFFSET_TIMEOUT,
                Scope::of(&header.topic, &header.consumer_group),
            )
            .await?;
        Ok(())
    }

    /// Stores the group's offset for a queue, oneway (what the Java
    /// consumer does on its periodic persist). Timeout 5 s.
    ///
    /// # Errors
    ///
    /// [`Error::Remoting`] when it could not be written.
    pub async fn update_consumer_offset_oneway(
        &self,
        addr: &str,
        header: UpdateConsumerOffsetRequestHeader,
    ) -> Result<()> {
        let request = RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, &header);
        self.inner
            .remoting
            .invoke_oneway(addr, request, OFFSET_TIMEOUT)
            .await?;
        Ok(())
    }

    /// The queue's max offset (the next offset to be written; committed,
    /// like Java). Timeout: the config's request timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] when the broker refuses, [`Error::Remoting`] when
    /// the call failed.
    pub async fn get_max_offset(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        broker_name: Option<&str>,
    ) -> Result<i64> {
        let header = GetMaxOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            committed: Some(true),
            broker_name: broker_name.map(str::to_owned),
        };
        self.offset_call(
            addr,
            RemotingCommand::request(RequestCode::GET_MAX_OFFSET, &header),
            topic,
        )
        .await
    }

    /// The queue's min offset. Timeout: the config's request timeout.
    ///
    /// # Errors
    ///
    /// As [`get_max_offset`](ClientInstance::get_max_offset).
    pub async fn get_min_offset(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        broker_name: Option<&str>,
    ) -> Result<i64> {
        let header = GetMinOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            broker_name: broker_name.map(str::to_owned),
        };
        self.offset_call(
            addr,
            RemotingCommand::request(RequestCode::GET_MIN_OFFSET, &header),
            topic,
        )
        .await
    }

    /// The queue offset of the message stored at `timestamp` (ms since
    /// the epoch); `boundary` picks the first or last of equal timestamps.
    /// Timeout: the config's request timeout.
    ///
    /// # Errors
    ///
    /// As [`get_max_offset`](ClientInstance::get_max_offset).
    pub async fn search_offset(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
        boundary: BoundaryType,
    ) -> Result<i64> {
        let header = SearchOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            timestamp,
            boundary_type: Some(boundary),
            broker_name: None,
        };
        self.offset_call(
            addr,
            RemotingCommand::request(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &header),
            topic,
        )
        .await
    }

    async fn offset_call(&self, addr: &str, request: RemotingCommand, topic: &str) -> Result<i64> {
        let timeout = self.inner.config.request_timeout();
        let response = self
            .inner
            .call_ok(addr, request, timeout, Scope::topic(topic))
            .await?;
        let h: OffsetResponseHeader = response.decode_header()?;
        Ok(h.offset)
    }
}
