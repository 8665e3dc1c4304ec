//! Admin calls used by tools and tests: UPDATE_AND_CREATE_TOPIC,
//! GET_PRODUCER_CONNECTION_LIST.

use rmq_protocol::body::lenient_json;
use rmq_protocol::header::CreateTopicRequestHeader;
use rmq_protocol::{RemotingCommand, RequestCode};
use serde::Deserialize;

use crate::error::Result;
use crate::instance::{ClientInstance, Scope};

/// GET_PRODUCER_CONNECTION_LIST (Java `RequestCode`; not in the protocol
/// crate's table).
const GET_PRODUCER_CONNECTION_LIST: RequestCode = RequestCode(204);

/// One client connection as the broker reports it (Java
/// `org.apache.rocketmq.remoting.protocol.body.Connection`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct Connection {
    /// The client's id.
    pub client_id: String,
    /// The client's remote address as the broker sees it.
    pub client_addr: String,
    /// The client's language (enum name: `JAVA`, `RUST`, ...).
    pub language: String,
    /// The client's version ordinal.
    pub version: i32,
}

/// The producers of a group connected to a broker (Java
/// `ProducerConnection`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct ProducerConnection {
    /// The connections.
    pub connection_set: Vec<Connection>,
}

impl ProducerConnection {
    /// Whether a connection with `client_id` is listed.
    pub fn contains_client(&self, client_id: &str) -> bool {
        self.connection_set.iter().any(|c| c.client_id == client_id)
    }
}

impl ClientInstance {
    /// Creates or updates a topic on the broker at `addr`
    /// (UPDATE_AND_CREATE_TOPIC). Timeout: the config's request timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Broker`](crate::Error::Broker) when the broker refuses,
    /// [`Error::Remoting`](crate::Error::Remoting) when the call failed.
    pub async fn create_topic(&self, addr: &str, header: CreateTopicRequestHeader) -> Result<()> {
        let request = RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, &header);
        self.inner
            .call_ok_default(addr, request, Scope::topic(&header.topic))
            .await?;
        Ok(())
    }

    /// The producers of `group` connected to the broker at `addr`
    /// (GET_PRODUCER_CONNECTION_LIST). A group the broker does not know is
    /// answered with SYSTEM_ERROR ("the producer group not exist").
    ///
    /// # Errors
    ///
    /// As [`create_topic`](ClientInstance::create_topic), plus
    /// [`Error::Protocol`](crate::Error::Protocol) for a malformed body.
    pub async fn get_producer_connection_list(
        &self,
        addr: &str,
        group: &str,
    ) -> Result<ProducerConnection> {
        let request = RemotingCommand::new_request(GET_PRODUCER_CONNECTION_LIST)
            .with_ext_field("producerGroup", group);
        let response = self
            .inner
            .call_ok_default(addr, request, Scope::group(group))
            .await?;
        Ok(lenient_json::decode(&response.body, "ProducerConnection")?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producer_connection_decodes() {
        let body = br#"{"connectionSet":[{"clientAddr":"127.0.0.1:5000","clientId":"1.2.3.4@x","language":"RUST","version":401}]}"#;
        let pc: ProducerConnection = lenient_json::decode(body, "ProducerConnection").unwrap();
        assert_eq!(pc.connection_set.len(), 1);
        assert!(pc.contains_client("1.2.3.4@x"));
        assert_eq!(pc.connection_set[0].version, 401);
        assert_eq!(pc.connection_set[0].language, "RUST");
    }
}
