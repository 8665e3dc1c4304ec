//! Issue 5, scenario 4: two orderly consumers of one group never run listener calls for the same
//! queue at overlapping times, while queues move between them (B joins, later B leaves). Every
//! call records its interval; per queue the intervals must not overlap.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_consumer_push::OrderlyResult;
use rmq_testkit::orderly::{
    Calls, Recording, assert_no_overlap, builder, first_deliveries, key, per_key, send_ordered,
    start,
};
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

const KEYS: usize = 40;
const PER_KEY: usize = 20;
const TOTAL: usize = KEYS * PER_KEY;
const QUEUES: i32 = 4;
/// Every call takes this long, so calls are wide enough to collide if exclusivity broke.
const CALL_TIME: Duration = Duration::from_millis(10);

fn slow(label: usize, calls: &Arc<Calls>) -> Recording {
    Recording {
        label,
        calls: calls.clone(),
        delay: CALL_TIME,
        decide: Box::new(|_| OrderlyResult::Success),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_members_never_consume_one_queue_at_the_same_time() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("ord_excl", QUEUES).await;
        let group = rmq_testkit::unique_name("ord_excl_g");
        let keys: Vec<String> = (0..KEYS).map(key).collect();
        let producer = env.producer().await;
        send_ordered(&producer, &topic, &keys, 0..PER_KEY, 8).await;
        producer.shutdown().await.expect("producer shutdown");

        let metrics = tokio::runtime::Handle::current().metrics();
        let baseline = metrics.num_alive_tasks();
        let calls = Arc::new(Calls::default());
        let t0 = Instant::now();
        let a = start(builder(env.namesrv(), &group, &topic), slow(0, &calls)).await;
        calls
            .wait_accepted(TOTAL / 8, Duration::from_secs(60))
            .await;
        let b = start(builder(env.namesrv(), &group, &topic), slow(1, &calls)).await;
        let joined = t0.elapsed();
        // B got queues from A (they moved once A dropped and unlocked them); then B leaves and
        // they move back.
        calls
            .wait_for(Duration::from_secs(60), "B consumed 40 messages", |calls| {
                calls.iter().filter(|c| c.consumer == 1).count() >= 40
            })
            .await;
        b.shutdown().await.expect("B shuts down");
        let left = t0.elapsed();
        calls.wait_accepted(TOTAL, Duration::from_secs(60)).await;
        let done = t0.elapsed();
        a.shutdown().await.expect("A shuts down");
        // Nothing of either consumer is left running (loops, renewal, deferred unlocks).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while metrics.num_alive_tasks() > baseline {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} tasks alive after shutdown, {baseline} before start",
                metrics.num_alive_tasks()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        let all = calls.snapshot();
        let checked = assert_no_overlap(&all);
        // The handovers happened: some queue was consumed by both members.
        let mut owners: BTreeMap<i32, BTreeSet<usize>> = BTreeMap::new();
        for c in &all {
            owners.entry(c.queue_id).or_default().insert(c.consumer);
        }
        assert!(
            owners.values().any(|o| o.len() == 2),
            "no queue changed hands: {owners:?}"
        );
        let expected: Vec<usize> = (0..PER_KEY).collect();
        for (k, s) in per_key(&all) {
            assert_eq!(first_deliveries(&s), expected, "key {k}");
        }
        let deliveries: usize = all.iter().map(|c| c.msgs.len()).sum();
        println!(
            "{checked} calls on {QUEUES} queues without overlap; B joined at {joined:?}, left at \
             {left:?}, done at {done:?}; owners per queue {owners:?}; duplicates {}",
            deliveries - TOTAL
        );
        env.shutdown().await;
    })
    .await;
}

/// Records like [`Recording`], but the first call of each queue takes [`LONG_CALL`].
struct FirstCallSlow {
    inner: Recording,
    slowed: std::sync::Mutex<BTreeSet<i32>>,
    slow_in_flight: std::sync::atomic::AtomicUsize,
}

/// Longer than the 2 s a rebalance waits for the call in flight of a queue it removes.
const LONG_CALL: Duration = Duration::from_secs(4);

#[rmq_consumer_push::async_trait]
impl rmq_consumer_push::OrderlyListener for FirstCallSlow {
    async fn consume(
        &self,
        msgs: &[rmq_consumer_push::MessageExt],
        ctx: &mut rmq_consumer_push::OrderlyContext,
    ) -> OrderlyResult {
        let start = Instant::now();
        let first = self
            .slowed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(ctx.queue().queue_id);
        if first {
            self.slow_in_flight
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(LONG_CALL).await;
        }
        self.inner.record(start, msgs, ctx, OrderlyResult::Success);
        OrderlyResult::Success
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_outliving_the_removal_keeps_the_queue_from_the_next_owner() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("ord_excl_long", 2).await;
        let group = rmq_testkit::unique_name("ord_excl_long_g");
        let keys: Vec<String> = (0..10).map(key).collect();
        let producer = env.producer().await;
        send_ordered(&producer, &topic, &keys, 0..20, 4).await;
        producer.shutdown().await.expect("producer shutdown");

        let calls = Arc::new(Calls::default());
        let a_listener = Arc::new(FirstCallSlow {
            inner: Recording::accepting(0, calls.clone()),
            slowed: std::sync::Mutex::default(),
            slow_in_flight: std::sync::atomic::AtomicUsize::new(0),
        });
        let a = builder(env.namesrv(), &group, &topic)
            .start_orderly_arc(a_listener.clone())
            .await
            .expect("A starts");
        // A is inside a long call on both queues when B joins.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while a_listener
            .slow_in_flight
            .load(std::sync::atomic::Ordering::SeqCst)
            < 2
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "A never started consuming"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let t0 = Instant::now();
        let b = start(
            builder(env.namesrv(), &group, &topic),
            Recording::accepting(1, calls.clone()),
        )
        .await;
        calls
            .wait_accepted(keys.len() * 20, Duration::from_secs(60))
            .await;
        let done = t0.elapsed();
        b.shutdown().await.expect("B shuts down");
        a.shutdown().await.expect("A shuts down");

        let all = calls.snapshot();
        let checked = assert_no_overlap(&all);
        let mut owners: BTreeMap<i32, BTreeSet<usize>> = BTreeMap::new();
        for c in &all {
            owners.entry(c.queue_id).or_default().insert(c.consumer);
        }
        let moved: Vec<i32> = owners
            .iter()
            .filter(|(_, o)| o.len() == 2)
            .map(|(q, _)| *q)
            .collect();
        assert_eq!(moved.len(), 1, "one queue moved to B: {owners:?}");
        // B's first call on the moved queue started only after A's long call there ended.
        let a_long = all
            .iter()
            .find(|c| c.consumer == 0 && c.queue_id == moved[0])
            .expect("A's long call");
        let b_first = all
            .iter()
            .filter(|c| c.consumer == 1 && c.queue_id == moved[0])
            .map(|c| c.start)
            .min()
            .expect("B consumed the moved queue");
        assert!(b_first >= a_long.end, "B started before A's call ended");
        assert!(a_long.end - a_long.start >= LONG_CALL);
        let expected: Vec<usize> = (0..20).collect();
        for (k, s) in per_key(&all) {
            assert_eq!(first_deliveries(&s), expected, "key {k}");
        }
        let deliveries: usize = all.iter().map(|c| c.msgs.len()).sum();
        let duplicates = deliveries - keys.len() * 20;
        assert!(
            duplicates >= 1,
            "the abandoned call's message is delivered again to B"
        );
        println!(
            "{checked} calls without overlap; queue {} moved after A's {LONG_CALL:?} call \
             (B's first call {:?} after it ended); all done {done:?} after B joined; \
             duplicates {duplicates}",
            moved[0],
            b_first - a_long.end
        );
        env.shutdown().await;
    })
    .await;
}
