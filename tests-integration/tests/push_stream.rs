//! The push consumer as a `Stream` of deliveries (`start_stream`): acking commits, at most
//! `consume_concurrency` deliveries undecided, `reconsume_later` and a dropped delivery bring
//! the message back through `%RETRY%<group>` with reconsume times 1.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use rmq_consumer_push::{Delivery, DeliveryStream};
use rmq_producer::Message;
use rmq_tests_integration::consumer::ConsumerSpec;
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

/// The next delivery, failing the test after 30 s.
async fn next(stream: &mut DeliveryStream, what: &str) -> Delivery {
    tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .unwrap_or_else(|_| panic!("no delivery in 30 s: {what}"))
        .unwrap_or_else(|| panic!("the stream ended: {what}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_deliveries_commit_and_in_flight_is_bounded() {
    within(TEST_TIMEOUT, async {
        const N: usize = 300;
        const QUEUES: i32 = 4;
        const CONCURRENCY: usize = 4;
        let env = Env::new().await;
        let topic = env.topic("push_stream", QUEUES).await;
        let group = rmq_testkit::unique_name("push_stream_cg");
        let producer = env.producer().await;
        let sent = env
            .send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        producer.shutdown().await.expect("producer shutdown");
        let (consumer, mut stream) = ConsumerSpec::new(env.namesrv(), &group, &topic)
            .consume_concurrency(CONCURRENCY)
            .builder()
            .start_stream()
            .await
            .expect("the consumer starts");

        // Undecided deliveries hold their permits: no more than CONCURRENCY come.
        let mut held = Vec::new();
        for _ in 0..CONCURRENCY {
            held.push(next(&mut stream, "the first deliveries").await);
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(500), stream.next())
                .await
                .is_err(),
            "a delivery beyond consume_concurrency arrived while {CONCURRENCY} were undecided"
        );
        // Nothing committed past them.
        for d in &held {
            if let Some(c) = env.committed_offset(&group, d.queue()).await {
                assert!(
                    c <= d.queue_offset,
                    "committed {c} past held {}",
                    d.queue_offset
                );
            }
        }
        let mut seen: HashSet<String> = HashSet::new();
        for d in held {
            seen.insert(d.msg_id.clone());
            d.ack();
        }
        while seen.len() < N {
            let d = next(&mut stream, "the rest").await;
            assert_eq!(d.reconsume_times, 0);
            seen.insert(d.msg_id.clone());
            d.ack();
        }
        let expected: HashSet<String> = sent.iter().map(|s| s.msg_id.clone()).collect();
        assert_eq!(seen, expected);
        env.wait_committed_at_max(&group, &topic, QUEUES, Duration::from_secs(15))
            .await;
        consumer.shutdown().await.expect("clean shutdown");
        assert!(
            tokio::time::timeout(Duration::from_secs(5), stream.next())
                .await
                .expect("the stream ends after shutdown")
                .is_none()
        );
        env.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconsume_later_and_dropped_deliveries_come_back() {
    within(TEST_TIMEOUT, async {
        const N: usize = 40;
        let env = Env::new().await;
        let topic = env.topic("push_stream_retry", 2).await;
        let group = rmq_testkit::unique_name("push_stream_retry_cg");
        let producer = env.producer().await;
        let sent = env
            .send_spread(&producer, N, |i| {
                let tag = match i % 4 {
                    0 => "later",
                    1 => "drop",
                    _ => "ok",
                };
                Message::new(&topic, i.to_string()).with_tags(tag)
            })
            .await;
        producer.shutdown().await.expect("producer shutdown");
        let (consumer, mut stream) = ConsumerSpec::new(env.namesrv(), &group, &topic)
            .builder()
            .start_stream()
            .await
            .expect("the consumer starts");
        let mut deliveries: HashMap<String, Vec<i32>> = HashMap::new();
        let want = N + N / 2;
        let mut total = 0;
        while total < want {
            let d = next(&mut stream, "deliveries and redeliveries").await;
            total += 1;
            deliveries
                .entry(d.msg_id.clone())
                .or_default()
                .push(d.reconsume_times);
            match (d.tags(), d.reconsume_times) {
                (Some("later"), 0) => d.reconsume_later(),
                (Some("drop"), 0) => drop(d),
                _ => d.ack(),
            }
        }
        consumer.shutdown().await.expect("clean shutdown");
        for s in &sent {
            let got = deliveries.get(&s.msg_id).map(Vec::as_slice).unwrap_or(&[]);
            match s.index % 4 {
                0 | 1 => assert_eq!(got, [0, 1], "message {} failed once", s.index),
                _ => assert_eq!(got, [0], "message {} delivered once", s.index),
            }
        }
        env.shutdown().await;
    })
    .await;
}
