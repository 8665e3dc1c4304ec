//! Issue 4, scenarios 1 and 10: bulk consumption with exact offsets, and a clean shutdown.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_producer::Message;
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, poll_until, within};

/// Scenario 1: 10 000 messages over 8 queues, one consumer: each consumed exactly once; after
/// shutdown the broker's committed offsets equal the queues' max offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_messages_consumed_once_and_committed() {
    within(TEST_TIMEOUT, async {
        const N: usize = 10_000;
        const QUEUES: i32 = 8;
        let env = Env::new().await;
        let topic = env.topic("push_bulk", QUEUES).await;
        let group = rmq_testkit::unique_name("push_bulk_cg");
        let producer = env.producer().await;
        let started = Instant::now();
        let sent = env
            .send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        producer.shutdown().await.expect("producer shutdown");
        println!("sent {N} in {:?}", started.elapsed());
        let queues_used: HashSet<i32> = sent.iter().map(|s| s.queue.queue_id).collect();
        assert_eq!(
            queues_used.len(),
            8,
            "the batches are spread over all 8 queues"
        );

        let rec = Arc::new(Recorder::new());
        let started = Instant::now();
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic),
            consumer::recording(rec.clone(), 0, |_, _| false),
        )
        .await;
        rec.wait_distinct(N, Duration::from_secs(90)).await;
        println!("consumed {N} in {:?}", started.elapsed());
        c.shutdown().await.expect("clean shutdown");

        let expected: HashSet<String> = sent.iter().map(|s| s.msg_id.clone()).collect();
        rec.with(|seen| {
            assert!(seen.unexpected(&expected).is_empty(), "only sent messages");
            let dup: Vec<_> = seen.counts.iter().filter(|(_, n)| **n > 1).collect();
            assert!(dup.is_empty(), "each message exactly once; again: {dup:?}");
            assert!(
                seen.deliveries
                    .iter()
                    .all(|d| d.msg.reconsume_times == 0 && d.queue.topic == topic),
                "no retries"
            );
        });

        let max = env.max_offsets(&topic, QUEUES).await;
        assert_eq!(usize::try_from(max.iter().sum::<i64>()), Ok(N));
        // The shutdown persists offsets; the broker applies them as they arrive.
        let took = env
            .wait_committed_at_max(&group, &topic, QUEUES, Duration::from_secs(5))
            .await;
        println!("committed offsets at max {took:?} after shutdown returned");
        env.shutdown().await;
    })
    .await;
}

/// Scenario 10: after `shutdown().await` no task of the consumer is alive, its offsets are
/// committed, and the broker no longer lists it in the group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_everything_commits_and_unregisters() {
    within(TEST_TIMEOUT, async {
        const N: usize = 500;
        const QUEUES: i32 = 4;
        let env = Env::new().await;
        let topic = env.topic("push_shutdown", QUEUES).await;
        let group = rmq_testkit::unique_name("push_shutdown_cg");
        // Tasks of this runtime before any rmq client of the test (the admin instance's).
        let metrics = tokio::runtime::Handle::current().metrics();
        let baseline = metrics.num_alive_tasks();
        let producer = env.producer().await;
        env.send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        producer.shutdown().await.expect("producer shutdown");
        let metrics = &metrics;
        poll_until(
            Duration::from_millis(200),
            Duration::from_millis(1),
            "the producer's tasks gone after its shutdown",
            || async {
                let n = metrics.num_alive_tasks();
                if n <= baseline { Ok(()) } else { Err(n) }
            },
        )
        .await;

        let rec = Arc::new(Recorder::new());
        let spec = ConsumerSpec::new(env.namesrv(), &group, &topic);
        let c = consumer::start(spec, consumer::recording(rec.clone(), 0, |_, _| false)).await;
        let client_id = c.client_id().to_owned();
        rec.wait_distinct(N, Duration::from_secs(60)).await;
        let running = metrics.num_alive_tasks();
        assert!(
            running > baseline,
            "the consumer runs tasks ({running} vs {baseline} before)"
        );
        let ids = env.consumer_ids(&group).await;
        assert!(
            ids.contains(&client_id),
            "registered while running: {ids:?} vs {client_id}"
        );

        c.shutdown().await.expect("clean shutdown");
        // `shutdown` waits for its tasks through a tokio-util TaskTracker, which reports a task
        // finished when its future is dropped, a moment before the runtime retires the task
        // (measured: about half of the time a plain TaskTracker's last task is still counted
        // right after `wait()`, gone within ~1 ms). So give the runtime that moment; a task that
        // keeps running (a loop, a timer, a connection) stays counted and fails the test.
        let at_return = metrics.num_alive_tasks();
        let settle = Instant::now();
        let after = poll_until(
            Duration::from_millis(200),
            Duration::from_millis(1),
            "no consumer task alive after shutdown",
            || async {
                let n = metrics.num_alive_tasks();
                if n <= baseline {
                    Ok(n)
                } else {
                    Err(format!("{n} tasks alive, {baseline} before the consumer"))
                }
            },
        )
        .await;
        println!(
            "tokio tasks alive: {baseline} before the consumer, {running} while running, \
             {at_return} when shutdown returned, {after} {:?} later",
            settle.elapsed()
        );
        let ids = env.consumer_ids(&group).await;
        assert!(
            !ids.contains(&client_id),
            "unregistered: {ids:?} still has {client_id}"
        );
        // Persisted at shutdown (the broker may apply a oneway update a moment later).
        let took = env
            .wait_committed_at_max(&group, &topic, QUEUES, Duration::from_secs(2))
            .await;
        println!("committed offsets at max {took:?} after shutdown returned");
        env.shutdown().await;
    })
    .await;
}
