//! Lifecycles without leaks: one process starts each client kind, makes it do one piece of real
//! work against the broker (a send, a consumed message, a pull, a received and acked message),
//! shuts it down, and does that again and again. After a warm-up, the process's open file
//! descriptors, threads, live tokio tasks and RSS must stay flat, and after every consumer's
//! shutdown the broker must list no client of its group.
//!
//! Bounds, per client kind: after the last round (and once the clients' last background tasks
//! ended), open fds, threads and live tasks are at most the most seen during the second half of
//! the warm-up, and RSS at most 10 % (plus 4 MiB of allocator slack) above it.
//!
//! Rounds: `RMQ_LIFECYCLE_ROUNDS` (default 30, warm-up a third of them; by hand
//! `RMQ_LIFECYCLE_ROUNDS=1000`). The tests sample the whole process, so nothing else may run in
//! it: they are `#[ignore]`d in the normal run and `scripts/test.sh` runs them as a step of their
//! own, one at a time (`--test-threads=1`); the pop and gRPC ones on 5.x only.

use std::fs;
use std::future::Future;
use std::time::Duration;

use rmq_consumer_pull::{LitePullConsumer, PullConsumer, SimpleConsumer};
use rmq_consumer_push::Expression;
use rmq_consumer_push::{ConsumeFrom, ConsumeResult, PushConsumer, listener_fn};
use rmq_producer::{Message, Producer};
use rmq_tests_integration::tx::{self, Local, TxLog};
use rmq_tests_integration::{Env, poll_until};
use tokio::sync::mpsc;

/// One round's limit (start, work, shutdown).
const ROUND_LIMIT: Duration = Duration::from_secs(60);

/// How long the clients' last background tasks may take to end after the last round.
const SETTLE_LIMIT: Duration = Duration::from_secs(15);

fn rounds() -> usize {
    match std::env::var("RMQ_LIFECYCLE_ROUNDS") {
        Ok(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 6)
            .unwrap_or_else(|| panic!("RMQ_LIFECYCLE_ROUNDS={v}: give a number of rounds >= 6")),
        Err(_) => 30,
    }
}

/// What the process holds at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sample {
    fds: usize,
    threads: usize,
    tasks: usize,
    rss_kib: u64,
}

impl Sample {
    fn now() -> Sample {
        let status = fs::read_to_string("/proc/self/status")
            .unwrap_or_else(|e| panic!("cannot read /proc/self/status (Linux only): {e}"));
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
        };
        Sample {
            fds: fs::read_dir("/proc/self/fd")
                .unwrap_or_else(|e| panic!("cannot list /proc/self/fd: {e}"))
                .count(),
            threads: usize::try_from(field("Threads:")).unwrap_or(usize::MAX),
            tasks: tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks(),
            rss_kib: field("VmRSS:"),
        }
    }

    fn max(self, o: Sample) -> Sample {
        Sample {
            fds: self.fds.max(o.fds),
            threads: self.threads.max(o.threads),
            tasks: self.tasks.max(o.tasks),
            rss_kib: self.rss_kib.max(o.rss_kib),
        }
    }

    /// Counts within the baseline (RSS is checked separately, with its slack).
    fn counts_within(self, base: Sample) -> bool {
        self.fds <= base.fds && self.threads <= base.threads && self.tasks <= base.tasks
    }
}

/// Runs `round` `rounds()` times; after each, when `group` is given, waits until the broker
/// lists no client of it; then checks the process against the warm-up baseline.
async fn cycle<F, Fut>(kind: &str, env: &Env, group: Option<&str>, mut round: F)
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let rounds = rounds();
    let warmup = rounds / 3;
    let mut base = Sample::default();
    for r in 0..rounds {
        tokio::time::timeout(ROUND_LIMIT, round(r))
            .await
            .unwrap_or_else(|_| panic!("{kind}: round {r} did not finish within {ROUND_LIMIT:?}"));
        if let Some(group) = group {
            poll_until(
                Duration::from_secs(10),
                Duration::from_millis(50),
                &format!("{kind}: the broker forgets group {group} after round {r}'s shutdown"),
                || async {
                    let ids = env.consumer_ids(group).await;
                    if ids.is_empty() { Ok(()) } else { Err(ids) }
                },
            )
            .await;
        }
        if r >= warmup / 2 && r < warmup {
            base = base.max(Sample::now());
        }
    }
    // The clients' last tasks (unregistration, connection close) end on their own: wait for the
    // counts to come back, bounded.
    let end = poll_until(
        SETTLE_LIMIT,
        Duration::from_millis(50),
        &format!("{kind}: fds, threads and tasks back to the warm-up's {base:?}"),
        || async {
            let s = Sample::now();
            if s.counts_within(base) { Ok(s) } else { Err(s) }
        },
    )
    .await;
    let rss_bound = base.rss_kib + base.rss_kib / 10 + 4096;
    println!(
        "lifecycle-figures: {kind} rounds {rounds} warm-up {warmup} fds {}→{} threads {}→{} \
         tasks {}→{} rss {}→{} KiB (bound {rss_bound})",
        base.fds,
        end.fds,
        base.threads,
        end.threads,
        base.tasks,
        end.tasks,
        base.rss_kib,
        end.rss_kib
    );
    assert!(
        end.rss_kib <= rss_bound,
        "{kind}: RSS grew from {} KiB after the warm-up to {} KiB after {rounds} rounds (bound \
         {rss_bound} KiB)",
        base.rss_kib,
        end.rss_kib
    );
}

fn is_v5(env: &Env) -> bool {
    env.broker.major_version() != Some(4)
}

/// A push consumer that forwards each consumed body.
async fn push_consumer(
    b: rmq_consumer_push::PushConsumerBuilder,
    tx: mpsc::UnboundedSender<String>,
) -> PushConsumer {
    b.start(listener_fn(move |msgs, _ctx| {
        for m in msgs {
            let _ = tx.send(String::from_utf8_lossy(&m.body).into_owned());
        }
        Box::pin(async { ConsumeResult::Success })
    }))
    .await
    .expect("push consumer starts")
}

/// Waits until `body` arrives on `rx` (earlier bodies are redeliveries of earlier rounds).
async fn wait_body(rx: &mut mpsc::UnboundedReceiver<String>, body: &str) {
    loop {
        match rx.recv().await {
            Some(b) if b == body => return,
            Some(_) => {}
            None => panic!("the listener's channel closed before {body} came"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a step of its own in scripts/test.sh (lifecycle step): it samples the whole process"]
async fn producer_lifecycles_leak_nothing() {
    let env = Env::new().await;
    let topic = env.topic("lc_prod", 2).await;
    let group = rmq_testkit::unique_name("lc_prod_pg");
    cycle("producer", &env, None, |r| {
        let (topic, group, ns) = (topic.clone(), group.clone(), env.namesrv().to_owned());
        async move {
            let p = Producer::builder()
                .group(group)
                .namesrv_addr(ns)
                .start()
                .await
                .expect("producer starts");
            p.send(Message::new(topic, format!("p{r}")))
                .await
                .expect("send");
            p.shutdown().await.expect("producer shutdown");
        }
    })
    .await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a step of its own in scripts/test.sh (lifecycle step): it samples the whole process"]
async fn transaction_producer_lifecycles_leak_nothing() {
    let env = Env::new().await;
    let topic = env.topic("lc_tx", 2).await;
    let group = rmq_testkit::unique_name("lc_tx_pg");
    let log = TxLog::new();
    cycle("transaction producer", &env, None, |r| {
        let (topic, group, log) = (topic.clone(), group.clone(), log.clone());
        let ns = env.namesrv().to_owned();
        async move {
            let p = tx::tx_producer(&ns, &group, &[&topic], &log, Duration::from_secs(5)).await;
            p.send_in_transaction(Message::new(topic.as_str(), format!("t{r}")), Local::Commit)
                .await
                .expect("send_in_transaction");
            p.shutdown().await.expect("transaction producer shutdown");
        }
    })
    .await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a step of its own in scripts/test.sh (lifecycle step): it samples the whole process"]
async fn push_consumer_lifecycles_leak_nothing() {
    let env = Env::new().await;
    let topic = env.topic("lc_push", 2).await;
    let group = rmq_testkit::unique_name("lc_push_cg");
    let producer = env.producer().await;
    cycle("push consumer", &env, Some(&group), |r| {
        let (topic, group, producer) = (topic.clone(), group.clone(), producer.clone());
        let ns = env.namesrv().to_owned();
        async move {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let b = PushConsumer::builder()
                .group(group)
                .namesrv_addr(ns)
                .consume_from(ConsumeFrom::FirstOffset)
                .subscribe(topic.as_str(), "*");
            let c = push_consumer(b, tx).await;
            let body = format!("c{r}");
            producer
                .send(Message::new(topic.as_str(), body.clone()))
                .await
                .expect("send");
            wait_body(&mut rx, &body).await;
            c.shutdown().await.expect("push consumer shutdown");
        }
    })
    .await;
    producer.shutdown().await.expect("producer shutdown");
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a step of its own in scripts/test.sh (lifecycle step): it samples the whole process"]
async fn lite_pull_consumer_lifecycles_leak_nothing() {
    let env = Env::new().await;
    let topic = env.topic("lc_lite", 2).await;
    let group = rmq_testkit::unique_name("lc_lite_cg");
    let producer = env.producer().await;
    cycle("lite pull consumer", &env, Some(&group), |r| {
        let (topic, group, producer) = (topic.clone(), group.clone(), producer.clone());
        let ns = env.namesrv().to_owned();
        async move {
            let c = LitePullConsumer::builder()
                .group(group)
                .namesrv_addr(ns)
                .consume_from(ConsumeFrom::FirstOffset)
                .subscribe(topic.as_str(), "*")
                .start()
                .await
                .expect("lite pull consumer starts");
            let body = format!("l{r}");
            producer
                .send(Message::new(topic.as_str(), body.clone()))
                .await
                .expect("send");
            'found: loop {
                for m in c.poll(Duration::from_secs(1)).await.expect("poll") {
                    if m.body.as_ref() == body.as_bytes() {
                        break 'found;
                    }
                }
            }
            c.shutdown().await.expect("lite pull consumer shutdown");
        }
    })
    .await;
    producer.shutdown().await.expect("producer shutdown");
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a step of its own in scripts/test.sh (lifecycle step): it samples the whole process"]
async fn pull_consumer_lifecycles_leak_nothing() {
    let env = Env::new().await;
    let topic = env.topic("lc_pull", 1).await;
    let group = rmq_testkit::unique_name("lc_pull_cg");
    env.produce(&topic, 1, |i| format!("x{i}")).await;
    let mq = env.mq(&topic, 0);
    cycle("pull consumer", &env, Some(&group), |_| {
        let (group, mq) = (group.clone(), mq.clone());
        let ns = env.namesrv().to_owned();
        async move {
            let c = PullConsumer::builder()
                .group(group)
                .namesrv_addr(ns)
                .start()
                .await
                .expect("pull consumer starts");
            let got = c.pull(&mq, Expression::all(), 0, 1).await.expect("pull");
            assert_eq!(got.messages.len(), 1, "the pull finds the queue's message");
            c.update_consume_offset(&mq, got.next_begin_offset)
                .expect("update_offset");
            c.shutdown().await.expect("pull consumer shutdown");
        }
    })
    .await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop, 5.x only: scripts/test.sh runs it in the lifecycle step on 5.x"]
async fn simple_consumer_lifecycles_leak_nothing() {
    let env = Env::new().await;
    assert!(
        is_v5(&env),
        "the simple consumer pops, which a 4.x broker cannot: run this on 5.x"
    );
    let topic = env.topic("lc_simple", 2).await;
    let group = rmq_testkit::unique_name("lc_simple_cg");
    let producer = env.producer().await;
    cycle("simple consumer", &env, Some(&group), |r| {
        let (topic, group, producer) = (topic.clone(), group.clone(), producer.clone());
        let ns = env.namesrv().to_owned();
        async move {
            let c = SimpleConsumer::builder()
                .group(group)
                .namesrv_addr(ns)
                .subscribe(topic.as_str(), Expression::all())
                .await_duration(Duration::from_secs(1))
                .start()
                .await
                .expect("simple consumer starts");
            let body = format!("s{r}");
            producer
                .send(Message::new(topic.as_str(), body.clone()))
                .await
                .expect("send");
            'found: loop {
                for m in c
                    .receive(16, Duration::from_secs(20))
                    .await
                    .expect("receive")
                {
                    c.ack(&m).await.expect("ack");
                    if m.body.as_ref() == body.as_bytes() {
                        break 'found;
                    }
                }
            }
            c.shutdown().await.expect("simple consumer shutdown");
        }
    })
    .await;
    producer.shutdown().await.expect("producer shutdown");
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it in the lifecycle step on 5.x"]
async fn grpc_client_lifecycles_leak_nothing() {
    use rmq_testkit::grpc::{INVISIBLE, endpoint, grpc_producer, typed_topic};
    let env = Env::new().await;
    let topic = typed_topic("lc_grpc", "NORMAL").await;
    let producer = grpc_producer("lc_grpc_pg").await;
    let push_group = rmq_testkit::unique_name("lc_grpc_push");
    let simple_group = rmq_testkit::unique_name("lc_grpc_simple");
    let group = rmq_testkit::unique_name("lc_grpc_prod");
    cycle(
        "gRPC producer, push and simple consumers",
        &env,
        None,
        |r| {
            let (topic, producer) = (topic.clone(), producer.clone());
            let (push_group, simple_group, group) =
                (push_group.clone(), simple_group.clone(), group.clone());
            async move {
                // A producer of its own, started and shut down.
                let p = Producer::builder()
                    .group(group)
                    .endpoint(endpoint())
                    .start()
                    .await
                    .expect("gRPC producer starts");
                p.send(Message::new(topic.as_str(), format!("gp{r}")))
                    .await
                    .expect("gRPC send");
                p.shutdown().await.expect("gRPC producer shutdown");
                // A push consumer that consumes one message.
                let (tx, mut rx) = mpsc::unbounded_channel();
                let b = PushConsumer::builder()
                    .group(push_group)
                    .endpoint(endpoint())
                    .subscribe(topic.as_str(), "*");
                let c = push_consumer(b, tx).await;
                let body = format!("gc{r}");
                producer
                    .send(Message::new(topic.as_str(), body.clone()))
                    .await
                    .expect("gRPC send");
                wait_body(&mut rx, &body).await;
                c.shutdown().await.expect("gRPC push consumer shutdown");
                // A simple consumer that receives and acks it (its own group: every message).
                let s = SimpleConsumer::builder()
                    .group(simple_group)
                    .endpoint(endpoint())
                    .subscribe(topic.as_str(), "*")
                    .await_duration(Duration::from_secs(2))
                    .start()
                    .await
                    .expect("gRPC simple consumer starts");
                'found: loop {
                    for m in s.receive(16, INVISIBLE).await.expect("gRPC receive") {
                        s.ack(&m).await.expect("gRPC ack");
                        if m.body.as_ref() == body.as_bytes() {
                            break 'found;
                        }
                    }
                }
                s.shutdown().await.expect("gRPC simple consumer shutdown");
            }
        },
    )
    .await;
    producer.shutdown().await.expect("producer shutdown");
    env.shutdown().await;
}
