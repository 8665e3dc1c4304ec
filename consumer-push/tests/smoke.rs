//! Smoke test against the real broker: 1 000 messages over 4 queues are
//! consumed exactly once; after shutdown the broker's committed offsets
//! equal the queues' max offsets and no task of the consumer is left.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_consumer_push::{ConsumeFrom, ConsumeResult, PushConsumer, listener_fn};
use rmq_testkit::env::Env;
use rmq_testkit::wait::{LONG_TEST_TIMEOUT, poll_until, within};

const MESSAGES: usize = 1000;
const QUEUES: i32 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_messages_over_four_queues_consumed_once() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let ns = env.namesrv().to_owned();
        let topic = env.topic("cp_smoke", QUEUES).await;

        env.produce(&topic, MESSAGES, |i| format!("m-{i}")).await;

        let metrics = tokio::runtime::Handle::current().metrics();
        let baseline = metrics.num_alive_tasks();

        let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let sink = seen.clone();
        let group = rmq_testkit::unique_name("cg");
        let consumer = PushConsumer::builder()
            .group(group.as_str())
            .namesrv_addr(ns.clone())
            .consume_from(ConsumeFrom::FirstOffset)
            .subscribe(topic.as_str(), "*")
            .start(listener_fn(move |msgs, _ctx| {
                let sink = sink.clone();
                Box::pin(async move {
                    let mut seen = sink.lock().unwrap();
                    for m in msgs {
                        let body = String::from_utf8_lossy(&m.body).into_owned();
                        *seen.entry(body).or_default() += 1;
                    }
                    ConsumeResult::Success
                })
            }))
            .await
            .expect("consumer starts");
        assert_eq!(
            consumer
                .inspect()
                .iter()
                .filter(|s| s.queue.topic == topic)
                .count(),
            usize::try_from(QUEUES).unwrap(),
            "all queues assigned at start: {:?}",
            consumer.inspect()
        );

        wait_consumed(&seen, MESSAGES, &consumer).await;
        // Every queue empty and committed up to where it pulled.
        wait_all_committed(&consumer).await;
        consumer.shutdown().await.expect("shutdown");
        consumer
            .shutdown()
            .await
            .expect("second shutdown is a no-op");
        assert!(consumer.is_shutdown());

        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), MESSAGES);
        let dups: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).collect();
        assert!(dups.is_empty(), "consumed more than once: {dups:?}");
        for i in 0..MESSAGES {
            assert!(seen.contains_key(&format!("m-{i}")), "m-{i} missing");
        }

        assert_committed_to_the_end(&env, &topic, &group).await;

        // No task of the consumer outlives shutdown.
        wait_tasks_back_to(&metrics, baseline).await;
        env.shutdown().await;
    })
    .await;
}

/// Listener calls that wait (a third of them) and calls that answer at once
/// share `consume_concurrency` permits: never more calls run at once, each
/// message is consumed once with its CONSUME_START_TIME stamped, and the
/// offsets are committed up to the queues' ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_and_immediate_calls_share_the_permits() {
    const CONCURRENCY: usize = 3;
    const COUNT: usize = 600;
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let ns = env.namesrv().to_owned();
        let topic = env.topic("cp_permits", QUEUES).await;
        env.produce(&topic, COUNT, |i| format!("p-{i}")).await;

        let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let unstamped = Arc::new(AtomicUsize::new(0));
        let (sink, run, top, bad) = (
            seen.clone(),
            running.clone(),
            most.clone(),
            unstamped.clone(),
        );
        let group = rmq_testkit::unique_name("cg");
        let consumer = PushConsumer::builder()
            .group(group.as_str())
            .namesrv_addr(ns.clone())
            .consume_from(ConsumeFrom::FirstOffset)
            .consume_concurrency(CONCURRENCY)
            .consume_batch_max_size(1)
            .subscribe(topic.as_str(), "*")
            .start(listener_fn(move |msgs, _ctx| {
                let now = rmq_testkit::raw::now_ms();
                let in_flight = run.fetch_add(1, Ordering::SeqCst) + 1;
                top.fetch_max(in_flight, Ordering::SeqCst);
                let waits = msgs.iter().any(|m| m.queue_offset % 3 == 0);
                for m in msgs {
                    let start = m
                        .property("CONSUME_START_TIME")
                        .and_then(|v| v.parse::<i64>().ok());
                    if !start.is_some_and(|s| s >= m.store_timestamp && s <= now) {
                        bad.fetch_add(1, Ordering::SeqCst);
                    }
                    let body = String::from_utf8_lossy(&m.body).into_owned();
                    *sink.lock().unwrap().entry(body).or_default() += 1;
                }
                let run = run.clone();
                Box::pin(async move {
                    if waits {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    run.fetch_sub(1, Ordering::SeqCst);
                    ConsumeResult::Success
                })
            }))
            .await
            .expect("consumer starts");

        wait_consumed(&seen, COUNT, &consumer).await;
        wait_all_committed(&consumer).await;
        consumer.shutdown().await.expect("shutdown");

        let most = most.load(Ordering::SeqCst);
        assert!(
            most <= CONCURRENCY,
            "{most} listener calls ran at once, consume_concurrency is {CONCURRENCY}"
        );
        assert_eq!(
            unstamped.load(Ordering::SeqCst),
            0,
            "messages without a valid CONSUME_START_TIME"
        );
        let seen = seen.lock().unwrap().clone();
        let dups: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).collect();
        assert!(dups.is_empty(), "consumed more than once: {dups:?}");
        assert_committed_to_the_end(&env, &topic, &group).await;
        env.shutdown().await;
    })
    .await;
}

/// Every 10th message fails its first delivery (one of them by panicking):
/// each comes back once through `%RETRY%<group>`, with reconsume times 1
/// and its original topic; nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_messages_come_back_once_via_retry() {
    within(LONG_TEST_TIMEOUT, async {
        const N: usize = 50;
        let env = Env::new().await;
        let ns = env.namesrv().to_owned();
        let topic = env.topic("cp_retry", 2).await;
        env.produce(&topic, N, |i| format!("{i}")).await;

        // body → (topic, reconsume_times) of every delivery
        type Log = Arc<Mutex<HashMap<usize, Vec<(String, i32)>>>>;
        let log: Log = Arc::default();
        let sink = log.clone();
        let consumer = PushConsumer::builder()
            .group(rmq_testkit::unique_name("cg"))
            .namesrv_addr(ns.clone())
            .consume_from(ConsumeFrom::FirstOffset)
            .subscribe(topic.as_str(), "*")
            .start(listener_fn(move |msgs, _ctx| {
                let sink = sink.clone();
                Box::pin(async move {
                    let mut fail = false;
                    let mut explode = false;
                    {
                        let mut log = sink.lock().unwrap();
                        for m in msgs {
                            let i: usize = String::from_utf8_lossy(&m.body).parse().unwrap();
                            let deliveries = log.entry(i).or_default();
                            deliveries.push((m.topic.clone(), m.reconsume_times));
                            if i % 10 == 0 && deliveries.len() == 1 {
                                fail = true;
                                explode = i == 20;
                            }
                        }
                    }
                    assert!(!explode, "listener panics on purpose");
                    if fail {
                        ConsumeResult::ReconsumeLater
                    } else {
                        ConsumeResult::Success
                    }
                })
            }))
            .await
            .expect("consumer starts");

        poll_until(
            Duration::from_secs(120),
            Duration::from_millis(100),
            "every delivery and redelivery",
            || async {
                let total: usize = log.lock().unwrap().values().map(Vec::len).sum();
                if total >= N + N / 10 {
                    Ok(())
                } else {
                    Err(format!(
                        "{total} deliveries so far; queues: {:#?}",
                        consumer.inspect()
                    ))
                }
            },
        )
        .await;
        wait_all_committed(&consumer).await;
        consumer.shutdown().await.expect("shutdown");

        let log = log.lock().unwrap().clone();
        assert_eq!(log.len(), N, "every message delivered");
        for (i, deliveries) in &log {
            if i % 10 == 0 {
                assert_eq!(
                    deliveries,
                    &vec![(topic.clone(), 0), (topic.clone(), 1)],
                    "message {i}"
                );
            } else {
                assert_eq!(deliveries, &vec![(topic.clone(), 0)], "message {i}");
            }
        }
        env.shutdown().await;
    })
    .await;
}

/// A listener that never returns: shutdown waits the configured time, then
/// abandons it; nothing stays running and the stuck message stays
/// uncommitted (the committed offset does not pass it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_abandons_stuck_listener_calls() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let ns = env.namesrv().to_owned();
        let topic = env.topic("cp_stuck", 1).await;
        env.produce(&topic, 5, |i| format!("{i}")).await;
        let metrics = tokio::runtime::Handle::current().metrics();
        let baseline = metrics.num_alive_tasks();

        let group = rmq_testkit::unique_name("cg");
        let consumer = PushConsumer::builder()
            .group(group.as_str())
            .namesrv_addr(ns.clone())
            .consume_from(ConsumeFrom::FirstOffset)
            .subscribe(topic.as_str(), "*")
            .shutdown_await_timeout(Duration::from_millis(500))
            .start(listener_fn(|msgs, _ctx| {
                let stuck = msgs.first().is_some_and(|m| &m.body[..] == b"2");
                Box::pin(async move {
                    if stuck {
                        std::future::pending::<()>().await;
                    }
                    ConsumeResult::Success
                })
            }))
            .await
            .expect("consumer starts");
        poll_until(
            Duration::from_secs(60),
            Duration::from_millis(50),
            "all but the stuck message consumed and committed",
            || async {
                let snaps: Vec<_> = consumer
                    .inspect()
                    .into_iter()
                    .filter(|s| s.queue.topic == topic)
                    .collect();
                if snaps.len() == 1 && snaps[0].count == 1 && snaps[0].committed_offset == Some(2) {
                    assert_eq!(snaps[0].in_flight, 1);
                    assert_eq!(snaps[0].min_offset, Some(2));
                    Ok(())
                } else {
                    Err(format!("{snaps:#?}"))
                }
            },
        )
        .await;
        let started = tokio::time::Instant::now();
        consumer.shutdown().await.expect("shutdown");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(500),
            "waited for the listener: {took:?}"
        );
        assert!(took < Duration::from_secs(10), "bounded: {took:?}");
        let committed = env.committed_offset(&group, &env.mq(&topic, 0)).await;
        assert_eq!(committed, Some(2), "the stuck message is not committed");
        wait_tasks_back_to(&metrics, baseline).await;
        env.shutdown().await;
    })
    .await;
}

/// Broadcasting: two consumers of one group (distinct instance names) each
/// get every message; offsets go to the local files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcasting_delivers_everything_to_every_member() {
    use rmq_consumer_push::{ClientConfig, MessageModel};
    within(LONG_TEST_TIMEOUT, async {
        const N: usize = 20;
        let env = Env::new().await;
        let ns = env.namesrv().to_owned();
        let topic = env.topic("cp_bcast", 2).await;
        let group = rmq_testkit::unique_name("cg");
        let dir = std::env::temp_dir().join(rmq_testkit::unique_name("cp_offsets"));
        let mut consumers = Vec::new();
        let mut logs = Vec::new();
        for name in ["b1", "b2"] {
            let log: Arc<Mutex<Vec<String>>> = Arc::default();
            let sink = log.clone();
            let client = ClientConfig::builder()
                .namesrv_addr(ns.clone())
                .instance_name(format!("{name}_{group}"))
                .build()
                .expect("client config");
            let c = PushConsumer::builder()
                .group(group.as_str())
                .client_config(client)
                .message_model(MessageModel::Broadcasting)
                .offset_store_dir(&dir)
                .subscribe(topic.as_str(), "*")
                .start(listener_fn(move |msgs, _ctx| {
                    let sink = sink.clone();
                    Box::pin(async move {
                        let mut log = sink.lock().unwrap();
                        log.extend(
                            msgs.iter()
                                .map(|m| String::from_utf8_lossy(&m.body).into_owned()),
                        );
                        ConsumeResult::Success
                    })
                }))
                .await
                .expect("consumer starts");
            assert_eq!(
                c.inspect().len(),
                2,
                "broadcasting: every queue, no retry topic"
            );
            consumers.push(c);
            logs.push(log);
        }
        env.produce(&topic, N, |i| format!("{i}")).await;
        poll_until(
            Duration::from_secs(60),
            Duration::from_millis(50),
            "everything delivered to every member",
            || async {
                let got: Vec<usize> = logs.iter().map(|l| l.lock().unwrap().len()).collect();
                if got.iter().all(|n| *n >= N) {
                    Ok(())
                } else {
                    Err(format!("delivered per member: {got:?} of {N}"))
                }
            },
        )
        .await;
        for c in &consumers {
            c.shutdown().await.expect("shutdown");
        }
        for log in &logs {
            let mut got = log.lock().unwrap().clone();
            got.sort_by_key(|s| s.parse::<usize>().unwrap());
            let want: Vec<String> = (0..N).map(|i| i.to_string()).collect();
            assert_eq!(got, want);
        }
        let files = std::fs::read_dir(&dir).expect("offset dir").count();
        assert_eq!(files, 2, "one offset directory per client id");
        std::fs::remove_dir_all(&dir).ok();
        env.shutdown().await;
    })
    .await;
}

/// Waits (bounded) until `seen` holds `count` distinct bodies.
async fn wait_consumed(
    seen: &Mutex<HashMap<String, usize>>,
    count: usize,
    consumer: &PushConsumer,
) {
    poll_until(
        Duration::from_secs(120),
        Duration::from_millis(50),
        "every message consumed",
        || async {
            let n = seen.lock().unwrap().len();
            if n == count {
                Ok(())
            } else {
                Err(format!(
                    "only {n} of {count} consumed; queues: {:#?}",
                    consumer.inspect()
                ))
            }
        },
    )
    .await;
}

/// Every queue of `topic` got messages and `group`'s committed offset at
/// the broker is the queue's max offset.
async fn assert_committed_to_the_end(env: &Env, topic: &str, group: &str) {
    for queue_id in 0..QUEUES {
        let mq = env.mq(topic, queue_id);
        let max = env.max_offset(&mq).await;
        let committed = env.committed_offset(group, &mq).await;
        assert!(max > 0, "queue {queue_id} got messages");
        assert_eq!(committed, Some(max), "queue {queue_id}: committed offset");
    }
}

/// Waits (bounded) until every assigned queue holds nothing and its
/// committed offset reached the offset it pulls next: everything pulled was
/// consumed (or handed back) and committed. A queue that never consumed has
/// nothing to commit.
async fn wait_all_committed(consumer: &PushConsumer) {
    poll_until(
        Duration::from_secs(60),
        Duration::from_millis(20),
        "everything committed",
        || async {
            let snaps = consumer.inspect();
            let done = snaps.iter().all(|s| {
                s.count == 0
                    && s.committed_offset
                        .is_none_or(|c| Some(c) == s.next_pull_offset)
            });
            if done {
                Ok(())
            } else {
                Err(format!("{snaps:#?}"))
            }
        },
    )
    .await;
}

/// Waits (bounded) until no more tasks are alive than `baseline` (before the consumer started):
/// no task of the consumer outlives its shutdown.
async fn wait_tasks_back_to(metrics: &tokio::runtime::RuntimeMetrics, baseline: usize) {
    poll_until(
        Duration::from_secs(5),
        Duration::from_millis(20),
        "no task alive after shutdown beyond those before start",
        || async {
            let alive = metrics.num_alive_tasks();
            if alive > baseline {
                Err(format!("{alive} tasks alive, {baseline} before start"))
            } else {
                Ok(())
            }
        },
    )
    .await;
}
