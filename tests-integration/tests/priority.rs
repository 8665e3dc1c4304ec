//! Priority messages (`Message::with_priority`, RocketMQ 5.4+): a broker stores a message of a
//! `PRIORITY` topic in queue `min(priority, queues - 1)` with its `_SYS_MSG_PRIORITY_` property,
//! and a consumer reads both back; a negative priority is refused before sending; a message the
//! official Java client (`bench/peers/java` `rmqbench.FeaturePeer`) sent with `setPriority` reads
//! the same. A 4.9.x broker has no priorities: the producer refuses with a typed "needs RocketMQ
//! V5_4_0" error. (Consumption by priority is the pop consumer's.)

use std::time::Duration;

use rmq_producer::{Message, UnsentExt};
use rmq_protocol::message::property;
use rmq_tests_integration::features::{assert_needs_5x, events, is_4x};
use rmq_tests_integration::java_peer::{self, JavaProcess};
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

/// Queues of the test topics (the broker caps a priority at `QUEUES - 1`).
const QUEUES: i32 = 4;

/// A fresh `PRIORITY` topic of [`QUEUES`] queues.
async fn priority_topic(prefix: &str) -> String {
    rmq_testkit::grpc::typed_topic(prefix, "PRIORITY").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_messages_are_stored_in_their_queue() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let producer = env.producer().await;

        // Refused before sending, on any broker.
        let topic = env.topic("priority_bad", 1).await;
        let e = producer
            .send(Message::new(&topic, "x").with_priority(-1))
            .await
            .expect_err("a negative priority");
        assert_eq!(e.kind(), rmq_error::ErrorKind::InvalidArgument, "{e:?}");
        assert!(
            rmq_protocol::ErrorChain(&e)
                .to_string()
                .contains("_SYS_MSG_PRIORITY_"),
            "{e}"
        );
        assert_eq!(e.into_message().and_then(|m| m.priority()), Some(-1));

        if is_4x(&env) {
            let e = producer
                .send(Message::new(&topic, "x").with_priority(1))
                .await
                .expect_err("a 4.9.x broker has no priorities");
            assert_needs_5x(&e, "priority messages", "V5_4_0");
            producer.shutdown().await.expect("producer shutdown");
            return;
        }

        let topic = priority_topic("priority").await;
        let priorities = [0, 1, 2, 3, 9];
        let mut sent = Vec::new();
        for p in priorities {
            let r = producer
                .send(Message::new(&topic, format!("p{p}")).with_priority(p))
                .await
                .expect("priority message sent");
            assert_eq!(
                r.message_queue.queue_id,
                p.min(QUEUES - 1),
                "priority {p} is stored in queue min(p, queues - 1)"
            );
            sent.push((p, r.msg_id));
        }
        for (p, id) in sent {
            let queue = p.min(QUEUES - 1);
            let stored = env.pull_all(&topic, queue).await;
            let m = stored
                .iter()
                .find(|m| m.msg_id == id)
                .unwrap_or_else(|| panic!("p{p} not in queue {queue}: {stored:?}"));
            assert_eq!(m.priority(), Some(p), "stored with its priority");
            assert_eq!(m.property(property::PRIORITY), Some(p.to_string().as_str()));
        }
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_priority_message_reads_the_same() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        if is_4x(&env) {
            // The Java client of 4.9.x has no priorities either.
            let topic = env.topic("priority_java", 1).await;
            let producer = env.producer().await;
            let e = producer
                .send(Message::new(&topic, "x").with_priority(2))
                .await
                .expect_err("a 4.9.x broker has no priorities");
            assert_needs_5x(&e, "priority messages", "V5_4_0");
            producer.shutdown().await.expect("producer shutdown");
            return;
        }
        let classpath = java_peer::classpath_for(&env).await;
        let topic = priority_topic("priority_java").await;
        let group = rmq_testkit::unique_name("priority_java_pg");
        let home = tempfile::tempdir().expect("temp dir");
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqbench.FeaturePeer",
            &["priority", env.namesrv(), &topic, &group, "from-java", "2"],
            home.path(),
        );
        java.wait_for(Duration::from_secs(60), "the Java priority send", |l| {
            l.iter().any(|l| l.starts_with("SENT "))
        })
        .await;
        let sent = events(&java.lines(), "SENT").remove(0);
        java.finish(Duration::from_secs(10)).await;
        assert_eq!(sent[2], "2", "the broker put it in queue 2: {sent:?}");
        let stored = env.pull_all(&topic, 2).await;
        let m = stored
            .iter()
            .find(|m| m.msg_id == sent[1])
            .unwrap_or_else(|| panic!("the Java message in queue 2: {stored:?}"));
        assert_eq!(m.priority(), Some(2));
        assert_eq!(m.body.as_ref(), b"from-java");
    })
    .await;
}
