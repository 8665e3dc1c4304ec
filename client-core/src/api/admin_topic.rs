//! Topic admin calls on a broker: GET_TOPIC_STATS_INFO,
//! DELETE_TOPIC_IN_BROKER.

use rmq_protocol::body::TopicStatsTable;
use rmq_protocol::header::{DeleteTopicRequestHeader, GetTopicStatsInfoRequestHeader};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::error::Result;
use crate::instance::ClientInstance;

impl ClientInstance {
    /// Min / max offset and last store time of every queue of `topic` on
    /// the broker at `addr` (GET_TOPIC_STATS_INFO). Timeout: the config's
    /// request timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`](crate::Error::Broker) with TOPIC_NOT_EXIST when the
    /// broker does not have the topic, or another refusal;
    /// [`Error::Remoting`](crate::Error::Remoting) when the call failed;
    /// [`Error::Protocol`](crate::Error::Protocol) for a malformed body.
    pub async fn get_topic_stats_info(&self, addr: &str, topic: &str) -> Result<TopicStatsTable> {
        let header = GetTopicStatsInfoRequestHeader {
            topic: topic.to_owned(),
        };
        let request = RemotingCommand::request(RequestCode::GET_TOPIC_STATS_INFO, &header);
        let response = self.invoke_ok(addr, request).await?;
        Ok(TopicStatsTable::decode(&response.body)?)
    }

    /// Deletes `topic` (its config, consume queues and the groups' offsets
    /// for it) on the broker at `addr` (DELETE_TOPIC_IN_BROKER). Then remove
    /// it from the name servers with
    /// [`delete_topic_in_namesrv`](ClientInstance::delete_topic_in_namesrv).
    ///
    /// # Errors
    ///
    /// [`Error::Broker`](crate::Error::Broker) when the broker refuses,
    /// [`Error::Remoting`](crate::Error::Remoting) when the call failed.
    pub async fn delete_topic_in_broker(&self, addr: &str, topic: &str) -> Result<()> {
        let header = DeleteTopicRequestHeader {
            topic: topic.to_owned(),
        };
        let request = RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_BROKER, &header);
        self.invoke_ok(addr, request).await?;
        Ok(())
    }
}
