//! Graceful shutdown drains, for every consumer kind: a consumer with a backlog is shut down
//! while it works; the listener calls (or stream deliveries, or acks) in flight finish before
//! `shutdown()` returns (bounded by the configured await time), nothing starts after it, what
//! finished is acked or committed, and a restarted consumer of the same group gets every other
//! message and none of the finished ones again.
//!
//! The push (concurrent, orderly) and lite `Stream` ones run on every broker line. Pop needs
//! RocketMQ 5 and the proxy is 5.x only: the `pop_` tests are `#[ignore]`d and `scripts/test.sh`
//! runs them in its pop step on 5.x, the `grpc_` ones in its gRPC step.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use rmq_consumer_pull::{ConsumeFrom, Expression, LitePullConsumer, SimpleConsumer};
use rmq_consumer_push::{
    ConsumeContext, ConsumeResult, MessageExt, MessageListener, OrderlyContext, OrderlyListener,
    OrderlyResult, PushConsumer, async_trait,
};
use rmq_producer::Message;
use rmq_testkit::grpc::{endpoint, typed_topic};
use rmq_tests_integration::consumer::ConsumerSpec;
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

/// Messages of the backlog.
const N: usize = 2_000;
/// Queues of the topic.
const QUEUES: i32 = 4;
/// How long the first consumer's listener works per call.
const WORK: Duration = Duration::from_millis(20);
/// The first consumer's shutdown await time: far above one call.
const AWAIT: Duration = Duration::from_secs(10);
/// The broker revives an unacked pop message this long after its invisible time at the
/// earliest, plus its precision (see consumer-pull `tests/simple.rs`).
const REVIVE_LATE: Duration = Duration::from_secs(3);

fn assert_v5(env: &Env) {
    assert!(
        env.broker.major_version() != Some(4),
        "pop needs RocketMQ 5; this broker is {}",
        env.broker.version
    );
}

/// What one consumer's listener did: the messages of the calls that started and of those that
/// finished, when the last call started and ended.
#[derive(Default)]
struct Calls {
    work: Duration,
    started: Mutex<HashSet<String>>,
    finished: Mutex<HashSet<String>>,
    finished_count: AtomicUsize,
    last_start: Mutex<Option<Instant>>,
    last_end: Mutex<Option<Instant>>,
}

impl Calls {
    fn new(work: Duration) -> Arc<Calls> {
        Arc::new(Calls {
            work,
            ..Calls::default()
        })
    }

    async fn call(&self, msgs: &[MessageExt]) {
        *self.last_start.lock().expect("lock") = Some(Instant::now());
        self.started
            .lock()
            .expect("lock")
            .extend(msgs.iter().map(|m| m.msg_id.clone()));
        if !self.work.is_zero() {
            tokio::time::sleep(self.work).await;
        }
        self.finished
            .lock()
            .expect("lock")
            .extend(msgs.iter().map(|m| m.msg_id.clone()));
        self.finished_count.fetch_add(msgs.len(), Ordering::AcqRel);
        *self.last_end.lock().expect("lock") = Some(Instant::now());
    }

    fn finished(&self) -> HashSet<String> {
        self.finished.lock().expect("lock").clone()
    }

    fn started(&self) -> HashSet<String> {
        self.started.lock().expect("lock").clone()
    }

    async fn wait_finished(&self, n: usize, limit: Duration) {
        poll_until(
            limit,
            Duration::from_millis(10),
            "listener calls finished",
            || {
                let got = self.finished_count.load(Ordering::Acquire);
                async move { if got >= n { Ok(()) } else { Err(got) } }
            },
        )
        .await;
    }
}

struct Concurrent(Arc<Calls>);

#[async_trait]
impl MessageListener for Concurrent {
    async fn consume(&self, msgs: &[MessageExt], _ctx: &mut ConsumeContext) -> ConsumeResult {
        self.0.call(msgs).await;
        ConsumeResult::Success
    }
}

struct Orderly(Arc<Calls>);

#[async_trait]
impl OrderlyListener for Orderly {
    async fn consume(&self, msgs: &[MessageExt], _ctx: &mut OrderlyContext) -> OrderlyResult {
        self.0.call(msgs).await;
        OrderlyResult::Success
    }
}

/// Starts a consumer of the group whose listener records into the calls.
type Start = dyn Fn(Arc<Calls>) -> BoxFuture<'static, PushConsumer> + Send + Sync;

/// The push scenario: `sent` waits in the topic; a consumer (`start`) works through a quarter
/// and is shut down; the calls in flight finish before `shutdown` returns and none starts
/// after; a second consumer of the group gets the rest and none of the finished ones, checked
/// until `quiet` after the shutdown.
async fn push_drains(kind: &str, sent: &HashSet<String>, start: &Start, quiet: Duration) {
    let first = Calls::new(WORK);
    let c = start(first.clone()).await;
    first
        .wait_finished(sent.len() / 4, Duration::from_secs(90))
        .await;
    let finished_before = first.finished().len();
    let busy = first.started().len().saturating_sub(finished_before);
    assert!(
        busy > 0,
        "{kind}: no listener call in flight when shutdown was called; nothing to drain"
    );
    let asked = Instant::now();
    c.shutdown().await.expect("shutdown");
    let returned = Instant::now();
    let took = returned - asked;
    let (started, finished) = (first.started(), first.finished());
    let in_flight = started.difference(&finished).count();
    assert_eq!(
        in_flight, 0,
        "{kind}: {in_flight} messages of calls that started did not finish before shutdown returned"
    );
    let last_end = first.last_end.lock().expect("lock").expect("calls ran");
    assert!(
        last_end <= returned,
        "{kind}: a call ended after shutdown returned"
    );
    assert!(
        took < AWAIT,
        "{kind}: shutdown took {took:?}, the calls take {WORK:?}"
    );
    println!(
        "{kind}: shutdown with {busy} messages in listener calls took {took:?}; {} finished",
        finished.len()
    );

    let second = Calls::new(Duration::ZERO);
    let c2 = start(second.clone()).await;
    let rest: HashSet<String> = sent.difference(&finished).cloned().collect();
    poll_until(
        Duration::from_secs(90),
        Duration::from_millis(20),
        "the restarted consumer got every message not finished",
        || {
            let got = second.finished();
            let missing = rest.difference(&got).count();
            async move { if missing == 0 { Ok(()) } else { Err(missing) } }
        },
    )
    .await;
    tokio::time::sleep_until((returned + quiet).into()).await;
    let again: Vec<String> = second.finished().intersection(&finished).cloned().collect();
    assert!(
        again.is_empty(),
        "{kind}: {} finished messages came again: {:?}",
        again.len(),
        again.iter().take(10).collect::<Vec<_>>()
    );
    let after = first.last_start.lock().expect("lock").expect("calls ran");
    assert!(
        after <= returned,
        "{kind}: a call started after shutdown returned"
    );
    assert_eq!(
        first.started(),
        started,
        "{kind}: nothing started after shutdown"
    );
    println!(
        "{kind}: the restarted consumer got the {} others, none of the {} finished",
        rest.len(),
        finished.len()
    );
    c2.shutdown().await.expect("shutdown");
}

async fn backlog(env: &Env, topic: &str) -> HashSet<String> {
    let producer = env.producer().await;
    let sent = env
        .send_spread(&producer, N, |i| Message::new(topic, i.to_string()))
        .await;
    producer.shutdown().await.expect("producer shutdown");
    sent.into_iter().map(|s| s.msg_id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_concurrent_drains_on_shutdown() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("drain_push", QUEUES).await;
        let group = rmq_testkit::unique_name("drain_push");
        let sent = backlog(&env, &topic).await;
        let (namesrv, g, t) = (env.namesrv().to_owned(), group.clone(), topic.clone());
        let start: Box<Start> = Box::new(move |calls| {
            let b = ConsumerSpec::new(&namesrv, &g, &t)
                .builder()
                .shutdown_await_timeout(AWAIT);
            Box::pin(async move { b.start(Concurrent(calls)).await.expect("starts") })
        });
        push_drains("push concurrent", &sent, &*start, Duration::ZERO).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_orderly_drains_on_shutdown() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("drain_orderly", QUEUES).await;
        let group = rmq_testkit::unique_name("drain_orderly");
        let sent = backlog(&env, &topic).await;
        let (namesrv, g, t) = (env.namesrv().to_owned(), group.clone(), topic.clone());
        let start: Box<Start> = Box::new(move |calls| {
            let b = ConsumerSpec::new(&namesrv, &g, &t)
                .builder()
                .shutdown_await_timeout(AWAIT);
            Box::pin(async move { b.start_orderly(Orderly(calls)).await.expect("starts") })
        });
        push_drains("push orderly", &sent, &*start, Duration::ZERO).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn pop_push_drains_on_shutdown() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("drain_pop", QUEUES).await;
        let group = rmq_testkit::unique_name("drain_pop");
        let sent = backlog(&env, &topic).await;
        let invisible = Duration::from_secs(10);
        let (namesrv, g, t) = (env.namesrv().to_owned(), group.clone(), topic.clone());
        let start: Box<Start> = Box::new(move |calls| {
            let b = ConsumerSpec::new(&namesrv, &g, &t)
                .pop(invisible)
                .builder()
                .shutdown_await_timeout(AWAIT);
            Box::pin(async move { b.start(Concurrent(calls)).await.expect("starts") })
        });
        // An ack lost at shutdown would bring its message back after the invisible time.
        push_drains("pop-mode push", &sent, &*start, invisible + REVIVE_LATE).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn grpc_push_drains_on_shutdown() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = typed_topic("DrainGrpc", "NORMAL").await;
        let group = rmq_testkit::unique_name("drain_grpc");
        let sent = backlog(&env, &topic).await;
        let (g, t) = (group.clone(), topic.clone());
        let start: Box<Start> = Box::new(move |calls| {
            let b = PushConsumer::builder()
                .group(g.clone())
                .endpoint(endpoint())
                .subscribe(t.clone(), "*")
                .shutdown_await_timeout(AWAIT);
            Box::pin(async move { b.start(Concurrent(calls)).await.expect("starts") })
        });
        push_drains("gRPC push", &sent, &*start, Duration::from_secs(3)).await;
    })
    .await;
}

/// A lite pull consumer's `Stream` in a pipeline (8 deliveries worked on at once, auto-commit)
/// shut down mid-way: the stream ends, the deliveries in flight finish, every handed-out
/// message is committed, and the next consumer of the group starts right after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lite_stream_drains_on_shutdown() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("drain_lite", QUEUES).await;
        let group = rmq_testkit::unique_name("drain_lite");
        let sent = backlog(&env, &topic).await;
        let lite = || {
            LitePullConsumer::builder()
                .group(&group)
                .namesrv_addr(env.namesrv())
                .consume_from(ConsumeFrom::FirstOffset)
                .subscribe(&topic, "*")
                .start()
        };
        let c = lite().await.expect("lite consumer starts");
        let handed = Arc::new(Mutex::new(HashSet::new()));
        let finished = Arc::new(Mutex::new(HashSet::new()));
        let count = Arc::new(AtomicUsize::new(0));
        let pipeline = {
            let (handed, finished, count) = (handed.clone(), finished.clone(), count.clone());
            let stream = c.stream();
            tokio::spawn(async move {
                stream
                    .map(|m| {
                        let m = m.expect("stream item");
                        handed.lock().expect("lock").insert(m.msg_id.clone());
                        async move {
                            tokio::time::sleep(WORK).await;
                            m
                        }
                    })
                    .buffer_unordered(8)
                    .for_each(|m| {
                        finished.lock().expect("lock").insert(m.msg_id);
                        count.fetch_add(1, Ordering::AcqRel);
                        async {}
                    })
                    .await;
            })
        };
        poll_until(
            Duration::from_secs(90),
            Duration::from_millis(10),
            "a quarter handled",
            || {
                let got = count.load(Ordering::Acquire);
                async move { if got >= N / 4 { Ok(()) } else { Err(got) } }
            },
        )
        .await;
        let asked = Instant::now();
        c.shutdown().await.expect("shutdown");
        let took = asked.elapsed();
        tokio::time::timeout(Duration::from_secs(5), pipeline)
            .await
            .expect("the stream ends at shutdown and the pipeline drains")
            .expect("pipeline");
        let handed = handed.lock().expect("lock").clone();
        let finished = finished.lock().expect("lock").clone();
        assert_eq!(handed, finished, "every handed-out delivery finished");
        println!(
            "lite stream: shutdown after {} handed out took {took:?}",
            handed.len()
        );

        let c2 = lite().await.expect("lite consumer starts");
        let rest: HashSet<String> = sent.difference(&finished).cloned().collect();
        let mut got = HashSet::new();
        let deadline = Instant::now() + Duration::from_secs(90);
        while !rest.is_subset(&got) {
            assert!(
                Instant::now() < deadline,
                "the restarted consumer misses {}",
                rest.difference(&got).count()
            );
            for m in c2.poll(Duration::from_millis(500)).await.expect("poll") {
                assert!(
                    !finished.contains(&m.msg_id),
                    "a finished (committed) message came again: {}",
                    m.msg_id
                );
                got.insert(m.msg_id);
            }
        }
        println!(
            "lite stream: the restarted consumer got the {} others, none of the {} finished",
            rest.len(),
            finished.len()
        );
        c2.shutdown().await.expect("shutdown");
    })
    .await;
}

/// The simple-consumer scenario: three workers receive, work on and ack each message; the
/// consumer is shut down while they do. Receives in flight end, acks in flight finish (an ack
/// that answered `Ok` is never redelivered); a restarted consumer gets every message whose ack
/// was not taken, after its invisible time, and none of the acked ones, checked until the
/// invisible time (and the broker's revive delay) has passed after the shutdown.
async fn simple_drains(
    kind: &str,
    sent: &HashSet<String>,
    start: impl Fn() -> BoxFuture<'static, SimpleConsumer>,
    invisible: Duration,
) {
    let c = start().await;
    let acked = Arc::new(Mutex::new(HashSet::new()));
    let refused = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..3 {
        let (c, acked, refused) = (c.clone(), acked.clone(), refused.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let got = match c.receive(8, invisible).await {
                    Ok(got) => got,
                    Err(e) if e.is_shutdown() => return,
                    Err(e) => panic!("receive: {e}"),
                };
                for m in got {
                    tokio::time::sleep(WORK / 4).await;
                    match c.ack(&m).await {
                        Ok(()) => {
                            acked.lock().expect("lock").insert(m.msg_id.clone());
                        }
                        Err(e) if e.is_shutdown() => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("ack: {e}"),
                    }
                }
            }
        }));
    }
    poll_until(
        Duration::from_secs(90),
        Duration::from_millis(10),
        "a quarter acked",
        || {
            let got = acked.lock().expect("lock").len();
            async move {
                if got >= sent.len() / 4 {
                    Ok(())
                } else {
                    Err(got)
                }
            }
        },
    )
    .await;
    let asked = Instant::now();
    c.shutdown().await.expect("shutdown");
    let returned = Instant::now();
    for w in workers {
        w.await.expect("worker ends after the shutdown");
    }
    let acked = acked.lock().expect("lock").clone();
    println!(
        "{kind}: shutdown after {} acked took {:?}; {} acks refused after it",
        acked.len(),
        returned - asked,
        refused.load(Ordering::Relaxed)
    );

    let c2 = start().await;
    let rest: HashSet<String> = sent.difference(&acked).cloned().collect();
    let mut got = HashSet::new();
    let quiet_until = returned + invisible + REVIVE_LATE;
    let deadline = Instant::now() + invisible * 3 + Duration::from_secs(60);
    while !rest.is_subset(&got) || Instant::now() < quiet_until {
        assert!(
            Instant::now() < deadline,
            "{kind}: the restarted consumer misses {}",
            rest.difference(&got).count()
        );
        let batch = c2.receive(32, invisible).await.expect("receive");
        for m in &batch {
            assert!(
                !acked.contains(&m.msg_id),
                "{kind}: a message whose ack was taken came again: {}",
                m.msg_id
            );
            got.insert(m.msg_id.clone());
        }
        if !batch.is_empty() {
            c2.ack_batch(&batch).await.expect("ack");
        }
    }
    println!(
        "{kind}: the restarted consumer got the {} others, none of the {} acked",
        rest.len(),
        acked.len()
    );
    c2.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn pop_simple_drains_on_shutdown() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("drain_simple", QUEUES).await;
        let group = rmq_testkit::unique_name("drain_simple");
        let sent = backlog(&env, &topic).await;
        let namesrv = env.namesrv().to_owned();
        let start = || -> BoxFuture<'static, SimpleConsumer> {
            let b = SimpleConsumer::builder()
                .group(group.clone())
                .namesrv_addr(namesrv.clone())
                .subscribe(topic.clone(), Expression::all())
                .await_duration(Duration::from_secs(1));
            Box::pin(async move { b.start().await.expect("simple consumer starts") })
        };
        simple_drains("simple (pop)", &sent, start, Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn grpc_simple_drains_on_shutdown() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = typed_topic("DrainGrpcSimple", "NORMAL").await;
        let group = rmq_testkit::unique_name("drain_grpc_simple");
        let sent = backlog(&env, &topic).await;
        let start = || -> BoxFuture<'static, SimpleConsumer> {
            let b = SimpleConsumer::builder()
                .group(group.clone())
                .endpoint(endpoint())
                .subscribe(topic.clone(), Expression::all())
                .await_duration(Duration::from_secs(1));
            Box::pin(async move { b.start().await.expect("gRPC simple consumer starts") })
        };
        // The proxy's smallest invisible time for a receive.
        simple_drains("simple (gRPC)", &sent, start, Duration::from_secs(10)).await;
    })
    .await;
}
