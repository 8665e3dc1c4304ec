//! The name server's JSON bodies as fastjson writes them: keys in
//! alphabetical order, and the broker-id map keys unquoted (`{0:"…"}`)
//! unless the client asked for standard JSON (Java
//! `SerializerFeature.BrowserCompatible`).

use std::collections::BTreeMap;
use std::fmt::Write;

use rmq_protocol::body::QueueData;

use crate::config::BrokerFlavor;

/// One registered broker as the bodies list it.
#[derive(Debug, Clone)]
pub(crate) struct BrokerView<'a> {
    pub(crate) name: &'a str,
    pub(crate) cluster: &'a str,
    pub(crate) addr: &'a str,
}

fn quote(s: &str) -> String {
    // serde_json never fails on a `&str`.
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

fn broker_data(out: &mut String, b: &BrokerView<'_>, standard: bool, flavor: BrokerFlavor) {
    let key = if standard { "\"0\"" } else { "0" };
    let _ = write!(
        out,
        "{{\"brokerAddrs\":{{{key}:{}}},\"brokerName\":{},\"cluster\":{}",
        quote(b.addr),
        quote(b.name),
        quote(b.cluster)
    );
    if flavor.is_v5() {
        out.push_str(",\"enableActingMaster\":false");
    }
    out.push('}');
}

fn queue_data(out: &mut String, q: &QueueData) {
    let _ = write!(
        out,
        "{{\"brokerName\":{},\"perm\":{},\"readQueueNums\":{},\"topicSysFlag\":{},\"writeQueueNums\":{}}}",
        quote(&q.broker_name),
        q.perm,
        q.read_queue_nums,
        q.topic_sys_flag,
        q.write_queue_nums
    );
}

/// A `TopicRouteData` body.
pub(crate) fn route(
    brokers: &[BrokerView<'_>],
    queues: &[QueueData],
    standard: bool,
    flavor: BrokerFlavor,
) -> Vec<u8> {
    let mut out = String::from("{\"brokerDatas\":[");
    for (i, b) in brokers.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        broker_data(&mut out, b, standard, flavor);
    }
    out.push_str("],\"filterServerTable\":{},\"queueDatas\":[");
    for (i, q) in queues.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        queue_data(&mut out, q);
    }
    out.push_str("]}");
    out.into_bytes()
}

/// A `ClusterInfo` body (always fastjson's default, non-standard form).
pub(crate) fn cluster_info(brokers: &[BrokerView<'_>], flavor: BrokerFlavor) -> Vec<u8> {
    let mut out = String::from("{\"brokerAddrTable\":{");
    let mut clusters: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, b) in brokers.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}:", quote(b.name));
        broker_data(&mut out, b, false, flavor);
        clusters.entry(b.cluster).or_default().push(b.name);
    }
    out.push_str("},\"clusterAddrTable\":{");
    for (i, (cluster, names)) in clusters.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let names: Vec<String> = names.iter().map(|n| quote(n)).collect();
        let _ = write!(out, "{}:[{}]", quote(cluster), names.join(","));
    }
    out.push_str("}}");
    out.into_bytes()
}

/// A `TopicList` body.
pub(crate) fn topic_list(topics: &[String]) -> Vec<u8> {
    let names: Vec<String> = topics.iter().map(|t| quote(t)).collect();
    format!("{{\"topicList\":[{}]}}", names.join(",")).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::body::{ClusterInfo, TopicRouteData};

    #[test]
    fn route_matches_the_golden_capture() {
        let b = [BrokerView {
            name: "broker-a",
            cluster: "DefaultCluster",
            addr: "127.0.0.1:10911",
        }];
        let q = [QueueData {
            broker_name: "broker-a".into(),
            perm: 6,
            read_queue_nums: 4,
            topic_sys_flag: 0,
            write_queue_nums: 4,
        }];
        // Byte for byte what 5.5.0 sent (protocol/tests/data/v5-route-*.bin).
        assert_eq!(
            String::from_utf8(route(&b, &q, false, BrokerFlavor::V5)).unwrap(),
            r#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        let standard = route(&b, &q, true, BrokerFlavor::V4_9);
        assert_eq!(
            String::from_utf8(standard.clone()).unwrap(),
            r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        assert_eq!(
            TopicRouteData::decode(&standard)
                .unwrap()
                .publish_queues("T")
                .len(),
            4
        );
        let info = ClusterInfo::decode(&cluster_info(&b, BrokerFlavor::V5)).unwrap();
        assert_eq!(info.cluster_addr_table["DefaultCluster"], ["broker-a"]);
        assert_eq!(
            info.broker_addr_table["broker-a"].master_addr(),
            Some("127.0.0.1:10911")
        );
    }
}
