//! Issue 4, scenario 7: broadcasting — every consumer gets every message; the local offset files
//! (LocalFileOffsetStore under a temp root) survive a restart, so the consumed part is not
//! delivered again.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmq_producer::Message;
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, within};

const QUEUES: i32 = 4;

/// Consumer `label` of the test; `run` is the test's own prefix for instance names, so that a
/// restarted consumer has the same client id (and so finds its offset files).
fn spec(env: &Env, group: &str, topic: &str, run: &str, label: usize, dir: &Path) -> ConsumerSpec {
    ConsumerSpec::new(env.namesrv(), group, topic)
        .broadcasting()
        .instance(format!("{run}-{label}"))
        .offset_dir(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_consumer_gets_everything_and_local_offsets_survive_a_restart() {
    within(TEST_TIMEOUT, async {
        const FIRST: usize = 200;
        const SECOND: usize = 100;
        let env = Env::new().await;
        let topic = env.topic("push_broadcast", QUEUES).await;
        let group = rmq_testkit::unique_name("push_broadcast_cg");
        let dir = tempfile::tempdir().expect("temp dir");
        let run = rmq_testkit::unique_name("broadcast");
        let producer = env.producer().await;
        let first: HashSet<String> = env
            .send_spread(&producer, FIRST, |i| Message::new(&topic, format!("a{i}")))
            .await
            .into_iter()
            .map(|s| s.msg_id)
            .collect();

        // Run 1: both consumers get all of the first part.
        let recs = [Arc::new(Recorder::new()), Arc::new(Recorder::new())];
        let mut consumers = Vec::new();
        for (label, rec) in recs.iter().enumerate() {
            let c = consumer::start(
                spec(&env, &group, &topic, &run, label, dir.path()),
                consumer::recording(rec.clone(), label, |_, _| false),
            )
            .await;
            consumers.push(c);
        }
        for rec in &recs {
            rec.wait_distinct(FIRST, Duration::from_secs(60)).await;
        }
        let client_ids: Vec<String> = consumers.iter().map(consumer::client_id).collect();
        assert_ne!(client_ids[0], client_ids[1]);
        for c in consumers.drain(..) {
            c.shutdown().await.expect("clean shutdown");
        }
        for (rec, id) in recs.iter().zip(&client_ids) {
            rec.with(|seen| {
                assert!(seen.unexpected(&first).is_empty());
                assert_eq!(seen.distinct(), FIRST, "{id} got every message");
            });
            // The offset files are where the store keeps them: <root>/<client id>/<group>/.
            let group_dir = dir.path().join(id).join(&group);
            assert!(
                group_dir.is_dir(),
                "{} holds the offsets of {id}",
                group_dir.display()
            );
        }

        // Run 2: the same consumers (same client ids, same root) get only the new part.
        let second: HashSet<String> = env
            .send_spread(&producer, SECOND, |i| Message::new(&topic, format!("b{i}")))
            .await
            .into_iter()
            .map(|s| s.msg_id)
            .collect();
        producer.shutdown().await.expect("producer shutdown");
        let recs2 = [Arc::new(Recorder::new()), Arc::new(Recorder::new())];
        for (label, rec) in recs2.iter().enumerate() {
            let c = consumer::start(
                spec(&env, &group, &topic, &run, label, dir.path()),
                consumer::recording(rec.clone(), label, |_, _| false),
            )
            .await;
            assert_eq!(consumer::client_id(&c), client_ids[label]);
            consumers.push(c);
        }
        for rec in &recs2 {
            rec.wait_for(Duration::from_secs(60), "the second part", |s| {
                second.iter().all(|id| s.counts.contains_key(id))
            })
            .await;
        }
        // Every queue consumed up to its end: anything older would have come first.
        for c in &consumers {
            let want = env.max_offsets(&topic, QUEUES).await;
            rmq_tests_integration::poll_until(
                Duration::from_secs(10),
                Duration::from_millis(20),
                "local committed offsets at the end of every queue",
                || {
                    let want = &want;
                    let topic = &topic;
                    let env = &env;
                    async move {
                        let have: Vec<Option<i64>> = (0..QUEUES)
                            .map(|q| consumer::committed_offset(c, &env.mq(topic, q)))
                            .collect();
                        let want: Vec<Option<i64>> = want.iter().map(|m| Some(*m)).collect();
                        if have == want { Ok(()) } else { Err(have) }
                    }
                },
            )
            .await;
        }
        for c in consumers {
            c.shutdown().await.expect("clean shutdown");
        }
        for (label, rec) in recs2.iter().enumerate() {
            rec.with(|seen| {
                let again: Vec<_> = seen
                    .counts
                    .keys()
                    .filter(|id| first.contains(*id))
                    .collect();
                assert!(
                    again.is_empty(),
                    "consumer {label} got {} messages of the first part again after the restart",
                    again.len()
                );
                assert!(seen.unexpected(&second).is_empty());
                assert_eq!(seen.distinct(), SECOND);
            });
        }
        env.shutdown().await;
    })
    .await;
}
