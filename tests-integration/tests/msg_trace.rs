//! RocketMQ message trace (Java `AsyncTraceDispatcher` records): a message sent by a producer
//! with `enable_trace(true)` and consumed by a push consumer with trace on has its Pub,
//! SubBefore and SubAfter records in `RMQ_SYS_TRACE_TOPIC`, as `mqadmin queryMsgTraceById`
//! shows them; the records pulled from the trace topic decode with rmq's decoder.

use std::sync::Arc;
use std::time::Duration;

use rmq_producer::{Message, Producer};
use rmq_protocol::trace::{TRACE_TOPIC, TraceRecord, decode};
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, poll_until, within};

/// `mqadmin queryMsgTraceById -i ID` of the running instance.
async fn query_trace(msg_id: &str) -> String {
    let out = tokio::process::Command::new(rmq_testkit::script_path())
        .args(["admin", "queryMsgTraceById", "-i", msg_id])
        .output()
        .await
        .expect("scripts/rocketmq-local.sh admin runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pub_and_sub_records_reach_the_trace_topic() {
    within(TEST_TIMEOUT, async {
        const N: usize = 3;
        let env = Env::new().await;
        let topic = env.topic("msg_trace", 2).await;
        let pg = rmq_testkit::unique_name("trace_pg");
        let cg = rmq_testkit::unique_name("trace_cg");
        let producer = Producer::builder()
            .group(pg.clone())
            .namesrv_addr(env.namesrv().to_owned())
            .enable_trace(true)
            .start()
            .await
            .expect("producer starts");
        let mut ids = Vec::new();
        for i in 0..N {
            let msg = Message::new(&topic, format!("body-{i}"))
                .with_tags("TagT")
                .with_key(format!("trace-key-{i}"));
            ids.push(producer.send(msg).await.expect("sent").msg_id);
        }
        producer.shutdown().await.expect("producer shutdown");

        let rec = Arc::new(Recorder::new());
        let c = ConsumerSpec::new(env.namesrv(), &cg, &topic)
            .builder()
            .enable_trace(true)
            .start(consumer::recording(rec.clone(), 0, |_, _| false))
            .await
            .expect("consumer starts");
        rec.wait_distinct(N, Duration::from_secs(60)).await;
        c.shutdown().await.expect("clean shutdown");

        let id = ids[0].clone();
        let out = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(500),
            "queryMsgTraceById shows the Pub and Sub rows",
            || {
                let (id, pg, cg) = (id.clone(), pg.clone(), cg.clone());
                async move {
                    let out = query_trace(&id).await;
                    // mqadmin joins a SubBefore and its SubAfter into one `Sub` row.
                    let all = ["\nPub ", "\nSub "].iter().all(|t| out.contains(t));
                    if all && out.contains(&pg) && out.contains(&cg) {
                        Ok(out)
                    } else {
                        Err(out)
                    }
                }
            },
        )
        .await;
        println!("{out}");

        // rmq's decoder reads the trace topic's records of these messages.
        let mut seen: Vec<TraceRecord> = Vec::new();
        for q in 0..8 {
            for m in env.pull_all(TRACE_TOPIC, q).await {
                let body = String::from_utf8_lossy(&m.message.body).into_owned();
                let records = decode(&body).expect("trace records decode");
                seen.extend(
                    records
                        .into_iter()
                        .filter(|r| ids.iter().any(|i| i == r.msg_id())),
                );
            }
        }
        for id in &ids {
            for kind in ["Pub", "SubBefore", "SubAfter"] {
                assert!(
                    seen.iter()
                        .any(|r| r.msg_id() == id && r.type_name() == kind),
                    "{kind} record of {id} in {TRACE_TOPIC}: {seen:?}"
                );
            }
        }
        for r in &seen {
            match r {
                TraceRecord::Pub(p) => {
                    assert_eq!(
                        (p.group.as_str(), p.topic.as_str()),
                        (pg.as_str(), topic.as_str())
                    );
                    assert_eq!(p.tags, "TagT");
                    assert!(p.keys.starts_with("trace-key-") && p.success, "{p:?}");
                }
                TraceRecord::SubBefore(b) => assert_eq!(b.group, cg),
                TraceRecord::SubAfter(a) => {
                    assert!(a.success, "{a:?}");
                    assert_eq!(a.group.as_deref(), Some(cg.as_str()));
                }
                other => panic!("unexpected record {other:?}"),
            }
        }
        env.shutdown().await;
    })
    .await;
}
