//! Issue 5, scenario 1: 20 000 messages over 200 keys, sent in order per key; three orderly
//! consumers of one group, one joining and one leaving mid-way. For every key the first
//! deliveries are in send order and nothing is lost; duplicates (only around the rebalances) are
//! counted and printed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_testkit::orderly::{
    Calls, Recording, assert_no_overlap, builder, first_deliveries, key, per_key, send_ordered,
    start,
};
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

const KEYS: usize = 200;
const PER_KEY: usize = 100;
const TOTAL: usize = KEYS * PER_KEY;
const QUEUES: i32 = 8;
/// Keys sent at once (each key's messages one after the other).
const SEND_LANES: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_key_order_survives_a_member_joining_and_one_leaving() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("ord_order", QUEUES).await;
        let group = rmq_testkit::unique_name("ord_order_g");
        let keys: Vec<String> = (0..KEYS).map(key).collect();
        let calls = Arc::new(Calls::default());
        let t0 = Instant::now();

        let a = start(
            builder(env.namesrv(), &group, &topic),
            Recording::accepting(0, calls.clone()),
        )
        .await;
        let b = start(
            builder(env.namesrv(), &group, &topic),
            Recording::accepting(1, calls.clone()),
        )
        .await;

        let producer = env.producer().await;
        let send_topic = topic.clone();
        let send_keys = keys.clone();
        let sender = tokio::spawn(async move {
            let started = Instant::now();
            let queues =
                send_ordered(&producer, &send_topic, &send_keys, 0..PER_KEY, SEND_LANES).await;
            producer.shutdown().await.expect("producer shutdown");
            (queues, started.elapsed())
        });

        // C joins once a fifth is consumed, A leaves at 60 %.
        calls
            .wait_accepted(TOTAL / 5, Duration::from_secs(120))
            .await;
        let joined_at = t0.elapsed();
        let c = start(
            builder(env.namesrv(), &group, &topic),
            Recording::accepting(2, calls.clone()),
        )
        .await;
        calls
            .wait_accepted(TOTAL * 3 / 5, Duration::from_secs(120))
            .await;
        let left_at = t0.elapsed();
        a.shutdown().await.expect("A shuts down");

        let (queues, send_took) = sender.await.expect("sender task");
        calls.wait_accepted(TOTAL, Duration::from_secs(120)).await;
        let all_done = t0.elapsed();
        // Let late duplicates (if any) show up before counting.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let all = calls.snapshot();

        // Per key: first deliveries in send order, nothing lost.
        let seqs = per_key(&all);
        assert_eq!(seqs.len(), KEYS, "every key delivered");
        let expected: Vec<usize> = (0..PER_KEY).collect();
        for (k, s) in &seqs {
            assert_eq!(
                first_deliveries(s),
                expected,
                "key {k} (queue {}): first deliveries out of order or missing",
                queues[k]
            );
        }
        let deliveries: usize = seqs.values().map(Vec::len).sum();
        let duplicates = deliveries - TOTAL;
        let mut per_consumer: BTreeMap<usize, usize> = BTreeMap::new();
        for call in &all {
            *per_consumer.entry(call.consumer).or_default() += call.msgs.len();
        }
        let checked = assert_no_overlap(&all);
        println!(
            "{TOTAL} messages / {KEYS} keys / {QUEUES} queues: sent in {send_took:?}; C joined at \
             {joined_at:?}, A left at {left_at:?}, all consumed at {all_done:?}; deliveries per \
             consumer {per_consumer:?}; duplicates {duplicates}; {checked} calls without overlap"
        );
        assert!(
            per_consumer.len() == 3,
            "all three consumers consumed: {per_consumer:?}"
        );

        b.shutdown().await.expect("B shuts down");
        c.shutdown().await.expect("C shuts down");
        let waited = env
            .wait_committed_at_max(&group, &topic, QUEUES, Duration::from_secs(20))
            .await;
        println!("committed offsets at max {waited:?} after the last shutdown");
        env.shutdown().await;
    })
    .await;
}
