//! Issue 4, scenarios 2 and 3: retry through `%RETRY%<group>`, and the dead-letter queue.
//!
//! The test broker has eighteen 1 s delay levels, so a retry comes back after about 1 s.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rmq_producer::Message;
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, poll_until, within};

/// Scenario 2: the listener fails the first delivery of every 10th message; each of those comes
/// back exactly once, through the group's retry topic, with reconsume times 1 and its original
/// topic; every other message is delivered once; nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_messages_come_back_once_through_the_retry_topic() {
    within(TEST_TIMEOUT, async {
        const N: usize = 200;
        let env = Env::new().await;
        let topic = env.topic("push_retry", 4).await;
        let group = rmq_testkit::unique_name("push_retry_cg");
        let retry_topic = format!("%RETRY%{group}");
        let producer = env.producer().await;
        let sent = env
            .send_spread(&producer, N, |i| {
                let tag = if i % 10 == 0 { "fail_once" } else { "ok" };
                Message::new(&topic, i.to_string()).with_tags(tag)
            })
            .await;
        producer.shutdown().await.expect("producer shutdown");
        let failing: HashSet<String> = sent
            .iter()
            .filter(|s| s.index % 10 == 0)
            .map(|s| s.msg_id.clone())
            .collect();
        assert_eq!(failing.len(), N / 10);

        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic),
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
            let expected: HashSet<String> = sent.iter().map(|s| s.msg_id.clone()).collect();
            assert!(seen.unexpected(&expected).is_empty());
            for s in &sent {
                let ds = seen.of(&s.msg_id);
                if failing.contains(&s.msg_id) {
                    assert_eq!(ds.len(), 2, "message {} delivered twice: {ds:?}", s.index);
                    let (first, retry) = (ds[0], ds[1]);
                    assert_eq!(first.msg.reconsume_times, 0);
                    assert_eq!(first.queue.topic, topic);
                    assert_eq!(
                        retry.queue.topic, retry_topic,
                        "the retry came via {retry_topic}"
                    );
                    assert_eq!(retry.msg.reconsume_times, 1);
                    assert_eq!(retry.msg.message.topic, topic, "original topic shown");
                    assert_eq!(retry.msg.message.body, s.index.to_string().as_bytes());
                    assert!(retry.at > first.at);
                } else {
                    assert_eq!(ds.len(), 1, "message {} delivered once: {ds:?}", s.index);
                    assert_eq!(ds[0].msg.reconsume_times, 0);
                }
            }
        });
        // Both the topic and the retry queue are fully committed at shutdown.
        env.wait_committed_at_max(&group, &topic, 4, Duration::from_secs(5))
            .await;
        env.shutdown().await;
    })
    .await;
}

/// Scenario 3: a message that always fails, with max reconsume times 2, is delivered exactly 3
/// times and then lands in `%DLQ%<group>`, where a raw pull reads it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_failing_message_goes_to_the_dlq_after_three_deliveries() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("push_dlq", 2).await;
        let group = rmq_testkit::unique_name("push_dlq_cg");
        let dlq_topic = format!("%DLQ%{group}");
        let producer = env.producer().await;
        let poison = env
            .send_to_queue(
                &producer,
                Message::new(&topic, "poison")
                    .with_tags("poison")
                    .with_keys(["poison-key"]),
                0,
            )
            .await;
        let fine = env
            .send_to_queue(&producer, Message::new(&topic, "fine").with_tags("fine"), 1)
            .await;
        producer.shutdown().await.expect("producer shutdown");

        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic).max_reconsume_times(2),
            consumer::recording(rec.clone(), 0, |m, _| m.tags() == Some("poison")),
        )
        .await;
        rec.wait_for(
            Duration::from_secs(60),
            "3 deliveries of the poison message",
            |s| s.counts.get(&poison.msg_id) == Some(&3) && s.counts.contains_key(&fine.msg_id),
        )
        .await;

        let dead = poll_until(
            Duration::from_secs(20),
            Duration::from_millis(200),
            "the poison message in the DLQ",
            || {
                let (env, dlq_topic, id) = (&env, &dlq_topic, &poison.msg_id);
                async move {
                    // The DLQ topic appears on the first dead letter.
                    if env.admin.refresh_route(dlq_topic).await.is_err() {
                        return Err("no route yet".to_owned());
                    }
                    let msgs = env.pull_all(dlq_topic, 0).await;
                    msgs.into_iter()
                        .find(|m| &m.msg_id == id)
                        .ok_or_else(|| "not in the DLQ yet".to_owned())
                }
            },
        )
        .await;
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
        env.shutdown().await;
    })
    .await;
}
