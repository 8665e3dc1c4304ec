//! Checks every strategy against allocations computed by the real Java client
//! (`org.apache.rocketmq:rocketmq-client` 5.5.0), stored in
//! `tests/data/java_vectors.json` by `tests/java/AllocVectors.java` (see
//! `tests/data/README.md` to regenerate).

use std::collections::BTreeMap;
use std::sync::Arc;

use rmq_protocol::MessageQueue;
use rmq_rebalance::{
    AllocateAveragely, AllocateAveragelyByCircle, AllocateByMachineRoom, AllocateConsistentHash,
    AllocateMachineRoomNearby, AllocateStrategy, MachineRoomResolver, sort_consumer_ids,
    sort_queues,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Vectors {
    rocketmq_client: String,
    inputs: Vec<Input>,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    topic: String,
    /// Unsorted queues as (broker name, queue id).
    mqs: Vec<(String, i32)>,
    /// Unsorted consumer ids.
    cids: Vec<String>,
    /// Indices into `mqs` in Java's sorted order.
    mq_order: Vec<usize>,
    /// Indices into `cids` in Java's sorted order.
    cid_order: Vec<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Case {
    input: usize,
    strategy: String,
    virtual_nodes: Option<usize>,
    consumeridcs: Option<Vec<String>>,
    inner: Option<String>,
    /// `results[k]`: indices into `mqs` allocated to `cids[k]`, in Java's order.
    results: Vec<Vec<usize>>,
}

/// The resolver AllocVectors.java uses: broker room = text before the first
/// '@' of the broker name, consumer room = text before the first '-'.
#[derive(Debug)]
struct PrefixResolver;

impl MachineRoomResolver for PrefixResolver {
    fn broker_deploy_in(&self, queue: &MessageQueue) -> Option<String> {
        queue.broker_name.split('@').next().map(String::from)
    }

    fn consumer_deploy_in(&self, client_id: &str) -> Option<String> {
        client_id.split('-').next().map(String::from)
    }
}

fn load() -> Vectors {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/java_vectors.json");
    let text = std::fs::read_to_string(path).expect("read java_vectors.json");
    serde_json::from_str(&text).expect("parse java_vectors.json")
}

fn simple(name: &str, virtual_nodes: Option<usize>) -> Arc<dyn AllocateStrategy> {
    match name {
        "AVG" => Arc::new(AllocateAveragely),
        "AVG_BY_CIRCLE" => Arc::new(AllocateAveragelyByCircle),
        "CONSISTENT_HASH" => Arc::new(AllocateConsistentHash::new(
            virtual_nodes.expect("consistent hash case without virtualNodes"),
        )),
        other => panic!("unknown strategy {other}"),
    }
}

fn strategy(case: &Case) -> Arc<dyn AllocateStrategy> {
    match case.strategy.as_str() {
        "MACHINE_ROOM" => Arc::new(AllocateByMachineRoom::new(
            case.consumeridcs
                .clone()
                .expect("MACHINE_ROOM case without consumeridcs"),
        )),
        s if s.starts_with("MACHINE_ROOM_NEARBY-") => {
            let inner = case.inner.as_deref().expect("nearby case without inner");
            Arc::new(AllocateMachineRoomNearby::new(
                simple(inner, case.virtual_nodes),
                Arc::new(PrefixResolver),
            ))
        }
        s => simple(s, case.virtual_nodes),
    }
}

#[test]
fn sort_helpers_match_java_collections_sort() {
    let v = load();
    for (i, input) in v.inputs.iter().enumerate() {
        let mut mqs: Vec<MessageQueue> = input
            .mqs
            .iter()
            .map(|(b, q)| MessageQueue::new(input.topic.clone(), b.clone(), *q))
            .collect();
        let java: Vec<MessageQueue> = input.mq_order.iter().map(|&k| mqs[k].clone()).collect();
        sort_queues(&mut mqs);
        assert_eq!(mqs, java, "input {i}: queue order differs from Java");

        let mut cids = input.cids.clone();
        let java: Vec<String> = input.cid_order.iter().map(|&k| cids[k].clone()).collect();
        sort_consumer_ids(&mut cids);
        assert_eq!(cids, java, "input {i}: consumer id order differs from Java");
    }
}

#[test]
fn strategies_match_java_client() {
    let v = load();
    assert_eq!(v.rocketmq_client, "5.5.0");
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (ci, case) in v.cases.iter().enumerate() {
        let input = &v.inputs[case.input];
        let raw: Vec<MessageQueue> = input
            .mqs
            .iter()
            .map(|(b, q)| MessageQueue::new(input.topic.clone(), b.clone(), *q))
            .collect();
        // Build the sorted inputs with our own helpers (checked against Java
        // order in the other test).
        let mut mq_all = raw.clone();
        sort_queues(&mut mq_all);
        let mut cid_all = input.cids.clone();
        sort_consumer_ids(&mut cid_all);

        let s = strategy(case);
        assert_eq!(
            s.name(),
            case.strategy,
            "case {ci}: name differs from Java getName()"
        );
        assert_eq!(case.results.len(), input.cids.len(), "case {ci}: malformed");
        for (k, cid) in input.cids.iter().enumerate() {
            let got: Vec<usize> = s
                .allocate("please_rename_unique_group_name", cid, &mq_all, &cid_all)
                .unwrap_or_else(|e| panic!("case {ci}: {cid}: {e}"))
                .iter()
                .map(|mq| {
                    raw.iter()
                        .position(|r| r == mq)
                        .expect("queue not in input")
                })
                .collect();
            if got != case.results[k] {
                failures.push(format!(
                    "case {ci} ({} vn={:?} input {}): cid {cid:?}: rust {got:?} != java {:?}",
                    case.strategy, case.virtual_nodes, case.input, case.results[k]
                ));
            }
        }
        let key = match case.virtual_nodes {
            Some(vn) => format!("{}/{vn}", case.strategy),
            None => case.strategy.clone(),
        };
        *checked.entry(key).or_default() += 1;
    }
    assert!(
        failures.is_empty(),
        "{} mismatches with Java:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The file covers every strategy the grid promises.
    for key in [
        "AVG",
        "AVG_BY_CIRCLE",
        "CONSISTENT_HASH/10",
        "CONSISTENT_HASH/3",
        "CONSISTENT_HASH/0",
        "MACHINE_ROOM",
        "MACHINE_ROOM_NEARBY-AVG",
    ] {
        assert!(
            checked.get(key).copied().unwrap_or(0) > 0,
            "no vectors for {key}: {checked:?}"
        );
    }
    eprintln!("checked against Java: {checked:?}");
}
