//! Issue 4, scenario 5: a consumer process SIGKILLed mid-way through 20 000 messages; a new
//! consumer finishes; every message is consumed at least once; duplicates are counted.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_producer::Message;
use rmq_tests_integration::child::{Child, ChildConfig, ChildMode};
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, poll_until, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_consumer_process_loses_nothing() {
    within(TEST_TIMEOUT, async {
        const N: usize = 20_000;
        const QUEUES: i32 = 8;
        /// The child is killed once it has recorded this many deliveries.
        const KILL_AFTER: usize = 6_000;
        let env = Env::new().await;
        let topic = env.topic("push_crash", QUEUES).await;
        let group = rmq_testkit::unique_name("push_crash_cg");
        let producer = env.producer().await;
        let started = Instant::now();
        let sent = env
            .send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        producer.shutdown().await.expect("producer shutdown");
        println!("sent {N} in {:?}", started.elapsed());

        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Child::spawn(
            env!("CARGO_BIN_EXE_push-child"),
            &ChildConfig {
                namesrv: env.namesrv().to_owned(),
                group: group.clone(),
                topic: topic.clone(),
                out: dir.path().join("deliveries.txt"),
                mode: ChildMode::Record,
                fail_tag: None,
                // Slow enough to be killed mid-way, fast enough for the CI budget.
                delay: Duration::from_millis(1),
            },
        );
        let started = Instant::now();
        let at_kill = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(10),
            "the child consumed a part",
            || {
                let child = &child;
                async move {
                    let n = child.records().len();
                    if n >= KILL_AFTER { Ok(n) } else { Err(n) }
                }
            },
        )
        .await;
        child.assert_running();
        child.kill();
        let records = child.records();
        println!(
            "child killed after {:?} with {} deliveries recorded ({at_kill} when the kill was decided)",
            started.elapsed(),
            records.len()
        );
        assert!(records.len() < N, "killed mid-way, not after the end");
        let committed = env.committed_offsets(&group, &topic, QUEUES).await;
        println!("committed offsets at the kill: {committed:?}");

        let rec = Arc::new(Recorder::new());
        let started = Instant::now();
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic),
            consumer::recording(rec.clone(), 1, |_, _| false),
        )
        .await;
        let mut by_child: HashMap<&str, usize> = HashMap::new();
        for r in &records {
            *by_child.entry(r.msg_id.as_str()).or_insert(0) += 1;
        }
        let left: Vec<&str> = sent
            .iter()
            .map(|s| s.msg_id.as_str())
            .filter(|id| !by_child.contains_key(id))
            .collect();
        rec.wait_for(Duration::from_secs(90), "the rest consumed by the new consumer", |s| {
            left.iter().all(|id| s.counts.contains_key(*id))
        })
        .await;
        env.wait_committed_at_max(&group, &topic, QUEUES, Duration::from_secs(15))
            .await;
        c.shutdown().await.expect("clean shutdown");
        println!("the new consumer finished in {:?}", started.elapsed());

        let (second_total, overlap) = rec.with(|seen| {
            let overlap = seen
                .counts
                .keys()
                .filter(|id| by_child.contains_key(id.as_str()))
                .count();
            (seen.deliveries.len(), overlap)
        });
        let total = records.len() + second_total;
        let distinct = rec.with(|seen| {
            let mut all: std::collections::HashSet<&str> = by_child.keys().copied().collect();
            all.extend(seen.counts.keys().map(String::as_str));
            sent.iter().filter(|s| all.contains(s.msg_id.as_str())).count()
        });
        assert_eq!(distinct, N, "every message consumed at least once");
        println!(
            "crash: {N} messages, {total} deliveries ({} by the killed child, {second_total} by the \
             new consumer), {} duplicates ({overlap} messages consumed by both)",
            records.len(),
            total - N
        );
        env.shutdown().await;
    })
    .await;
}
