//! `rmq topic list|create|describe|delete` and `rmq cluster`, `rmq bench`.

use crate::support::{broker, fails, ok, topic};

#[test]
fn create_list_describe_delete() {
    let t = topic("cli_topic", 3);
    let listed = ok(&["topic", "list"]);
    assert!(
        listed.lines().contains(&t.as_str()),
        "{t} not in {}",
        listed.stdout
    );
    assert!(!listed.lines().contains(&"TBW102"), "system topics hidden");
    let all: Vec<String> =
        serde_json::from_str(ok(&["topic", "list", "--all", "--json"]).stdout.trim()).unwrap();
    assert!(all.contains(&t) && all.iter().any(|x| x == "TBW102"));

    ok(&["produce", &t, "x", "y"]);
    let d = ok(&["topic", "describe", &t]);
    let b = &broker().broker_name;
    assert!(
        d.stdout.contains(&format!(
            "broker {b} {}: 3 read / 3 write queues, perm rw-",
            broker().broker_addr
        )),
        "{}",
        d.stdout
    );
    assert!(d.stdout.contains("MIN_OFFSET  MAX_OFFSET"), "{}", d.stdout);
    assert!(d.stdout.contains("total messages: 2"), "{}", d.stdout);
    let v: serde_json::Value =
        serde_json::from_str(ok(&["topic", "describe", &t, "--json"]).stdout.trim()).unwrap();
    assert_eq!(v["queues"].as_array().unwrap().len(), 3);
    assert_eq!(v["messages"], 2);

    let refused = fails(&["topic", "delete", &t], 1);
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);
    ok(&["topic", "delete", &t, "--yes"]);
    assert!(!ok(&["topic", "list"]).lines().contains(&t.as_str()));
    let gone = fails(&["topic", "describe", &t], 1);
    assert!(
        gone.stderr.contains("no route for topic"),
        "{}",
        gone.stderr
    );
    let bad = fails(&["topic", "create", "x", "--broker", "no-such-broker"], 2);
    assert!(
        bad.stderr.contains("no master broker named"),
        "{}",
        bad.stderr
    );
}

#[test]
fn cluster_lists_the_brokers_with_their_version() {
    let b = broker();
    let out = ok(&["cluster"]);
    let row = out
        .lines()
        .into_iter()
        .find(|l| l.contains(&b.broker_addr))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(
        row.starts_with(&b.cluster) && row.contains(&b.broker_name),
        "{row}"
    );
    assert!(row.contains(&b.version), "{row} lacks {}", b.version);
    let v: serde_json::Value =
        serde_json::from_str(ok(&["cluster", "--json"]).stdout.trim()).unwrap();
    assert!(
        v["brokers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["addr"] == b.broker_addr.as_str() && x["id"] == 0)
    );
}

#[test]
fn bench_produces_consumes_and_cleans_up() {
    let out = ok(&["bench", "--count", "500", "--size", "100", "--queues", "2"]);
    let topic = out.stdout.split_whitespace().nth(1).unwrap().to_owned();
    assert!(topic.starts_with("rmq_bench_"), "{}", out.stdout);
    assert!(
        out.stdout.contains("produce: sent 500 messages (0 failed)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("latency: p50"), "{}", out.stdout);
    assert!(
        out.stdout.contains("consume: 500 messages in"),
        "{}",
        out.stdout
    );
    assert!(
        !ok(&["topic", "list", "--all"])
            .lines()
            .contains(&topic.as_str()),
        "scratch topic deleted"
    );
}
