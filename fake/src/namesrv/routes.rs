//! The route tables ([`NameServer`]) the brokers register with, and the
//! answers built from them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use rmq_protocol::body::QueueData;
use rmq_protocol::header::{CommandHeader, GetRouteInfoRequestHeader};
use rmq_protocol::{RemotingCommand, ResponseCode};

use super::json;
use crate::config::BrokerFlavor;
use crate::net::{lock, response};

/// `version` from which the name server always answers standard JSON (V4_9_4).
const STANDARD_JSON_VERSION: i32 = 401;

/// Java `FAQUrl.suggestTodo(APPLY_TOPIC_URL)`.
pub(crate) const FAQ: &str =
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

#[derive(Debug, Clone)]
struct Registration {
    cluster: String,
    addr: String,
    topics: HashMap<String, QueueData>,
}

/// Route tables, shared by the name server's service and the brokers.
#[derive(Debug)]
pub(crate) struct NameServer {
    pub(super) flavor: BrokerFlavor,
    brokers: Mutex<BTreeMap<String, Registration>>,
}

impl NameServer {
    pub(crate) fn new(flavor: BrokerFlavor) -> Arc<Self> {
        Arc::new(NameServer {
            flavor,
            brokers: Mutex::new(BTreeMap::new()),
        })
    }

    /// Registers (or re-registers) a broker with all its topics.
    pub(crate) fn register_broker(
        &self,
        name: &str,
        cluster: &str,
        addr: &str,
        topics: HashMap<String, QueueData>,
    ) {
        lock(&self.brokers).insert(
            name.to_owned(),
            Registration {
                cluster: cluster.to_owned(),
                addr: addr.to_owned(),
                topics,
            },
        );
    }

    /// Removes a broker from every route.
    pub(crate) fn unregister_broker(&self, name: &str) {
        lock(&self.brokers).remove(name);
    }

    /// Adds or updates one topic of a registered broker.
    pub(crate) fn register_topic(&self, broker: &str, topic: &str, data: QueueData) {
        if let Some(reg) = lock(&self.brokers).get_mut(broker) {
            reg.topics.insert(topic.to_owned(), data);
        }
    }

    pub(super) fn route_body(&self, topic: &str, standard: bool) -> Option<Vec<u8>> {
        let brokers = lock(&self.brokers);
        let mut views = Vec::new();
        let mut queues = Vec::new();
        for (name, reg) in brokers.iter() {
            if let Some(q) = reg.topics.get(topic) {
                queues.push(q.clone());
                views.push(json::BrokerView {
                    name,
                    cluster: &reg.cluster,
                    addr: &reg.addr,
                });
            }
        }
        if views.is_empty() {
            return None;
        }
        Some(json::route(&views, &queues, standard, self.flavor))
    }

    pub(super) fn cluster_body(&self) -> Vec<u8> {
        let brokers = lock(&self.brokers);
        let views: Vec<json::BrokerView<'_>> = brokers
            .iter()
            .map(|(name, reg)| json::BrokerView {
                name,
                cluster: &reg.cluster,
                addr: &reg.addr,
            })
            .collect();
        json::cluster_info(&views, self.flavor)
    }

    pub(super) fn topic_list(&self) -> Vec<u8> {
        let topics: BTreeSet<String> = lock(&self.brokers)
            .values()
            .flat_map(|r| r.topics.keys().cloned())
            .collect();
        json::topic_list(&topics.into_iter().collect::<Vec<_>>())
    }

    pub(super) fn get_route(&self, cmd: &RemotingCommand) -> RemotingCommand {
        let header = match GetRouteInfoRequestHeader::read_from(&cmd.ext_fields) {
            Ok(h) => h,
            Err(e) => return response(ResponseCode::SYSTEM_ERROR, e.to_string()),
        };
        let standard =
            cmd.version >= STANDARD_JSON_VERSION || header.accept_standard_json_only == Some(true);
        match self.route_body(&header.topic, standard) {
            Some(body) => response(ResponseCode::SUCCESS, None).with_body(body),
            None => response(
                ResponseCode::TOPIC_NOT_EXIST,
                format!(
                    "No topic route info in name server for the topic: {}{FAQ}",
                    header.topic
                ),
            ),
        }
    }
}
