//! Issue 4, scenario 9: with a slow listener a queue never holds more than the flow-control
//! threshold allows, as the inspection API shows while consuming.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_producer::Message;
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, within};

const QUEUES: i32 = 4;
const N: usize = 2_000;
const THRESHOLD: usize = 50;
const PULL_BATCH: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_listener_never_makes_a_queue_hold_more_than_the_threshold() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("push_flow", QUEUES).await;
        let group = rmq_testkit::unique_name("push_flow_cg");
        let producer = env.producer().await;
        env.send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        producer.shutdown().await.expect("producer shutdown");

        let rec = Arc::new(Recorder::new());
        let slow = {
            let rec = rec.clone();
            consumer::recording_slow(rec, 0, Duration::from_millis(2))
        };
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic)
                .consume_concurrency(4)
                .pull_batch_size(PULL_BATCH)
                .pull_threshold_for_queue(THRESHOLD),
            slow,
        )
        .await;

        // Sample the inspection API while consuming.
        let started = Instant::now();
        let mut max_held = 0;
        let mut samples = 0u32;
        while rec.distinct() < N {
            for q in consumer::queue_stats(&c, &topic) {
                max_held = max_held.max(q.count);
                // The consumer documents the count threshold as a hard limit (a pull asks only
                // for what fits), stricter than Java's check-before-pull.
                assert!(
                    q.count <= THRESHOLD,
                    "queue {} holds {} messages; threshold {THRESHOLD}, pull batch {PULL_BATCH}",
                    q.queue.queue_id,
                    q.count
                );
            }
            samples += 1;
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "consumption stalled"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!(
            "flow control: {samples} samples in {:?}, most held by one queue: {max_held}",
            started.elapsed()
        );
        assert!(
            max_held >= THRESHOLD / 2,
            "the listener was slow enough for messages to pile up (max {max_held})"
        );
        c.shutdown().await.expect("clean shutdown");
        env.wait_committed_at_max(&group, &topic, QUEUES, Duration::from_secs(5))
            .await;
        env.shutdown().await;
    })
    .await;
}

/// The size threshold is checked before each pull, as in Java, in whole MiB (the consumer
/// documents that one pull may exceed it): with a slow listener a queue's held bytes stay under
/// the threshold + 1 MiB (the whole-MiB comparison) + one pull.
///
/// The span threshold has no such bound to test: it too is checked before each pull, against the
/// messages held at that moment (Java `getMaxSpan`), so with one stuck message and the others
/// consumed at once the held span collapses to 0 between pulls and the next pull lands further
/// out each time — the inspection API then shows spans far above the threshold, as Java would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_threshold_holds_within_one_pull() {
    within(TEST_TIMEOUT, async {
        const MIB: usize = 1024 * 1024;
        const BODY: usize = 16 * 1024;
        const SIZE_N: usize = 400;
        const SIZE_MIB: usize = 1;
        const BATCH: usize = 16;
        let env = Env::new().await;
        let topic = env.topic("push_flow_size", 1).await;
        let group = rmq_testkit::unique_name("push_flow_size_cg");
        let producer = env.producer().await;
        env.send_spread(&producer, SIZE_N, |i| {
            let mut body = vec![0u8; BODY];
            body[0] = u8::try_from(i % 251).expect("below 251");
            Message::new(&topic, body)
        })
        .await;
        producer.shutdown().await.expect("producer shutdown");

        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic)
                .consume_concurrency(2)
                .pull_batch_size(BATCH)
                .pull_threshold_size_for_queue_mib(SIZE_MIB),
            consumer::recording_slow(rec.clone(), 0, Duration::from_millis(2)),
        )
        .await;

        let started = Instant::now();
        let mut max_bytes = 0usize;
        let bound = (SIZE_MIB + 1) * MIB + BODY * BATCH;
        while rec.distinct() < SIZE_N {
            for q in consumer::queue_stats(&c, &topic) {
                max_bytes = max_bytes.max(q.bytes);
                assert!(
                    q.bytes < bound,
                    "{} bytes held; threshold {SIZE_MIB} MiB (whole MiB) + one pull of {BATCH}",
                    q.bytes
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "consumption stalled"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!(
            "flow control (size): most bytes held {max_bytes} (bound {bound}) in {:?}",
            started.elapsed()
        );
        assert!(
            max_bytes >= SIZE_MIB * MIB,
            "the size threshold was reached ({max_bytes})"
        );
        c.shutdown().await.expect("clean shutdown");
        env.wait_committed_at_max(&group, &topic, 1, Duration::from_secs(5))
            .await;
        env.shutdown().await;
    })
    .await;
}
