//! The fake name server (Java `RouteInfoManager`, `DefaultRequestProcessor`,
//! `ClientRequestProcessor`): routes of the topics the fake brokers
//! registered, and cluster info.
//!
//! The fake brokers register in-process, synchronously: a topic a broker
//! creates is routable when the creating call returns, a killed broker
//! disappears from every route at once (as when the real name server sees
//! the broker's connection close).
//!
//! | code | answer |
//! |---|---|
//! | GET_ROUTEINFO_BY_TOPIC (105) | `TopicRouteData`, standard JSON when `acceptStandardJsonOnly` or `version` ≥ 401; TOPIC_NOT_EXIST (17) without route |
//! | GET_BROKER_CLUSTER_INFO (106) | `ClusterInfo` (fastjson's non-standard keys) |
//! | GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) | `TopicList` |
//! | anything else | REQUEST_CODE_NOT_SUPPORTED (3) |

mod json;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use rmq_protocol::body::QueueData;
use rmq_protocol::header::{CommandHeader, GetRouteInfoRequestHeader};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::config::BrokerFlavor;
use crate::net::{ConnShared, Handled, Incoming, Service, lock, response};

/// `version` from which the name server always answers standard JSON (V4_9_4).
const STANDARD_JSON_VERSION: i32 = 401;

/// Java `FAQUrl.suggestTodo(APPLY_TOPIC_URL)`.
pub(crate) const FAQ: &str =
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: RequestCode = RequestCode(206);

#[derive(Debug, Clone)]
struct Registration {
    cluster: String,
    addr: String,
    topics: HashMap<String, QueueData>,
}

/// Route tables, shared by the name server's service and the brokers.
#[derive(Debug)]
pub(crate) struct NameServer {
    flavor: BrokerFlavor,
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

    fn route_body(&self, topic: &str, standard: bool) -> Option<Vec<u8>> {
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

    fn cluster_body(&self) -> Vec<u8> {
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

    fn topic_list(&self) -> Vec<u8> {
        let topics: BTreeSet<String> = lock(&self.brokers)
            .values()
            .flat_map(|r| r.topics.keys().cloned())
            .collect();
        json::topic_list(&topics.into_iter().collect::<Vec<_>>())
    }

    fn get_route(&self, cmd: &RemotingCommand) -> RemotingCommand {
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

/// The name server's [`Service`].
#[derive(Debug)]
pub(crate) struct NameServerService(pub(crate) Arc<NameServer>);

impl Service for NameServerService {
    fn handle(&self, incoming: Incoming) -> Option<Handled> {
        let code = incoming.cmd.request_code();
        let answer = match code {
            RequestCode::GET_ROUTEINFO_BY_TOPIC => self.0.get_route(&incoming.cmd),
            RequestCode::GET_BROKER_CLUSTER_INFO => {
                response(ResponseCode::SUCCESS, None).with_body(self.0.cluster_body())
            }
            GET_ALL_TOPIC_LIST_FROM_NAMESERVER => {
                response(ResponseCode::SUCCESS, None).with_body(self.0.topic_list())
            }
            // 4.9.x's name server answers nothing to a code it does not know.
            _ if !self.0.flavor.is_v5() => return None,
            other => not_supported(other),
        };
        incoming.reply(answer)
    }

    fn connection_closed(&self, _conn: &Arc<ConnShared>) {}
}

/// Java's answer to a code without processor.
pub(crate) fn not_supported(code: RequestCode) -> RemotingCommand {
    response(
        ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
        format!(" request type {} not supported", code.0),
    )
}
