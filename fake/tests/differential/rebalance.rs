//! Rebalancing with three push consumers of one group on an 8-queue topic:
//! who gets which queues, what the broker lists, every message consumed
//! once; then one leaves and the others take its queues.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_consumer_push::{ConsumeFrom, ConsumeResult, PushConsumer, listener_fn};
use rmq_producer::Message;

use crate::obs;
use crate::support::{Obs, Target, run};

const QUEUES: i32 = 8;

fn owned(c: &PushConsumer, topic: &str) -> BTreeSet<i32> {
    c.inspect()
        .into_iter()
        .filter(|q| q.queue.topic == topic && !q.dropped)
        .map(|q| q.queue.queue_id)
        .collect()
}

/// Waits until the consumers own every queue exactly once.
async fn settled(
    t: &Target,
    cs: &[(&str, &PushConsumer)],
    topic: &str,
) -> BTreeMap<String, BTreeSet<i32>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now: BTreeMap<String, BTreeSet<i32>> = cs
            .iter()
            .map(|(n, c)| ((*n).to_owned(), owned(c, topic)))
            .collect();
        let total: usize = now.values().map(BTreeSet::len).sum();
        let union: BTreeSet<i32> = now.values().flatten().copied().collect();
        if total == usize::try_from(QUEUES).unwrap() && union.len() == total {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "{:?}: assignment not settled: {now:?}",
            t.side
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_consumers_share_the_queues_alike() {
    let topic = rmq_testkit::unique_name("diff_rebal");
    let group = rmq_testkit::unique_name("diff_rebal_cg");
    run("rebalance", |t| {
        let (topic, group) = (topic.clone(), group.clone());
        async move {
            let mut o = Obs::default();
            t.topic(&topic, QUEUES).await;
            let counts: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
            let mut consumers = Vec::new();
            for name in ["c0", "c1", "c2"] {
                let counts = counts.clone();
                let label = name.to_owned();
                let c = PushConsumer::builder()
                    .group(&group)
                    .client_config(t.config(&format!("diff_rebal_{name}")))
                    .consume_from(ConsumeFrom::FirstOffset)
                    .subscribe(&topic, "*")
                    .start(listener_fn(move |msgs, _ctx| {
                        *counts.lock().unwrap().entry(label.clone()).or_default() += msgs.len();
                        Box::pin(async { ConsumeResult::Success })
                    }))
                    .await
                    .unwrap();
                consumers.push((name, c));
            }
            let refs: Vec<(&str, &PushConsumer)> = consumers.iter().map(|(n, c)| (*n, c)).collect();
            let assignment = settled(&t, &refs, &topic).await;
            for (name, queues) in &assignment {
                obs!(o, "{name} owns {queues:?}");
            }
            let mut ids: Vec<String> = t
                .admin
                .get_consumer_id_list(&t.broker, &group)
                .await
                .unwrap()
                .iter()
                .map(|id| t.unsuffixed(id.split('@').nth(1).unwrap_or(id)))
                .collect();
            ids.sort();
            obs!(o, "broker lists {ids:?}");

            let p = t.producer("diff_rebal_pg").await;
            for i in 0..24 {
                let q = i % QUEUES;
                p.send_to_queue(Message::new(&topic, format!("m{i}")), &t.mq(&topic, q))
                    .await
                    .unwrap();
            }
            p.shutdown().await.expect("producer shutdown");
            let deadline = Instant::now() + Duration::from_secs(30);
            while counts.lock().unwrap().values().sum::<usize>() < 24 {
                assert!(
                    Instant::now() < deadline,
                    "{:?}: consumed {:?}",
                    t.side,
                    counts.lock().unwrap()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            obs!(o, "consumed per consumer {:?}", counts.lock().unwrap());

            let (_, c1) = consumers.remove(1);
            c1.shutdown().await.unwrap();
            let refs: Vec<(&str, &PushConsumer)> = consumers.iter().map(|(n, c)| (*n, c)).collect();
            let assignment = settled(&t, &refs, &topic).await;
            for (name, queues) in &assignment {
                obs!(o, "after c1 left, {name} owns {queues:?}");
            }
            for (_, c) in consumers {
                c.shutdown().await.unwrap();
            }
            t.shutdown().await;
            o
        }
    })
    .await;
}
