//! A lite pull consumer pipeline (`filter` + `buffer_unordered(8)`, per-message commits) in a
//! child process SIGKILLed mid-way; a new consumer of the group finishes: every message is
//! handled at least once.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmq_consumer_pull::{ConsumeFrom, LitePullConsumer};
use rmq_producer::Message;
use rmq_tests_integration::child::{Child, ChildConfig, ChildMode, SKIP_TAG};
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_lite_pipeline_loses_nothing() {
    within(TEST_TIMEOUT, async {
        const N: usize = 4_000;
        const QUEUES: i32 = 4;
        /// The child is killed once it has recorded this many messages.
        const KILL_AFTER: usize = 1_200;
        let env = Env::new().await;
        let topic = env.topic("lite_crash", QUEUES).await;
        let group = rmq_testkit::unique_name("lite_crash_cg");
        let producer = env.producer().await;
        let sent = env
            .send_spread(&producer, N, |i| {
                let tag = if i % 5 == 0 { SKIP_TAG } else { "work" };
                Message::new(&topic, i.to_string()).with_tags(tag)
            })
            .await;
        producer.shutdown().await.expect("producer shutdown");

        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Child::spawn(
            env!("CARGO_BIN_EXE_lite-child"),
            &ChildConfig {
                namesrv: env.namesrv().to_owned(),
                group: group.clone(),
                topic: topic.clone(),
                out: dir.path().join("handled.txt"),
                mode: ChildMode::Record,
                fail_tag: None,
                // Up to 20 ms of work per message: eight in flight finish out of order.
                delay: Duration::from_millis(20),
            },
        );
        let started = Instant::now();
        poll_until(
            Duration::from_secs(60),
            Duration::from_millis(10),
            "the child handled a part",
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
            "child killed after {:?} with {} messages handled",
            started.elapsed(),
            records.len()
        );
        assert!(records.len() < N, "killed mid-way, not after the end");
        let by_child: HashSet<&str> = records.iter().map(|r| r.msg_id.as_str()).collect();
        // Out-of-order completion really happened: some recorded offset is below one
        // recorded before it in the same queue.
        let reordered = records
            .windows(2)
            .any(|w| w[0].queue_id == w[1].queue_id && w[1].queue_offset < w[0].queue_offset);
        println!("out-of-order completions seen: {reordered}");

        // The same pipeline in this process, until every message not handled by the child is.
        let left: HashSet<&str> = sent
            .iter()
            .map(|s| s.msg_id.as_str())
            .filter(|id| !by_child.contains(id))
            .collect();
        let consumer = LitePullConsumer::builder()
            .namesrv_addr(env.namesrv())
            .group(&group)
            .subscribe(&topic, "*")
            .consume_from(ConsumeFrom::FirstOffset)
            .auto_commit(false)
            .start()
            .await
            .expect("the new consumer starts");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let pipeline = tokio::spawn({
            let consumer = consumer.clone();
            async move {
                let c = &consumer;
                consumer
                    .stream()
                    .map(|m| m.expect("stream item"))
                    .map(|m| async move {
                        c.commit_message(&m).await.expect("commit");
                        m.msg_id
                    })
                    .buffer_unordered(8)
                    .for_each(|id| {
                        let _ = tx.send(id);
                        async {}
                    })
                    .await;
            }
        });
        let mut seen: HashSet<String> = HashSet::new();
        let mut second = 0usize;
        let mut missing = left.len();
        while missing > 0 {
            let id = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .unwrap_or_else(|_| panic!("{missing} messages never came back"))
                .expect("the pipeline goes on");
            second += 1;
            if left.contains(id.as_str()) && seen.insert(id) {
                missing -= 1;
            }
        }
        // Everything committed: the group's offsets reach the end of every queue.
        env.wait_committed_at_max(&group, &topic, QUEUES, Duration::from_secs(15))
            .await;
        consumer.shutdown().await.expect("clean shutdown");
        pipeline.await.expect("the pipeline ends at shutdown");
        while rx.try_recv().is_ok() {
            second += 1;
        }
        println!(
            "lite crash: {N} messages; {} handled by the killed child, {second} by the new \
             consumer ({} again)",
            records.len(),
            second - left.len()
        );
        env.shutdown().await;
    })
    .await;
}
