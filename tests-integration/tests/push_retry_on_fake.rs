//! `push_retry.rs` on the fake RocketMQ (`rmq-fake`) instead of the real broker: the same two
//! scenarios, the same consumer and listener, with the broker's default delay levels (the first
//! retry waits 10 s, the second 30 s) fast-forwarded by the fake's clock. The real-broker original
//! stays the reference; this file shows what a fake buys a test suite: no JVM, and retry tests
//! that take milliseconds.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rmq_fake::FakeCluster;
use rmq_producer::{Message, Producer};
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Recorder, TEST_TIMEOUT, within};

/// Delivers every delayed message as soon as a broker has one, so the 10 s and 30 s delay
/// levels of the retries pass at once (without moving the fake's clock, which would also expire
/// the clients' heartbeats). Stops on drop.
struct FastForward(tokio::task::JoinHandle<()>);

impl FastForward {
    fn start(cluster: &FakeCluster) -> FastForward {
        let brokers = cluster.brokers().to_vec();
        FastForward(tokio::spawn(async move {
            loop {
                for b in &brokers {
                    b.deliver_delayed_now();
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }))
    }
}

impl Drop for FastForward {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn producer(cluster: &FakeCluster) -> Producer {
    Producer::builder()
        .group(rmq_testkit::unique_name("fake_pg"))
        .namesrv_addr(cluster.namesrv_addr())
        .start()
        .await
        .expect("producer starts")
}

/// Scenario 2: the listener fails the first delivery of every 10th message; each of those comes
/// back exactly once, through the group's retry topic, with reconsume times 1 and its original
/// topic; every other message is delivered once; nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_messages_come_back_once_through_the_retry_topic() {
    within(TEST_TIMEOUT, async {
        const N: usize = 200;
        let cluster = FakeCluster::builder().start().await.expect("fake starts");
        let topic = rmq_testkit::unique_name("push_retry");
        cluster.create_topic(&topic, 4).expect("topic");
        let group = rmq_testkit::unique_name("push_retry_cg");
        let retry_topic = format!("%RETRY%{group}");
        let p = producer(&cluster).await;
        let mut sent = Vec::new();
        for chunk in (0..N).collect::<Vec<_>>().chunks(10) {
            let msgs: Vec<Message> = chunk
                .iter()
                .map(|i| {
                    let tag = if i % 10 == 0 { "fail_once" } else { "ok" };
                    Message::new(&topic, i.to_string()).with_tags(tag)
                })
                .collect();
            let r = p.send_batch(msgs).await.expect("batch");
            for (id, i) in r.msg_id.split(',').zip(chunk) {
                sent.push((*i, id.to_owned()));
            }
        }
        p.shutdown().await.expect("producer shutdown");
        let failing: HashSet<String> = sent
            .iter()
            .filter(|(i, _)| i % 10 == 0)
            .map(|(_, id)| id.clone())
            .collect();
        assert_eq!(failing.len(), N / 10);

        let _ff = FastForward::start(&cluster);
        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(cluster.namesrv_addr(), &group, &topic),
            consumer::recording(rec.clone(), 0, |m, _| {
                m.tags() == Some("fail_once") && m.reconsume_times == 0
            }),
        )
        .await;
        let want_total = N + failing.len();
        rec.wait_for(
            Duration::from_secs(60),
            "every message once, failing ones twice",
            |s| s.distinct() == N && s.deliveries.len() >= want_total,
        )
        .await;
        c.shutdown().await.expect("clean shutdown");

        rec.with(|seen| {
            let expected: HashSet<String> = sent.iter().map(|(_, id)| id.clone()).collect();
            assert!(seen.unexpected(&expected).is_empty());
            for (index, id) in &sent {
                let ds = seen.of(id);
                if failing.contains(id) {
                    assert_eq!(ds.len(), 2, "message {index} delivered twice: {ds:?}");
                    let (first, retry) = (ds[0], ds[1]);
                    assert_eq!(first.msg.reconsume_times, 0);
                    assert_eq!(first.queue.topic, topic);
                    assert_eq!(
                        retry.queue.topic, retry_topic,
                        "the retry came via {retry_topic}"
                    );
                    assert_eq!(retry.msg.reconsume_times, 1);
                    assert_eq!(retry.msg.message.topic, topic, "original topic shown");
                    assert_eq!(retry.msg.message.body, index.to_string().as_bytes());
                    assert!(retry.at > first.at);
                } else {
                    assert_eq!(ds.len(), 1, "message {index} delivered once: {ds:?}");
                    assert_eq!(ds[0].msg.reconsume_times, 0);
                }
            }
        });
        // Both the topic and the retry queue are fully committed at shutdown.
        let broker = cluster.first_broker();
        for (t, queues) in [(topic.as_str(), 4), (retry_topic.as_str(), 1)] {
            for q in 0..queues {
                let max = broker.max_offset(t, q);
                let committed = broker.committed_offset(&group, t, q);
                assert!(
                    committed == Some(max) || (committed.is_none() && max == 0),
                    "{t}#{q}: committed {committed:?}, max {max}"
                );
            }
        }
        cluster.shutdown().await;
    })
    .await;
}

/// Scenario 3: a message that always fails, with max reconsume times 2, is delivered exactly 3
/// times and then lands in `%DLQ%<group>`, where the broker holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_failing_message_goes_to_the_dlq_after_three_deliveries() {
    within(TEST_TIMEOUT, async {
        let cluster = FakeCluster::builder().start().await.expect("fake starts");
        let topic = rmq_testkit::unique_name("push_dlq");
        cluster.create_topic(&topic, 2).expect("topic");
        let group = rmq_testkit::unique_name("push_dlq_cg");
        let dlq_topic = format!("%DLQ%{group}");
        let broker = cluster.first_broker().clone();
        let mq = |q| rmq_protocol::MessageQueue::new(&topic, broker.name(), q);
        let p = producer(&cluster).await;
        let poison = p
            .send_to_queue(
                Message::new(&topic, "poison")
                    .with_tags("poison")
                    .with_keys(["poison-key"]),
                &mq(0),
            )
            .await
            .expect("send poison");
        let fine = p
            .send_to_queue(Message::new(&topic, "fine").with_tags("fine"), &mq(1))
            .await
            .expect("send fine");
        p.shutdown().await.expect("producer shutdown");

        let _ff = FastForward::start(&cluster);
        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(cluster.namesrv_addr(), &group, &topic).max_reconsume_times(2),
            consumer::recording(rec.clone(), 0, |m, _| m.tags() == Some("poison")),
        )
        .await;
        rec.wait_for(
            Duration::from_secs(60),
            "3 deliveries of the poison message",
            |s| s.counts.get(&poison.msg_id) == Some(&3) && s.counts.contains_key(&fine.msg_id),
        )
        .await;

        // The dead letter is stored before the third failure's send-back is answered.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let dead = loop {
            if let Some(m) = broker
                .messages(&dlq_topic)
                .into_iter()
                .find(|m| m.msg_id == poison.msg_id)
            {
                break m;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the poison message in the DLQ"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        c.shutdown().await.expect("clean shutdown");

        assert_eq!(dead.message.body, "poison".as_bytes());
        assert_eq!(dead.message.tags(), Some("poison"));
        assert_eq!(dead.message.keys().collect::<Vec<_>>(), ["poison-key"]);
        assert_eq!(dead.message.topic, dlq_topic);
        rec.with(|seen| {
            let times: Vec<i32> = seen
                .of(&poison.msg_id)
                .iter()
                .map(|d| d.msg.reconsume_times)
                .collect();
            assert_eq!(times, [0, 1, 2], "exactly three deliveries, then none");
            let counts: HashMap<_, _> = seen.counts.clone();
            assert_eq!(counts.get(&fine.msg_id), Some(&1));
        });
        cluster.shutdown().await;
    })
    .await;
}
