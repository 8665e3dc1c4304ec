//! Issue 4, scenario 6: three consumers join one at a time, then two leave; after each change
//! every queue is owned by exactly one consumer — the averagely allocation over the live members —
//! within 2 s; nothing sent during the churn is lost.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_consumer_push::PushConsumer;
use rmq_producer::Message;
use rmq_protocol::MessageQueue;
use rmq_rebalance::{AllocateAveragely, AllocateStrategy, sort_consumer_ids, sort_queues};
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, within};
use tokio::time::Instant;

const QUEUES: i32 = 8;
/// The bound: from a membership change to a settled assignment.
const SETTLE: Duration = Duration::from_secs(2);

/// Queue ids each live consumer should own: Java's averagely allocation over sorted ids.
fn expected(group: &str, topic: &str, broker: &str, ids: &[String]) -> Vec<BTreeSet<i32>> {
    let mut queues: Vec<MessageQueue> = (0..QUEUES)
        .map(|q| MessageQueue::new(topic, broker, q))
        .collect();
    sort_queues(&mut queues);
    let mut sorted = ids.to_vec();
    sort_consumer_ids(&mut sorted);
    ids.iter()
        .map(|id| {
            AllocateAveragely
                .allocate(group, id, &queues, &sorted)
                .expect("allocation")
                .into_iter()
                .map(|q| q.queue_id)
                .collect()
        })
        .collect()
}

/// Waits until the live consumers own exactly the expected queues of `topic` (non-dropped
/// process queues in the inspection API); returns the time since `since`. Polls the consumers'
/// state every 10 ms (the assignment has no event to await); fails after [`SETTLE`].
async fn settled(
    what: &str,
    since: Instant,
    group: &str,
    topic: &str,
    broker: &str,
    live: &[(usize, PushConsumer)],
) -> Duration {
    let ids: Vec<String> = live.iter().map(|(_, c)| consumer::client_id(c)).collect();
    let want = expected(group, topic, broker, &ids);
    loop {
        let owned: Vec<BTreeSet<i32>> = live
            .iter()
            .map(|(_, c)| consumer::owned_queues(c, topic))
            .collect();
        if owned == want {
            let all: Vec<i32> = owned.iter().flatten().copied().collect();
            let unique: HashSet<i32> = all.iter().copied().collect();
            assert_eq!(
                all.len(),
                usize::try_from(QUEUES).expect("small"),
                "every queue owned once"
            );
            assert_eq!(
                unique.len(),
                usize::try_from(QUEUES).expect("small"),
                "every queue owned once"
            );
            let took = since.elapsed();
            println!("{what}: settled in {took:?}: {owned:?}");
            return took;
        }
        assert!(
            since.elapsed() < SETTLE,
            "{what}: not settled within {SETTLE:?}: own {owned:?}, expected {want:?} for {ids:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_follow_membership_changes_without_loss() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let broker = env.broker.broker_name.clone();
        let topic = env.topic("push_rebalance", QUEUES).await;
        let group = rmq_testkit::unique_name("push_rebalance_cg");

        // A producer keeps sending through the churn.
        let producer = env.producer().await;
        let sent_ids = Arc::new(Mutex::new(Vec::<String>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let sender = {
            let (producer, topic, sent_ids, stop) = (
                producer.clone(),
                topic.clone(),
                sent_ids.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(5));
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    tick.tick().await;
                    let r = producer
                        .send(Message::new(&topic, i.to_string()))
                        .await
                        .expect("send during the churn");
                    sent_ids.lock().expect("ids").push(r.msg_id);
                    i += 1;
                }
            })
        };

        let rec = Arc::new(Recorder::new());
        let mut live: Vec<(usize, PushConsumer)> = Vec::new();
        let spec = |label: usize| {
            ConsumerSpec::new(env.namesrv(), &group, &topic)
                .instance(rmq_testkit::unique_name(&format!("rebalance-{label}")))
        };
        let mut timings = Vec::new();
        for label in 1..=3 {
            let c = consumer::start(
                spec(label),
                consumer::recording(rec.clone(), label, |_, _| false),
            )
            .await;
            let since = Instant::now();
            live.push((label, c));
            let what = format!("consumer {label} joined");
            timings.push(settled(&what, since, &group, &topic, &broker, &live).await);
        }
        for label in [2, 1] {
            let pos = live.iter().position(|(l, _)| *l == label).expect("live");
            let (_, c) = live.remove(pos);
            c.shutdown().await.expect("clean shutdown");
            let since = Instant::now();
            let what = format!("consumer {label} left");
            timings.push(settled(&what, since, &group, &topic, &broker, &live).await);
        }

        stop.store(true, Ordering::Relaxed);
        sender.await.expect("sender task");
        producer.shutdown().await.expect("producer shutdown");
        let sent: Vec<String> = sent_ids.lock().expect("ids").clone();
        println!(
            "sent {} messages during the churn; settle times {timings:?}",
            sent.len()
        );
        rec.wait_for(
            Duration::from_secs(30),
            "every message sent during the churn",
            |s| sent.iter().all(|id| s.counts.contains_key(id)),
        )
        .await;
        env.wait_committed_at_max(&group, &topic, QUEUES, Duration::from_secs(10))
            .await;
        for (_, c) in live {
            c.shutdown().await.expect("clean shutdown");
        }
        rec.with(|seen| {
            let per: Vec<usize> = (1..=3)
                .map(|l| seen.deliveries.iter().filter(|d| d.consumer == l).count())
                .collect();
            println!(
                "deliveries per consumer {per:?}, {} duplicates over {} messages",
                seen.duplicates(),
                sent.len()
            );
        });
        env.shutdown().await;
    })
    .await;
}
