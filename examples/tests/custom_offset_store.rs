//! `examples/custom_offset_store.rs`'s SQLite store against the real broker:
//! a push consumer restarted on the store resumes exactly after the last
//! committed message, and the broker's own offsets of the group stay
//! untouched.

#[path = "../sqlite_offset_store.rs"]
mod sqlite_offset_store;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq::prelude::*;
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};
use sqlite_offset_store::SqliteOffsetStore;
use tokio::sync::Notify;

const QUEUES: i32 = 4;

/// Consumes with `store` until `want` distinct bodies arrived, then shuts
/// the consumer down (persisting into the store); returns every delivery.
async fn run(
    store: SqliteOffsetStore,
    env: &Env,
    topic: &str,
    group: &str,
    want: usize,
) -> Vec<String> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let enough = Arc::new(Notify::new());
    let (sink, signal) = (got.clone(), enough.clone());
    let consumer = PushConsumer::builder()
        .group(group)
        .namesrv_addr(env.namesrv())
        .subscribe(topic, "*")
        .consume_from(ConsumeFrom::FirstOffset)
        .offset_store(store)
        .start(listener_fn(move |msgs, _ctx| {
            let (sink, signal) = (sink.clone(), signal.clone());
            Box::pin(async move {
                let mut got = sink.lock().unwrap();
                got.extend(
                    msgs.iter()
                        .map(|m| String::from_utf8_lossy(&m.body).into_owned()),
                );
                if got.iter().collect::<BTreeSet<_>>().len() >= want {
                    signal.notify_one();
                }
                ConsumeResult::Success
            })
        }))
        .await
        .expect("consumer starts");
    tokio::time::timeout(Duration::from_secs(60), enough.notified())
        .await
        .unwrap_or_else(|_| panic!("{want} messages did not arrive within 60 s"));
    consumer
        .shutdown()
        .await
        .expect("shutdown persists into SQLite");
    got.lock().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_consumer_resumes_after_the_last_commit_from_sqlite() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("sqlite_offsets", QUEUES).await;
        let group = rmq_testkit_free_name(&topic);
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("offsets.sqlite");
        let producer = env.producer().await;

        let first = env
            .send_spread(&producer, 40, |i| {
                Message::new(&topic, format!("first-{i}"))
            })
            .await;
        let got = run(
            SqliteOffsetStore::open(&db, &group).unwrap(),
            &env,
            &topic,
            &group,
            first.len(),
        )
        .await;
        let bodies: BTreeSet<_> = got.iter().cloned().collect();
        assert_eq!(
            bodies.len(),
            first.len(),
            "the first run reads every message"
        );

        // What the first run committed: every queue at its max offset, in
        // SQLite only; the broker has nothing past 0 for the group.
        let max = env.max_offsets(&topic, QUEUES).await;
        let stored = SqliteOffsetStore::open(&db, &group)
            .unwrap()
            .stored()
            .unwrap();
        for (q, m) in max.iter().enumerate() {
            let mq = env.mq(&topic, i32::try_from(q).unwrap());
            assert_eq!(
                stored.get(&mq).copied().unwrap_or(0),
                *m,
                "SQLite offset of {mq}"
            );
        }
        assert_broker_untouched(&env, &group, &topic).await;

        let second = env
            .send_spread(&producer, 12, |i| {
                Message::new(&topic, format!("second-{i}"))
            })
            .await;
        let got = run(
            SqliteOffsetStore::open(&db, &group).unwrap(),
            &env,
            &topic,
            &group,
            second.len(),
        )
        .await;
        let mut resumed: Vec<_> = got.clone();
        resumed.sort();
        resumed.dedup();
        assert_eq!(
            resumed.len(),
            second.len(),
            "exactly the new messages: {got:?}"
        );
        assert!(
            got.iter().all(|b| b.starts_with("second-")),
            "the restarted consumer read a committed message again: {got:?}"
        );
        assert_broker_untouched(&env, &group, &topic).await;
        producer.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}

/// The broker has no offset past 0 for the group (a 5.x broker answers 0
/// for a young queue of a group it never stored an offset for).
async fn assert_broker_untouched(env: &Env, group: &str, topic: &str) {
    let broker = env.committed_offsets(group, topic, QUEUES).await;
    assert!(
        broker.iter().all(|c| matches!(c, None | Some(0))),
        "the broker stored offsets for the group: {broker:?}"
    );
}

/// A group name unique to this test run.
fn rmq_testkit_free_name(topic: &str) -> String {
    format!("GID_{topic}")
}
