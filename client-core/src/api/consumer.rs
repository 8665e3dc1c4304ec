//! Consumer-side calls: CONSUMER_SEND_MSG_BACK, GET_CONSUMER_LIST_BY_GROUP,
//! LOCK_BATCH_MQ, UNLOCK_BATCH_MQ.

use rmq_protocol::body::{ConsumerListBody, LockBatchRequestBody, LockBatchResponseBody};
use rmq_protocol::header::{
    ConsumerSendMsgBackRequestHeader, EmptyHeader, GetConsumerListByGroupRequestHeader,
};
use rmq_protocol::{MessageQueue, RemotingCommand, RequestCode, ResponseCode};

use super::{LOCK_TIMEOUT, SEND_BACK_TIMEOUT};
use crate::error::{Error, Result};
use crate::instance::{ClientInstance, Scope};

impl ClientInstance {
    /// Hands a message that failed to consume back to the broker, which
    /// moves it to the group's retry topic (or the DLQ). Timeout 5 s (Java).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] when the broker refuses, [`Error::Remoting`] when
    /// the call failed.
    pub async fn consumer_send_back(
        &self,
        addr: &str,
        header: ConsumerSendMsgBackRequestHeader,
    ) -> Result<()> {
        let request = RemotingCommand::request(RequestCode::CONSUMER_SEND_MSG_BACK, &header);
        self.inner
            .call_ok(
                addr,
                request,
                SEND_BACK_TIMEOUT,
                Scope::group(&header.group),
            )
            .await?;
        Ok(())
    }

    /// The client ids of the group's consumers as the broker at `addr`
    /// sees them; empty when it knows none (SYSTEM_ERROR "no consumer for
    /// this group"). Timeout: the config's request timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`] for other refusals, [`Error::Remoting`] when the
    /// call failed, [`Error::Protocol`] for a malformed body.
    pub async fn get_consumer_id_list(&self, addr: &str, group: &str) -> Result<Vec<String>> {
        let code = RequestCode::GET_CONSUMER_LIST_BY_GROUP;
        let header = GetConsumerListByGroupRequestHeader {
            consumer_group: group.to_owned(),
        };
        let request = RemotingCommand::request(code, &header);
        let timeout = self.inner.config.request_timeout();
        let response = self.inner.invoke(addr, request, timeout).await?;
        consumer_id_list_from_response(addr, &response)
            .map_err(|e| self.inner.refusal(e, None, Some(group)))
    }

    /// Locks `mqs` (queues of the broker at `addr`) for this client in
    /// `group` (LOCK_BATCH_MQ); returns the queues locked for us (held by
    /// us already, or newly). Timeout 1 s (Java).
    ///
    /// # Errors
    ///
    /// As [`get_consumer_id_list`](ClientInstance::get_consumer_id_list).
    pub async fn lock_batch_mq(
        &self,
        addr: &str,
        group: &str,
        mqs: &[MessageQueue],
    ) -> Result<Vec<MessageQueue>> {
        let body = self.lock_body(group, mqs).to_json_bytes()?;
        let request =
            RemotingCommand::request(RequestCode::LOCK_BATCH_MQ, &EmptyHeader).with_body(body);
        let response = self
            .inner
            .call_ok(addr, request, LOCK_TIMEOUT, Scope::group(group))
            .await?;
        let locked = LockBatchResponseBody::decode(&response.body)?;
        Ok(locked.lock_ok_mq_set.into_iter().collect())
    }

    /// Unlocks `mqs` for this client in `group` (UNLOCK_BATCH_MQ), waiting
    /// for the answer unless `oneway`. Timeout 1 s (Java).
    ///
    /// # Errors
    ///
    /// As [`get_consumer_id_list`](ClientInstance::get_consumer_id_list).
    pub async fn unlock_batch_mq(
        &self,
        addr: &str,
        group: &str,
        mqs: &[MessageQueue],
        oneway: bool,
    ) -> Result<()> {
        let body = self.lock_body(group, mqs).to_json_bytes()?;
        let request =
            RemotingCommand::request(RequestCode::UNLOCK_BATCH_MQ, &EmptyHeader).with_body(body);
        if oneway {
            self.inner
                .remoting
                .invoke_oneway(addr, request, LOCK_TIMEOUT)
                .await?;
        } else {
            self.inner
                .call_ok(addr, request, LOCK_TIMEOUT, Scope::group(group))
                .await?;
        }
        Ok(())
    }

    fn lock_body(&self, group: &str, mqs: &[MessageQueue]) -> LockBatchRequestBody {
        LockBatchRequestBody {
            client_id: self.inner.client_id.clone(),
            consumer_group: group.to_owned(),
            mq_set: mqs.iter().cloned().collect(),
            only_this_broker: false,
        }
    }
}

/// Maps a GET_CONSUMER_LIST_BY_GROUP response.
fn consumer_id_list_from_response(addr: &str, response: &RemotingCommand) -> Result<Vec<String>> {
    match response.response_code() {
        ResponseCode::SUCCESS => Ok(ConsumerListBody::decode(&response.body)?.consumer_id_list),
        ResponseCode::SYSTEM_ERROR
            if response
                .remark
                .as_deref()
                .is_some_and(|r| r.contains("no consumer")) =>
        {
            Ok(Vec::new())
        }
        _ => Err(Error::broker(
            addr,
            RequestCode::GET_CONSUMER_LIST_BY_GROUP,
            response,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_list_mapping() {
        let ok = RemotingCommand::new_response(ResponseCode::SUCCESS, None)
            .with_body(r#"{"consumerIdList":["a@1","b@2"]}"#);
        assert_eq!(
            consumer_id_list_from_response("x", &ok).unwrap(),
            ["a@1", "b@2"]
        );
        let none = RemotingCommand::new_response(
            ResponseCode::SYSTEM_ERROR,
            Some("no consumer for this group, G".into()),
        );
        assert!(
            consumer_id_list_from_response("x", &none)
                .unwrap()
                .is_empty()
        );
        let other = RemotingCommand::new_response(ResponseCode::SYSTEM_ERROR, Some("boom".into()));
        assert_eq!(
            consumer_id_list_from_response("x", &other)
                .unwrap_err()
                .response_code(),
            Some(ResponseCode::SYSTEM_ERROR)
        );
    }
}
