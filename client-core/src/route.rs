//! [`TopicRouteInfo`] (one topic's route and its derived queues) and the
//! route snapshot: topic → route plus the broker address table, swapped
//! whole on every change.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rmq_protocol::MessageQueue;
use rmq_protocol::body::{MASTER_ID, TopicRouteData};

/// One topic's route as the name server reported it, with the queues
/// derived from it (Java `TopicPublishInfo` + the subscribe info).
///
/// Immutable; the route table swaps in a new `Arc<TopicRouteInfo>` when the
/// route changes, so a reader's `Arc` stays consistent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRouteInfo {
    topic: String,
    data: TopicRouteData,
    publish_queues: Vec<MessageQueue>,
    subscribe_queues: Vec<MessageQueue>,
}

impl TopicRouteInfo {
    /// Derives the queues of `topic` from `data` (Java
    /// `topicRouteData2TopicPublishInfo` / `...SubscribeInfo`). The data is
    /// normalized (queue and broker entries sorted by broker name), so two
    /// answers that differ only in order compare equal.
    pub fn new(topic: impl Into<String>, mut data: TopicRouteData) -> Self {
        let topic = topic.into();
        normalize(&mut data);
        TopicRouteInfo {
            publish_queues: data.publish_queues(&topic),
            subscribe_queues: data.subscribe_queues(&topic),
            topic,
            data,
        }
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The route data (normalized: entries sorted by broker name).
    pub fn route_data(&self) -> &TopicRouteData {
        &self.data
    }

    /// Whether the route came with an `orderTopicConf` (ordered topic).
    pub fn is_order_topic(&self) -> bool {
        self.data
            .order_topic_conf
            .as_deref()
            .is_some_and(|c| !c.is_empty())
    }

    /// Writable queues in the Java client's order: per `orderTopicConf`
    /// when present, else brokers sorted by name, queue ids ascending; only
    /// writable entries of brokers with a master.
    pub fn publish_queues(&self) -> &[MessageQueue] {
        &self.publish_queues
    }

    /// Readable queues, sorted like Java's `MessageQueue.compareTo`.
    pub fn subscribe_queues(&self) -> &[MessageQueue] {
        &self.subscribe_queues
    }

    /// The names of the brokers in the route, sorted.
    pub fn broker_names(&self) -> impl Iterator<Item = &str> {
        self.data
            .broker_datas
            .iter()
            .map(|b| b.broker_name.as_str())
    }
}

/// Sorts queue and broker entries by broker name (Java
/// `topicRouteDataChanged` compares sorted copies).
fn normalize(data: &mut TopicRouteData) {
    data.queue_datas
        .sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    data.broker_datas
        .sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
}

/// broker name → broker id → address.
pub(crate) type BrokerAddrTable =
    HashMap<String, BTreeMap<i64, String>, foldhash::fast::RandomState>;

/// The immutable route state readers load from the `ArcSwap`.
#[derive(Debug, Default, Clone)]
pub(crate) struct RouteSnapshot {
    /// topic → route.
    pub(crate) topics: HashMap<String, Arc<TopicRouteInfo>, foldhash::fast::RandomState>,
    /// broker name → the addresses of the route fetched last that lists
    /// the broker (Java's `brokerAddrTable`: a changed route replaces its
    /// brokers' entries, so a stale route of another topic cannot bring back
    /// a dead master); brokers in no route are absent.
    pub(crate) brokers: BrokerAddrTable,
}

impl RouteSnapshot {
    /// The snapshot with `info` as the route of its topic, or `None` when
    /// the cached route is equal (nothing to swap).
    pub(crate) fn with_route(&self, info: TopicRouteInfo) -> Option<RouteSnapshot> {
        if self
            .topics
            .get(info.topic())
            .is_some_and(|old| **old == info)
        {
            return None;
        }
        let mut brokers = self.brokers.clone();
        for bd in &info.route_data().broker_datas {
            brokers.insert(bd.broker_name.clone(), bd.broker_addrs.clone());
        }
        let mut topics = self.topics.clone();
        topics.insert(info.topic().to_owned(), Arc::new(info));
        brokers.retain(|name, ids| {
            !ids.is_empty()
                && topics.values().any(|r| {
                    r.route_data()
                        .broker_datas
                        .iter()
                        .any(|bd| bd.broker_name == *name)
                })
        });
        Some(RouteSnapshot { topics, brokers })
    }

    /// The master address of `broker_name` (Java
    /// `findBrokerAddressInPublish`).
    pub(crate) fn find_broker_addr_in_publish(&self, broker_name: &str) -> Option<String> {
        self.brokers
            .get(broker_name)
            .and_then(|ids| ids.get(&MASTER_ID))
            .cloned()
    }

    /// An address of `broker_name` to pull from, and whether it is a slave
    /// (Java `findBrokerAddressInSubscribe`): the address of `broker_id`;
    /// else, for a slave id, of `broker_id + 1`; else, unless
    /// `only_this_broker`, any address (the lowest id).
    pub(crate) fn find_broker_addr_in_subscribe(
        &self,
        broker_name: &str,
        broker_id: i64,
        only_this_broker: bool,
    ) -> Option<(String, bool)> {
        let ids = self.brokers.get(broker_name).filter(|m| !m.is_empty())?;
        if let Some(addr) = ids.get(&broker_id) {
            return Some((addr.clone(), broker_id != MASTER_ID));
        }
        if broker_id != MASTER_ID {
            let next = broker_id.saturating_add(1);
            if let Some(addr) = ids.get(&next) {
                return Some((addr.clone(), next != MASTER_ID));
            }
        }
        if only_this_broker {
            return None;
        }
        ids.iter()
            .next()
            .map(|(id, addr)| (addr.clone(), *id != MASTER_ID))
    }

    /// Whether `addr` is a slave's (a non-zero id) in the broker address
    /// table; unknown addresses count as masters.
    pub(crate) fn is_slave_addr(&self, addr: &str) -> bool {
        self.brokers
            .values()
            .flat_map(|ids| ids.iter())
            .any(|(id, a)| *id != MASTER_ID && a == addr)
    }

    /// Every broker address: `(broker_name, id, addr)`, sorted.
    pub(crate) fn broker_addrs(&self) -> Vec<(String, i64, String)> {
        let mut out: Vec<(String, i64, String)> = self
            .brokers
            .iter()
            .flat_map(|(name, ids)| {
                ids.iter()
                    .map(move |(id, addr)| (name.clone(), *id, addr.clone()))
            })
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::body::{BrokerData, QueueData, perm};

    use super::*;

    fn qd(name: &str, n: i32) -> QueueData {
        QueueData {
            broker_name: name.into(),
            perm: perm::READ | perm::WRITE,
            read_queue_nums: n,
            topic_sys_flag: 0,
            write_queue_nums: n,
        }
    }

    fn bd(name: &str, addrs: &[(i64, &str)]) -> BrokerData {
        BrokerData {
            broker_addrs: addrs.iter().map(|(i, a)| (*i, (*a).to_owned())).collect(),
            broker_name: name.into(),
            cluster: "C".into(),
            ..Default::default()
        }
    }

    fn route(brokers: &[(&str, &[(i64, &str)])], queues: i32) -> TopicRouteData {
        TopicRouteData {
            queue_datas: brokers.iter().map(|(n, _)| qd(n, queues)).collect(),
            broker_datas: brokers.iter().map(|(n, a)| bd(n, a)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn derived_queues() {
        let info = TopicRouteInfo::new("T", route(&[("b", &[(0, "b0")]), ("a", &[(0, "a0")])], 2));
        let names: Vec<String> = info
            .publish_queues()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, ["T@a#0", "T@a#1", "T@b#0", "T@b#1"]);
        assert_eq!(info.subscribe_queues().len(), 4);
        assert!(!info.is_order_topic());
        assert_eq!(info.broker_names().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn same_route_in_another_order_does_not_swap() {
        let snap = RouteSnapshot::default();
        let r1 = route(&[("a", &[(0, "a0")]), ("b", &[(0, "b0")])], 4);
        let snap = snap.with_route(TopicRouteInfo::new("T", r1)).unwrap();
        let r2 = route(&[("b", &[(0, "b0")]), ("a", &[(0, "a0")])], 4);
        assert!(snap.with_route(TopicRouteInfo::new("T", r2)).is_none());
        let r3 = route(&[("a", &[(0, "a0")]), ("b", &[(0, "b0")])], 8);
        assert!(snap.with_route(TopicRouteInfo::new("T", r3)).is_some());
    }

    #[test]
    fn brokers_in_no_route_are_pruned() {
        let snap = RouteSnapshot::default()
            .with_route(TopicRouteInfo::new(
                "T1",
                route(&[("a", &[(0, "a0"), (1, "a1")]), ("b", &[(0, "b0")])], 4),
            ))
            .unwrap()
            .with_route(TopicRouteInfo::new("T2", route(&[("a", &[(0, "a0")])], 4)))
            .unwrap();
        // T2, fetched last, says a1 is gone.
        assert_eq!(snap.broker_addrs().len(), 2);
        // broker-b stops: T1's route no longer lists it.
        let snap = snap
            .with_route(TopicRouteInfo::new("T1", route(&[("a", &[(0, "a0")])], 4)))
            .unwrap();
        assert_eq!(snap.broker_addrs(), [("a".to_owned(), 0, "a0".to_owned())]);
        assert_eq!(snap.find_broker_addr_in_publish("b"), None);
    }

    #[test]
    fn a_stale_route_of_another_topic_does_not_bring_back_a_dead_master() {
        // T1 was cached before the master a0 died; its refresh then failed
        // (the new master does not know T1 yet), so it keeps the old route.
        let stale = route(&[("a", &[(0, "a0"), (1, "a1")])], 4);
        let fresh = route(&[("a", &[(0, "a1")])], 4);
        let snap = RouteSnapshot::default()
            .with_route(TopicRouteInfo::new("T1", stale.clone()))
            .unwrap()
            .with_route(TopicRouteInfo::new("T2", fresh))
            .unwrap();
        assert_eq!(snap.find_broker_addr_in_publish("a").as_deref(), Some("a1"));
        assert_eq!(snap.broker_addrs(), [("a".to_owned(), 0, "a1".to_owned())]);
        // Many topics: the outcome does not hang on the map's order.
        let mut snap = RouteSnapshot::default();
        for i in 0..32 {
            snap = snap
                .with_route(TopicRouteInfo::new(format!("S{i}"), stale.clone()))
                .unwrap();
        }
        let snap = snap
            .with_route(TopicRouteInfo::new("T2", route(&[("a", &[(0, "a1")])], 4)))
            .unwrap();
        assert_eq!(snap.find_broker_addr_in_publish("a").as_deref(), Some("a1"));
        let sub = snap.find_broker_addr_in_subscribe("a", 1, false);
        assert_eq!(sub, Some(("a1".into(), false)));
    }

    #[test]
    fn address_lookup_rules() {
        let snap = RouteSnapshot::default()
            .with_route(TopicRouteInfo::new(
                "T",
                route(
                    &[
                        ("a", &[(0, "a0"), (1, "a1")]),
                        ("s", &[(2, "s2"), (3, "s3")]),
                    ],
                    1,
                ),
            ))
            .unwrap();
        assert_eq!(snap.find_broker_addr_in_publish("a").as_deref(), Some("a0"));
        assert_eq!(snap.find_broker_addr_in_publish("s"), None);
        assert_eq!(snap.find_broker_addr_in_publish("x"), None);
        let sub = |n, id, only| snap.find_broker_addr_in_subscribe(n, id, only);
        assert_eq!(sub("a", 0, false), Some(("a0".into(), false)));
        assert_eq!(sub("a", 1, true), Some(("a1".into(), true)));
        // Slave 1 missing: try 2.
        assert_eq!(sub("s", 1, true), Some(("s2".into(), true)));
        // Master missing, only this broker: none; else any (lowest id).
        assert_eq!(sub("s", 0, true), None);
        assert_eq!(sub("s", 0, false), Some(("s2".into(), true)));
        assert_eq!(sub("a", 5, false), Some(("a0".into(), false)));
        assert_eq!(sub("x", 0, false), None);
    }
}
