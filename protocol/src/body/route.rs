//! [`TopicRouteData`]: the GET_ROUTEINFO_BY_TOPIC answer, and the
//! [`ClusterInfo`] of GET_BROKER_CLUSTER_INFO.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::queue::{MessageQueue, java_string_cmp};

/// Permission bits of a topic or queue (Java `PermName`).
pub mod perm {
    /// Priority.
    pub const PRIORITY: i32 = 0x1 << 3;
    /// Readable: consumers may pull.
    pub const READ: i32 = 0x1 << 2;
    /// Writable: producers may send.
    pub const WRITE: i32 = 0x1 << 1;
    /// Inherit.
    pub const INHERIT: i32 = 0x1;

    /// Whether `perm` has the READ bit.
    pub fn is_readable(perm: i32) -> bool {
        perm & READ == READ
    }

    /// Whether `perm` has the WRITE bit.
    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE == WRITE
    }
}

/// Broker id of a master in [`BrokerData::broker_addrs`] (Java `MixAll.MASTER_ID`).
pub const MASTER_ID: i64 = 0;

/// The route of one topic (Java `TopicRouteData`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    /// `"brokerA:4;brokerB:4"` when the name server has order configuration
    /// for the topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    /// Per-broker queue counts and permissions.
    pub queue_datas: Vec<QueueData>,
    /// Brokers serving the topic and their addresses.
    pub broker_datas: Vec<BrokerData>,
    /// Legacy filter servers: broker address → filter server addresses.
    pub filter_server_table: BTreeMap<String, Vec<String>>,
}

json_body!(TopicRouteData, "TopicRouteData");

impl TopicRouteData {
    /// The queues a producer may send to (Java
    /// `MQClientInstance.topicRouteData2TopicPublishInfo`).
    ///
    /// With a non-empty `orderTopicConf`: for each `name:count` pair, queues
    /// `0..count` on broker `name`, in configuration order (malformed pairs
    /// are skipped). Otherwise, for each queue data sorted by broker name
    /// that is writable and whose broker has a master (id 0), queues
    /// `0..writeQueueNums`.
    pub fn publish_queues(&self, topic: &str) -> Vec<MessageQueue> {
        let mut out = Vec::new();
        if let Some(conf) = self.order_topic_conf.as_deref().filter(|c| !c.is_empty()) {
            for pair in conf.split(';') {
                let mut parts = pair.split(':');
                let (Some(name), Some(count)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let Ok(count) = count.trim().parse::<i32>() else {
                    continue;
                };
                out.extend((0..count).map(|id| MessageQueue::new(topic, name, id)));
            }
            return out;
        }
        let mut datas: Vec<&QueueData> = self.queue_datas.iter().collect();
        datas.sort_by(|a, b| java_string_cmp(&a.broker_name, &b.broker_name));
        for qd in datas {
            if !perm::is_writeable(qd.perm) {
                continue;
            }
            let has_master = self
                .broker_datas
                .iter()
                .find(|bd| bd.broker_name == qd.broker_name)
                .is_some_and(|bd| bd.broker_addrs.contains_key(&MASTER_ID));
            if !has_master {
                continue;
            }
            out.extend(
                (0..qd.write_queue_nums).map(|id| MessageQueue::new(topic, &qd.broker_name, id)),
            );
        }
        out
    }

    /// The queues a consumer may pull from (Java
    /// `MQClientInstance.topicRouteData2TopicSubscribeInfo`): for each
    /// readable queue data, queues `0..readQueueNums`; sorted and without
    /// duplicates.
    pub fn subscribe_queues(&self, topic: &str) -> Vec<MessageQueue> {
        let set: BTreeSet<MessageQueue> = self
            .queue_datas
            .iter()
            .filter(|qd| perm::is_readable(qd.perm))
            .flat_map(|qd| {
                (0..qd.read_queue_nums).map(move |id| MessageQueue::new(topic, &qd.broker_name, id))
            })
            .collect();
        set.into_iter().collect()
    }

    /// The broker entry named `broker_name`.
    pub fn broker(&self, broker_name: &str) -> Option<&BrokerData> {
        self.broker_datas
            .iter()
            .find(|bd| bd.broker_name == broker_name)
    }
}

/// Queue counts and permission of a topic on one broker (Java `QueueData`).
///
/// Decoding accepts `topicSysFlag` and its pre-4.9.0 spelling
/// `topicSynFlag`; encoding writes `topicSysFlag`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "QueueDataWire")]
pub struct QueueData {
    /// Broker name.
    pub broker_name: String,
    /// Permission bits ([`perm`]).
    pub perm: i32,
    /// Queues `0..n` are readable.
    pub read_queue_nums: i32,
    /// Topic sysFlag.
    pub topic_sys_flag: i32,
    /// Queues `0..n` are writable.
    pub write_queue_nums: i32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[derive(Default)]
struct QueueDataWire {
    broker_name: String,
    perm: i32,
    read_queue_nums: i32,
    topic_sys_flag: Option<i32>,
    topic_syn_flag: Option<i32>,
    write_queue_nums: i32,
}

impl From<QueueDataWire> for QueueData {
    fn from(w: QueueDataWire) -> Self {
        QueueData {
            broker_name: w.broker_name,
            perm: w.perm,
            read_queue_nums: w.read_queue_nums,
            topic_sys_flag: w.topic_sys_flag.or(w.topic_syn_flag).unwrap_or(0),
            write_queue_nums: w.write_queue_nums,
        }
    }
}

/// One broker group: its name and the address of each member (Java
/// `BrokerData`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    /// Broker id → `ip:port`; id 0 is the master. Keys arrive quoted or not.
    pub broker_addrs: BTreeMap<i64, String>,
    /// Broker name.
    pub broker_name: String,
    /// Cluster name.
    pub cluster: String,
    /// 5.x: acting-master mode.
    pub enable_acting_master: bool,
    /// 5.x zone name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

impl BrokerData {
    /// The master's address (id 0).
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&MASTER_ID).map(String::as_str)
    }

    /// The master's address, else the address with the lowest id (Java
    /// `BrokerData.selectBrokerAddr` without its random pick).
    pub fn master_or_any_addr(&self) -> Option<&str> {
        self.master_addr()
            .or_else(|| self.broker_addrs.values().next().map(String::as_str))
    }
}

/// The GET_BROKER_CLUSTER_INFO (106) answer (Java `ClusterInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    /// Broker name → broker data.
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    /// Cluster name → broker names.
    pub cluster_addr_table: BTreeMap<String, Vec<String>>,
}

json_body!(ClusterInfo, "ClusterInfo");

#[cfg(test)]
mod tests {
    use super::*;

    fn qd(name: &str, perm: i32, r: i32, w: i32) -> QueueData {
        QueueData {
            broker_name: name.into(),
            perm,
            read_queue_nums: r,
            topic_sys_flag: 0,
            write_queue_nums: w,
        }
    }

    /// The queues as `topic@broker#id`.
    fn names(queues: &[MessageQueue]) -> Vec<String> {
        queues.iter().map(ToString::to_string).collect()
    }

    fn bd(name: &str, ids: &[i64]) -> BrokerData {
        BrokerData {
            broker_addrs: ids
                .iter()
                .map(|&i| (i, format!("10.0.0.{i}:10911")))
                .collect(),
            broker_name: name.into(),
            cluster: "C".into(),
            ..Default::default()
        }
    }

    #[test]
    fn publish_skips_unwritable_and_masterless_brokers() {
        let route = TopicRouteData {
            queue_datas: vec![
                qd("broker-c", perm::READ | perm::WRITE, 2, 2),
                qd("broker-a", perm::READ | perm::WRITE, 4, 2),
                qd("broker-b", perm::READ, 3, 3),
                qd("broker-d", perm::READ | perm::WRITE, 1, 1),
            ],
            broker_datas: vec![
                bd("broker-a", &[0, 1]),
                bd("broker-b", &[0]),
                bd("broker-c", &[0]),
                bd("broker-d", &[1]),
            ],
            ..Default::default()
        };
        let got: Vec<String> = names(&route.publish_queues("T"));
        assert_eq!(
            got,
            [
                "T@broker-a#0",
                "T@broker-a#1",
                "T@broker-c#0",
                "T@broker-c#1"
            ]
        );
        let sub: Vec<String> = names(&route.subscribe_queues("T"));
        assert_eq!(sub.len(), 4 + 3 + 2 + 1);
        assert_eq!(sub.first().map(String::as_str), Some("T@broker-a#0"));
        assert_eq!(sub.last().map(String::as_str), Some("T@broker-d#0"));
    }

    #[test]
    fn publish_follows_order_topic_conf() {
        let route = TopicRouteData {
            order_topic_conf: Some("broker-b:2;broker-a:1;bad;x:y".into()),
            queue_datas: vec![qd("broker-a", 0, 8, 8)],
            ..Default::default()
        };
        let got: Vec<String> = names(&route.publish_queues("T"));
        assert_eq!(got, ["T@broker-b#0", "T@broker-b#1", "T@broker-a#0"]);
    }

    #[test]
    fn master_or_any() {
        assert_eq!(
            bd("b", &[2, 1]).master_or_any_addr(),
            Some("10.0.0.1:10911")
        );
        assert_eq!(
            bd("b", &[0, 1]).master_or_any_addr(),
            Some("10.0.0.0:10911")
        );
        assert_eq!(bd("b", &[]).master_or_any_addr(), None);
    }
}
