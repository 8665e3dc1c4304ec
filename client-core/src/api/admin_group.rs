//! Consumer-group admin calls on a broker: GET_CONSUME_STATS,
//! INVOKE_BROKER_TO_RESET_OFFSET, DELETE_SUBSCRIPTIONGROUP.

use rmq_protocol::body::{ConsumeStats, ResetOffsetBody};
use rmq_protocol::header::{
    DeleteSubscriptionGroupRequestHeader, GetConsumeStatsRequestHeader, ResetOffsetRequestHeader,
};
use rmq_protocol::{MessageQueue, RemotingCommand, RequestCode};

use crate::error::Result;
use crate::instance::ClientInstance;

impl ClientInstance {
    /// The progress of `group` on the queues of the broker at `addr`
    /// (GET_CONSUME_STATS): per queue the broker's max offset and the
    /// group's committed offset. Without `topic`, every topic the group has
    /// committed offsets for on that broker (its `%RETRY%` topic included);
    /// a broker that never saw the group answers an empty table. Timeout:
    /// the config's request timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`](crate::Error::Broker) when the broker refuses,
    /// [`Error::Remoting`](crate::Error::Remoting) when the call failed,
    /// [`Error::Protocol`](crate::Error::Protocol) for a malformed body.
    pub async fn get_consume_stats(
        &self,
        addr: &str,
        group: &str,
        topic: Option<&str>,
    ) -> Result<ConsumeStats> {
        let header = GetConsumeStatsRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.map(str::to_owned),
            topic_list: None,
        };
        let request = RemotingCommand::request(RequestCode::GET_CONSUME_STATS, &header);
        let response = self.invoke_ok(addr, request).await?;
        Ok(ConsumeStats::decode(&response.body)?)
    }

    /// Asks the broker at `addr` to reset the group's offsets of
    /// `header.topic` (INVOKE_BROKER_TO_RESET_OFFSET); returns the offsets
    /// it applied (or told the consumers to apply).
    ///
    /// The broker computes the offsets from `header.timestamp` (ms; `-1` =
    /// each queue's max offset), and 5.x brokers with a `queue_id` and
    /// `offset` set apply exactly that offset to that queue. 5.x brokers
    /// (server-side reset, their default) store the offsets themselves and
    /// the consumers pick them up on their next pull; 4.9.x brokers only
    /// send RESET_CONSUMER_CLIENT_OFFSET to the group's online consumers and
    /// answer CONSUMER_NOT_ONLINE when there are none, or SYSTEM_ERROR
    /// ("consumer group not exist") when the group has no offset on some
    /// queue (then store the
    /// offsets with
    /// [`update_consumer_offset`](ClientInstance::update_consumer_offset),
    /// as Java's `resetOffsetByTimestampOld` does).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`](crate::Error::Broker) when the broker refuses
    /// (CONSUMER_NOT_ONLINE, TOPIC_NOT_EXIST, SUBSCRIPTION_GROUP_NOT_EXIST,
    /// ...), [`Error::Remoting`](crate::Error::Remoting) when the call
    /// failed, [`Error::Protocol`](crate::Error::Protocol) for a malformed
    /// body.
    pub async fn invoke_broker_to_reset_offset(
        &self,
        addr: &str,
        header: ResetOffsetRequestHeader,
    ) -> Result<Vec<(MessageQueue, i64)>> {
        let request = RemotingCommand::request(RequestCode::INVOKE_BROKER_TO_RESET_OFFSET, &header);
        let response = self.invoke_ok(addr, request).await?;
        if response.body.is_empty() {
            return Ok(Vec::new());
        }
        Ok(ResetOffsetBody::decode(&response.body)?.offset_table)
    }

    /// Deletes the subscription group `group` (its config; with
    /// `clean_offset`, on 5.x also its offsets) on the broker at `addr`
    /// (DELETE_SUBSCRIPTIONGROUP).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`](crate::Error::Broker) when the broker refuses,
    /// [`Error::Remoting`](crate::Error::Remoting) when the call failed.
    pub async fn delete_subscription_group(
        &self,
        addr: &str,
        group: &str,
        clean_offset: bool,
    ) -> Result<()> {
        let header = DeleteSubscriptionGroupRequestHeader {
            group_name: group.to_owned(),
            clean_offset: Some(clean_offset),
        };
        let request = RemotingCommand::request(RequestCode::DELETE_SUBSCRIPTIONGROUP, &header);
        self.invoke_ok(addr, request).await?;
        Ok(())
    }
}
