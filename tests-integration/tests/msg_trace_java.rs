//! RocketMQ message trace written by the official Java client (`bench/peers/java`
//! `rmqbench.TracePeer`, of the broker's version: a `DefaultMQProducer` and a
//! `DefaultMQPushConsumer` with trace on) decodes with rmq's decoder: the Pub, SubBefore and
//! SubAfter records of every message the Java client sent and consumed, with the fields it set.
//! (The other direction, the Java tools reading rmq's records, is `msg_trace.rs`'s
//! `mqadmin queryMsgTraceById`.)

use std::collections::HashMap;
use std::time::Duration;

use rmq_protocol::trace::{TRACE_TOPIC, TraceRecord, decode};
use rmq_tests_integration::java_peer::{self, JavaProcess};
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

/// The records of `TRACE_TOPIC` about the messages `ids`.
async fn records_of(env: &Env, ids: &[String]) -> Vec<TraceRecord> {
    let mut seen = Vec::new();
    for q in 0..8 {
        for m in env.pull_all(TRACE_TOPIC, q).await {
            let body = String::from_utf8_lossy(&m.message.body).into_owned();
            let records =
                decode(&body).unwrap_or_else(|e| panic!("trace records decode: {e}: {body:?}"));
            seen.extend(
                records
                    .into_iter()
                    .filter(|r| ids.iter().any(|i| i == r.msg_id())),
            );
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_the_java_client_wrote_decode_with_rmq() {
    within(TEST_TIMEOUT, async {
        const N: usize = 3;
        let env = Env::new().await;
        let classpath = java_peer::classpath_for(&env).await;
        let topic = env.topic("trace_java", 2).await;
        let pg = rmq_testkit::unique_name("trace_java_pg");
        let cg = rmq_testkit::unique_name("trace_java_cg");
        let home = tempfile::tempdir().expect("temp dir");
        let n = N.to_string();
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqbench.TracePeer",
            &[env.namesrv(), &topic, &pg, &cg, &n],
            home.path(),
        );
        java.wait_for(
            Duration::from_secs(150),
            "the Java producer and consumer done",
            |l| l.iter().any(|l| l == "DONE" || l == "TIMEOUT"),
        )
        .await;
        let lines = java.lines();
        assert!(
            !lines.iter().any(|l| l == "TIMEOUT"),
            "the Java consumer got every message: {lines:?}"
        );
        let keys: HashMap<String, String> = lines
            .iter()
            .filter_map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                match w.as_slice() {
                    ["SENT", id, key] => Some(((*id).to_owned(), (*key).to_owned())),
                    _ => None,
                }
            })
            .collect();
        assert_eq!(keys.len(), N, "one SENT line per message: {lines:?}");
        let ids: Vec<String> = keys.keys().cloned().collect();

        // The Java dispatchers write the records in the background (batches, every 100 ms or
        // so) while the peer stays up.
        let seen = poll_until(
            Duration::from_secs(90),
            Duration::from_millis(500),
            "the Java client's Pub, SubBefore and SubAfter records in the trace topic",
            || {
                let ids = ids.clone();
                let env = &env;
                async move {
                    let seen = records_of(env, &ids).await;
                    let all = ids.iter().all(|id| {
                        ["Pub", "SubBefore", "SubAfter"]
                            .iter()
                            .all(|k| seen.iter().any(|r| r.msg_id() == id && r.type_name() == *k))
                    });
                    if all { Ok(seen) } else { Err(seen) }
                }
            },
        )
        .await;
        for r in &seen {
            let key = keys.get(r.msg_id()).map(String::as_str);
            match r {
                TraceRecord::Pub(p) => {
                    assert_eq!(
                        (p.group.as_str(), p.topic.as_str(), p.tags.as_str()),
                        (pg.as_str(), topic.as_str(), "TagJ"),
                        "{p:?}"
                    );
                    assert_eq!(Some(p.keys.as_str()), key, "{p:?}");
                    assert!(p.success, "{p:?}");
                    assert_eq!(p.body_length, 6, "body java-<i>: {p:?}");
                }
                TraceRecord::SubBefore(b) => {
                    assert_eq!(b.group, cg, "{b:?}");
                    assert_eq!(b.retry_times, 0, "{b:?}");
                }
                TraceRecord::SubAfter(a) => {
                    assert!(a.success, "{a:?}");
                    if let Some(group) = &a.group {
                        assert_eq!(group, &cg, "{a:?}");
                    }
                }
                other => panic!("unexpected record {other:?}"),
            }
        }
        println!("{} records of the Java client decoded", seen.len());
        drop(java);
        env.shutdown().await;
    })
    .await;
}
