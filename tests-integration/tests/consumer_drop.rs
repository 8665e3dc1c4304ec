//! A started consumer dropped without `shutdown()`: its offsets are persisted right after the
//! drop by a task of the runtime (never blocking the dropping thread; the tests wait for them at
//! the broker), and a warning names `shutdown()`.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_client_core::ClientConfig;
use rmq_consumer_pull::PullConsumer;
use rmq_consumer_push::{ConsumeFrom, ConsumeResult, PushConsumer, listener};
use rmq_producer::Message;
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

/// Long enough that the periodic persist never runs during the test.
const NEVER: Duration = Duration::from_secs(3600);

/// What the `tracing` subscriber wrote.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log buffer")).into_owned()
    }
}

fn client(env: &Env) -> ClientConfig {
    ClientConfig::builder()
        .namesrv_addr(env.namesrv())
        .instance_name(rmq_testkit::unique_name("drop"))
        .persist_consumer_offset_interval(NEVER)
        .build()
        .expect("client config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_push_consumer_persists_its_offsets_and_warns() {
    within(TEST_TIMEOUT, async {
        const QUEUES: i32 = 2;
        const N: usize = 20;
        let env = Env::new().await;
        let topic = env.topic("drop_push", QUEUES).await;
        let group = rmq_testkit::unique_name("drop_cg");
        let producer = env.producer().await;
        let sent = env
            .send_spread(&producer, N, |i| {
                Message::new(topic.as_str(), format!("m{i}"))
            })
            .await;
        // From the acknowledged sends: the broker's max offset can lag right after them.
        let max = rmq_testkit::env::ends_after(&sent, QUEUES);

        let consumed = Arc::new(AtomicUsize::new(0));
        let counter = consumed.clone();
        let push = PushConsumer::builder()
            .group(group.as_str())
            .client_config(client(&env))
            .subscribe(topic.as_str(), "*")
            .consume_from(ConsumeFrom::FirstOffset)
            .start(listener!(clone(counter) async |msgs, _ctx| {
                counter.fetch_add(msgs.len(), Ordering::SeqCst);
                ConsumeResult::Success
            }))
            .await
            .expect("push consumer starts");
        // Consumed and committed in memory (nothing persisted yet: the interval is an hour).
        poll_until(
            Duration::from_secs(60),
            Duration::from_millis(50),
            "every message consumed and committed in memory",
            || async {
                let snapshot = push.inspect();
                let done = snapshot
                    .iter()
                    .filter(|q| q.queue.topic == topic)
                    .filter(|q| {
                        usize::try_from(q.queue.queue_id)
                            .is_ok_and(|i| q.committed_offset == max.get(i).copied())
                    })
                    .count();
                if done == QUEUES as usize {
                    Ok(())
                } else {
                    Err(snapshot)
                }
            },
        )
        .await;
        assert!(consumed.load(Ordering::SeqCst) >= N);
        assert_ne!(
            env.committed_offsets(&group, &topic, QUEUES).await,
            max.iter().map(|m| Some(*m)).collect::<Vec<_>>(),
            "persisted before the drop: the test would prove nothing"
        );

        let log = Captured::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || writer.clone())
            .finish();
        {
            let _guard = tracing::subscriber::set_default(subscriber);
            drop(push);
        }
        // Persisted by the drop's background task, bounded by its limit.
        let want: Vec<Option<i64>> = max.iter().map(|m| Some(*m)).collect();
        poll_until(
            Duration::from_secs(10),
            Duration::from_millis(100),
            "offsets persisted after the drop",
            || {
                let (env, group, topic, want) = (&env, &group, &topic, &want);
                async move {
                    let got = env.committed_offsets(group, topic, QUEUES).await;
                    if &got == want { Ok(()) } else { Err(got) }
                }
            },
        )
        .await;
        let text = log.text();
        assert!(text.contains("dropped without shutdown()"), "{text}");
        assert!(text.contains("offsets persisted"), "{text}");
        producer.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_pull_consumer_persists_its_offsets() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("drop_pull", 1).await;
        let group = rmq_testkit::unique_name("drop_pg");
        let producer = env.producer().await;
        for i in 0..5 {
            env.send_to_queue(&producer, Message::new(topic.as_str(), format!("m{i}")), 0)
                .await;
        }
        let pull = PullConsumer::builder()
            .group(group.as_str())
            .client_config(client(&env))
            .register_topic(topic.as_str())
            .start()
            .await
            .expect("pull consumer starts");
        let mq = env.mq(&topic, 0);
        pull.update_consume_offset(&mq, 3)
            .expect("offset in memory");
        // Nothing stored yet (a 5.x broker answers the queue's minimum,
        // 0, for a group without an offset; 4.9.x answers none).
        let before = env.committed_offset(&group, &mq).await;
        assert!(
            matches!(before, None | Some(0)),
            "stored before the drop: {before:?}"
        );
        drop(pull);
        poll_until(
            Duration::from_secs(10),
            Duration::from_millis(100),
            "offset persisted after the drop",
            || {
                let (env, group, mq) = (&env, &group, &mq);
                async move {
                    match env.committed_offset(group, mq).await {
                        Some(3) => Ok(()),
                        other => Err(other),
                    }
                }
            },
        )
        .await;
        producer.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}
