//! Heartbeats (HEART_BEAT) and UNREGISTER_CLIENT.

use std::time::Duration;

use rmq_protocol::body::{HeartbeatData, MASTER_ID, ProducerData};
use rmq_protocol::header::{EmptyHeader, UnregisterClientRequestHeader};
use rmq_protocol::{RemotingCommand, RequestCode};
use tokio::sync::broadcast;
use tracing::{debug, warn};

use super::{BrokerLink, ClientInstance, Members, Scope};
use crate::error::Result;

/// Delay of the first periodic heartbeat (Java: 1 s).
const FIRST_HEARTBEAT_DELAY: Duration = Duration::from_secs(1);

/// The heartbeat body for `members`, or `None` when nothing is registered
/// (Java sends no heartbeat then). Takes a copy of the members: consumers'
/// `consumer_data` is called without the members lock held.
pub(crate) fn build_heartbeat(client_id: &str, members: &Members) -> Option<HeartbeatData> {
    if members.producers.is_empty() && members.consumers.is_empty() {
        return None;
    }
    Some(HeartbeatData {
        client_id: client_id.to_owned(),
        producer_data_set: members
            .producers
            .iter()
            .map(|g| ProducerData {
                group_name: g.clone(),
            })
            .collect(),
        consumer_data_set: members
            .consumers
            .values()
            .map(|c| c.consumer_data())
            .collect(),
        ..HeartbeatData::default()
    })
}

/// The addresses a heartbeat goes to: every address when the client has
/// consumers, else the masters only.
pub(crate) fn heartbeat_targets(
    brokers: &[(String, i64, String)],
    has_consumers: bool,
) -> Vec<String> {
    let mut addrs: Vec<String> = brokers
        .iter()
        .filter(|(_, id, _)| has_consumers || *id == MASTER_ID)
        .map(|(_, _, addr)| addr.clone())
        .collect();
    addrs.sort();
    addrs.dedup();
    addrs
}

/// Whether a failed heartbeat means the broker did not answer at all
/// (connect, connection closed, timeout) rather than refused it.
fn unreachable(e: &crate::Error) -> bool {
    let mut level: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = level {
        if let Some(r) = err.downcast_ref::<rmq_remoting::Error>() {
            return matches!(
                r,
                rmq_remoting::Error::Connect { .. }
                    | rmq_remoting::Error::ConnectionClosed { .. }
                    | rmq_remoting::Error::Timeout { .. }
                    | rmq_remoting::Error::Tls { .. }
            );
        }
        level = err.source();
    }
    false
}

impl ClientInstance {
    /// The broker-link events from now on ([`BrokerLink`]); a receiver
    /// more than 64 events behind gets `Lagged` and skips the oldest.
    pub fn broker_links(&self) -> broadcast::Receiver<BrokerLink> {
        self.inner.links.subscribe()
    }

    /// The broker addresses whose last heartbeat failed, sorted.
    pub fn lost_brokers(&self) -> Vec<String> {
        self.inner.links.lost()
    }

    /// Sends a heartbeat to the brokers now (Java
    /// `sendHeartbeatToAllBrokerWithLock`): every known broker address
    /// when consumers are registered, else the masters only; nothing when
    /// nothing is registered. Failures are logged, never returned. Waits
    /// for a heartbeat round already in progress first.
    pub async fn send_heartbeat_now(&self) {
        if self.inner.is_closing() {
            return;
        }
        let _round = self.inner.heartbeat_lock.lock().await;
        let members = self.inner.members().clone();
        let Some(data) = build_heartbeat(&self.inner.client_id, &members) else {
            return;
        };
        let body = match data.to_json_bytes() {
            Ok(body) => bytes::Bytes::from(body),
            Err(e) => {
                warn!(client_id = %self.inner.client_id, error = %rmq_protocol::ErrorChain(&e), "cannot encode heartbeat");
                return;
            }
        };
        let targets = heartbeat_targets(&self.broker_addrs(), !data.consumer_data_set.is_empty());
        self.inner.links.round(&targets);
        let timeout = self.inner.config.request_timeout();
        let sends = targets.iter().map(|addr| {
            let request =
                RemotingCommand::request(RequestCode::HEART_BEAT, &EmptyHeader).with_body(body.clone());
            async move {
                let result = self.inner.call_ok(addr, request, timeout, Scope::NONE).await;
                match result {
                    Ok(response) => {
                        self.inner.record_broker_version(addr, response.version);
                        self.inner.links.heartbeat(addr, None);
                        debug!(client_id = %self.inner.client_id, addr, version = response.version, "heartbeat sent");
                    }
                    Err(e) => {
                        // A refusal (ACL, a broker error code) still means the broker answered.
                        if unreachable(&e) {
                            self.inner.links.heartbeat(addr, Some(rmq_protocol::ErrorChain(&e).to_string()));
                        } else {
                            self.inner.links.heartbeat(addr, None);
                        }
                        warn!(client_id = %self.inner.client_id, addr, error = %rmq_protocol::ErrorChain(&e), "heartbeat failed");
                    }
                }
            }
        });
        futures::future::join_all(sends).await;
    }

    /// The version code of the broker at `addr` (Java `MQVersion` ordinal:
    /// [`BrokerVersion`](crate::BrokerVersion)), as its heartbeat answers
    /// report it: every broker response carries the broker's own version
    /// (`RemotingCommand.version`, set from `MQVersion.CURRENT_VERSION` at
    /// broker start). When no heartbeat reached the address yet, sends one
    /// now (with this client's producers and consumers, as the periodic
    /// heartbeat would) and reads the answer.
    ///
    /// # Errors
    ///
    /// The heartbeat's failure (connection, timeout, refusal).
    pub async fn broker_version(&self, addr: &str) -> Result<crate::BrokerVersion> {
        if let Some(v) = self.inner.known_broker_version(addr) {
            return Ok(crate::BrokerVersion(v));
        }
        let members = self.inner.members().clone();
        let data =
            build_heartbeat(&self.inner.client_id, &members).unwrap_or_else(|| HeartbeatData {
                client_id: self.inner.client_id.clone(),
                ..HeartbeatData::default()
            });
        let body = bytes::Bytes::from(data.to_json_bytes()?);
        let request =
            RemotingCommand::request(RequestCode::HEART_BEAT, &EmptyHeader).with_body(body);
        let response = self
            .inner
            .call_ok_default(addr, request, Scope::NONE)
            .await?;
        self.inner.record_broker_version(addr, response.version);
        Ok(crate::BrokerVersion(response.version))
    }

    /// Sends UNREGISTER_CLIENT for one group to every known broker address
    /// (Java `unregisterClientWithLock`); failures are logged. Holds the
    /// heartbeat lock, so no heartbeat built before the group left is sent
    /// after this.
    pub(crate) async fn unregister_client(
        &self,
        producer_group: Option<&str>,
        consumer_group: Option<&str>,
    ) {
        let _round = self.inner.heartbeat_lock.lock().await;
        let header = UnregisterClientRequestHeader {
            client_id: self.inner.client_id.clone(),
            producer_group: producer_group.map(str::to_owned),
            consumer_group: consumer_group.map(str::to_owned),
        };
        let targets = heartbeat_targets(&self.broker_addrs(), true);
        let timeout = self.inner.config.request_timeout();
        let sends = targets.iter().map(|addr| {
            let request = RemotingCommand::request(RequestCode::UNREGISTER_CLIENT, &header);
            async move {
                let result = self
                    .inner
                    .call_ok(addr, request, timeout, Scope::NONE)
                    .await;
                if let Err(e) = result {
                    warn!(client_id = %self.inner.client_id, addr, ?producer_group, ?consumer_group,
                        error = %rmq_protocol::ErrorChain(&e), "unregister failed");
                }
            }
        });
        futures::future::join_all(sends).await;
        debug!(client_id = %self.inner.client_id, ?producer_group, ?consumer_group, "unregistered");
    }
}

/// Starts the periodic heartbeat: first after 1 s, then every
/// `heartbeat_broker_interval`, and at once when a route change brings a
/// new broker address (so a new broker learns about us without waiting
/// 30 s).
pub(super) fn spawn_heartbeat_task(instance: &ClientInstance) {
    let weak = instance.downgrade();
    let cancel = instance.inner.cancel.clone();
    let wakeup = instance.inner.heartbeat_wakeup.clone();
    let interval = instance.inner.config.heartbeat_broker_interval();
    instance.inner.tasks.spawn(async move {
        let mut delay = FIRST_HEARTBEAT_DELAY;
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(delay) => delay = interval,
                () = wakeup.notified() => {}
            }
            let Some(instance) = ClientInstance::from_weak(&weak) else {
                break;
            };
            tokio::select! {
                () = cancel.cancelled() => break,
                () = instance.send_heartbeat_now() => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmq_protocol::body::{ConsumerData, MessageModel};

    use super::*;
    use crate::consumer::ConsumerHandle;

    struct Fake(&'static str);

    impl ConsumerHandle for Fake {
        fn consumer_data(&self) -> ConsumerData {
            ConsumerData {
                group_name: self.0.into(),
                message_model: MessageModel::Clustering,
                ..ConsumerData::default()
            }
        }
    }

    #[test]
    fn nothing_registered_no_heartbeat() {
        assert!(build_heartbeat("c", &Members::default()).is_none());
    }

    #[test]
    fn heartbeat_lists_every_group() {
        let mut m = Members::default();
        m.producers.insert("P1".into());
        m.producers.insert("P2".into());
        m.consumers.insert("C1".into(), Arc::new(Fake("C1")));
        let hb = build_heartbeat("1.2.3.4@x", &m).unwrap();
        assert_eq!(hb.client_id, "1.2.3.4@x");
        let groups: Vec<&str> = hb
            .producer_data_set
            .iter()
            .map(|p| p.group_name.as_str())
            .collect();
        assert_eq!(groups, ["P1", "P2"]);
        assert_eq!(hb.consumer_data_set.len(), 1);
        assert_eq!(hb.consumer_data_set[0].group_name, "C1");
        let json = String::from_utf8(hb.to_json_bytes().unwrap()).unwrap();
        assert!(json.contains(r#""clientID":"1.2.3.4@x""#), "{json}");
        assert!(
            json.contains(r#""producerDataSet":[{"groupName":"P1"}"#),
            "{json}"
        );
    }

    #[test]
    fn targets_masters_only_without_consumers() {
        let brokers = vec![
            ("a".to_owned(), 0, "a0".to_owned()),
            ("a".to_owned(), 1, "a1".to_owned()),
            ("b".to_owned(), 0, "b0".to_owned()),
        ];
        assert_eq!(heartbeat_targets(&brokers, false), ["a0", "b0"]);
        assert_eq!(heartbeat_targets(&brokers, true), ["a0", "a1", "b0"]);
    }
}
