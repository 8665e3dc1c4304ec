//! Replicated clusters (`scripts/rocketmq-local.sh` with `RMQ_TOPOLOGY=master-slave` or
//! `controller`, run by the cluster step of `scripts/test.sh`): slave reads, a SIGKILLed master
//! with its slave serving the reads, and the 5.x controller electing a new master (with an
//! orderly consumer that locks its queues again on the new master and keeps per-key order).
//!
//! Every test checks the topology it needs (`RMQ_TOPOLOGY`) and fails with the reason when the
//! cluster is another one. Each prints a `cluster-figures:` line (failover time, lost,
//! duplicates) that the test step collects.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use futures::StreamExt;
use rmq_client_core::{ClientInstance, PullCounts, PullStatus, now_ms};
use rmq_consumer_pull::{ConsumeFrom, LitePullConsumer};
use rmq_producer::{Message, Producer, select_by_hash};
use rmq_protocol::MessageQueue;
use rmq_protocol::header::PullMessageRequestHeader;
use rmq_testkit::orderly::{self as ord, Calls, Recording, first_deliveries, per_key};
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, poll_until, within};

const CLUSTER_TIMEOUT: Duration = Duration::from_secs(400);
/// How soon after the election clients follow a new master: a call that finds its broker gone
/// (connect refused, connection closed) wakes the route refresh, at most once a second, so they
/// learn the new master from the name server within about a second instead of at the next 30 s
/// route poll (`poll_name_server_interval`, Java's default); 5 s leaves room for a loaded machine.
const ROUTE_FOLLOW_LIMIT: Duration = Duration::from_secs(5);
const QUEUES: i32 = 4;
const GROUP_A: &str = "broker-a";

fn require_topology(want: &str) {
    let got = std::env::var("RMQ_TOPOLOGY").unwrap_or_default();
    assert_eq!(
        got, want,
        "this test needs a cluster started with RMQ_TOPOLOGY={want} (RMQ_TOPOLOGY={got:?} here): \
         run it through the cluster step of scripts/test.sh"
    );
}

fn env_addr(key: &str) -> String {
    std::env::var(key)
        .unwrap_or_else(|_| panic!("{key} is not set (printed by rocketmq-local.sh start)"))
}

/// The addresses of broker group `name` by broker id, as the name server lists them now.
fn group_addrs(namesrv: &str, name: &str) -> BTreeMap<i64, String> {
    rmq_testkit::registered_brokers(namesrv)
        .unwrap_or_else(|e| panic!("name server {namesrv}: {e}"))
        .into_iter()
        .filter(|b| b.name == name)
        .map(|b| (b.id, b.addr))
        .collect()
}

/// The script's process name of a broker-a replica address.
fn process_of(addr: &str) -> &'static str {
    for (key, name) in [
        ("RMQ_BROKER_ADDR", "broker-a"),
        ("RMQ_BROKER_A_SLAVE_ADDR", "broker-a-s"),
        ("RMQ_BROKER_A_SLAVE2_ADDR", "broker-a-s2"),
    ] {
        if std::env::var(key).ok().as_deref() == Some(addr) {
            return name;
        }
    }
    panic!("{addr} is none of the broker-a replicas the script started")
}

async fn wait_replicated(env: &Env, slave: &str, topic: &str) {
    // The consume queues are written after the send is answered: compare the master's and the
    // slave's max offsets until both agree.
    poll_until(
        Duration::from_secs(60),
        Duration::from_millis(100),
        "the slave holds every message of the master",
        || async move {
            let mut master = Vec::new();
            let mut have = Vec::new();
            for q in 0..QUEUES {
                master.push(env.max_offset(&MessageQueue::new(topic, GROUP_A, q)).await);
                have.push(
                    env.admin
                        .get_max_offset(slave, topic, q, Some(GROUP_A))
                        .await
                        .unwrap_or(-1),
                );
            }
            if have == master {
                Ok(have)
            } else {
                Err((master, have))
            }
        },
    )
    .await;
}

/// Waits until the slave serves a pull of queue 0 of `topic` (it learns the master's topic
/// configs by its periodic sync, Java `SlaveSynchronize`, every 10 s).
async fn wait_slave_serves(env: &Env, slave: &str, topic: &str) {
    poll_until(
        Duration::from_secs(60),
        Duration::from_millis(200),
        "the slave serves pulls of the topic",
        || async move {
            let header = PullMessageRequestHeader {
                sub_version: now_ms(),
                broker_name: Some(GROUP_A.into()),
                ..rmq_testkit::raw::pull_header("rmq_it_raw_reader", topic, 0, 0, 1)
            };
            match env
                .admin
                .pull_message(slave, &header, Some(Duration::from_secs(5)))
                .await
            {
                Ok(r) if r.status == PullStatus::Found => Ok(()),
                Ok(r) => Err(format!("{:?}", r.status)),
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await;
}

fn counts(instance: &ClientInstance) -> PullCounts {
    instance.pull_counts()
}

/// Slave reads: with `accessMessageInMemoryMaxRatio=0` the master suggests the slave (broker id 1)
/// for any pull behind the end of the commit log; the consumer drains the backlog from the slave,
/// and once caught up the slave sends it back to the master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs RMQ_TOPOLOGY=master-slave with accessMessageInMemoryMaxRatio=0: the cluster step of scripts/test.sh"]
async fn backlog_is_read_from_the_slave_then_from_the_master() {
    within(CLUSTER_TIMEOUT, async {
        require_topology("master-slave");
        const N: usize = 2_000;
        let env = Env::new().await;
        let slave = env_addr("RMQ_BROKER_A_SLAVE_ADDR");
        let topic = env.topic("cl_slave_read", QUEUES).await;
        let group = rmq_testkit::unique_name("cl_slave_read_cg");
        let producer = env.producer().await;
        let sent = env
            .send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        wait_replicated(&env, &slave, &topic).await;

        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic)
                .suspend_timeout(Duration::from_secs(1))
                .pull_batch_size(16),
            consumer::recording(rec.clone(), 0, |_, _| false),
        )
        .await;
        let started = Instant::now();
        rec.wait_distinct(N, Duration::from_secs(120)).await;
        let drained = counts(c.client_instance().expect("a remoting consumer"));
        println!(
            "backlog of {N} drained in {:?}: pulls {drained:?}",
            started.elapsed()
        );
        assert!(
            drained.from_slave > 0,
            "the backlog was read from the slave (broker id 1): pulls {drained:?}"
        );

        // Caught up: new messages come from the master, the slave is no longer asked.
        let more = env
            .send_spread(&producer, 100, |i| {
                Message::new(&topic, format!("more-{i}"))
            })
            .await;
        rec.wait_distinct(N + 100, Duration::from_secs(60)).await;
        let caught_up = counts(c.client_instance().expect("a remoting consumer"));
        poll_until(
            Duration::from_secs(30),
            Duration::from_millis(100),
            "pulls go to the master again",
            || async {
                let now = counts(c.client_instance().expect("a remoting consumer"));
                if now.from_master >= caught_up.from_master + 8 {
                    Ok(now)
                } else {
                    Err(now)
                }
            },
        )
        .await;
        let end = counts(c.client_instance().expect("a remoting consumer"));
        assert!(
            end.from_slave <= caught_up.from_slave + u64::try_from(QUEUES).unwrap_or(4),
            "caught up, the consumer pulls from the master: {caught_up:?} -> {end:?}"
        );
        let expected: Vec<&str> = sent
            .iter()
            .chain(&more)
            .map(|s| s.msg_id.as_str())
            .collect();
        let (missing, dups) =
            rec.with(|seen| (seen.missing(expected.iter().copied()), seen.duplicates()));
        println!(
            "cluster-figures: scenario=slave-reads version={} lost={} duplicates={dups} \
             slave_pulls={} master_pulls={}",
            env.broker.version,
            missing.len(),
            end.from_slave,
            end.from_master
        );
        assert!(missing.is_empty(), "none lost: {} missing", missing.len());
        c.shutdown().await.expect("clean shutdown");
        producer.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}

/// Sends `n` messages one by one, retrying a failed send (an unacknowledged one is not in the
/// ledger); returns the acknowledged ids and the number of failed attempts.
async fn send_ledger(
    producer: &Producer,
    topic: &str,
    tag: &str,
    n: usize,
) -> (Vec<String>, usize) {
    let mut acked = Vec::with_capacity(n);
    let mut failed = 0;
    for i in 0..n {
        loop {
            match producer
                .send(Message::new(topic, format!("{tag}-{i}")))
                .await
            {
                Ok(r) => {
                    acked.push(r.msg_id);
                    break;
                }
                Err(e) => {
                    failed += 1;
                    assert!(failed < 200, "sends keep failing: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    (acked, failed)
}

/// A SIGKILLed master in a master–slave group: producers fail over to broker-b, push and lite
/// consumers read what the slave holds, their offsets are committed to the master once it is back
/// (never backwards), and reads return to the master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs RMQ_TOPOLOGY=master-slave with broker-b: the cluster step of scripts/test.sh"]
async fn killed_master_slave_serves_reads_offsets_committed_after_restart() {
    within(CLUSTER_TIMEOUT, async {
        require_topology("master-slave");
        const N: usize = 600;
        let env = Env::new().await;
        let slave = env_addr("RMQ_BROKER_A_SLAVE_ADDR");
        let broker_b = env_addr("RMQ_BROKER_B_ADDR");
        let topic = env.topic("cl_kill_master", QUEUES).await;
        rmq_testkit::admin::create_topic(env.admin.remoting(), env.namesrv(), &broker_b, &topic, QUEUES)
            .await
            .unwrap_or_else(|e| panic!("create {topic} on broker-b: {e}"));
        let producer = env.producer().await;
        let (sent, failed_before) = send_ledger(&producer, &topic, "before", N).await;
        println!("{N} sends before the kill, {failed_before} failed attempts");
        wait_replicated(&env, &slave, &topic).await;
        wait_slave_serves(&env, &slave, &topic).await;

        let killed = Instant::now();
        rmq_testkit::kill_broker("broker-a").await;
        // The producer knew broker-a; it fails over to broker-b.
        let (outage, failed_sends) = send_ledger(&producer, &topic, "outage", 200).await;
        let send_failover = killed.elapsed();
        println!("200 sends during the outage in {send_failover:?}, {failed_sends} failed attempts");

        let push_group = rmq_testkit::unique_name("cl_kill_push_cg");
        let lite_group = rmq_testkit::unique_name("cl_kill_lite_cg");
        let rec = Arc::new(Recorder::new());
        let push = consumer::start(
            ConsumerSpec::new(env.namesrv(), &push_group, &topic).suspend_timeout(Duration::from_secs(1)),
            consumer::recording(rec.clone(), 0, |_, _| false),
        )
        .await;
        let lite = LitePullConsumer::builder()
            .namesrv_addr(env.namesrv())
            .group(&lite_group)
            .subscribe(&topic, "*")
            .consume_from(ConsumeFrom::FirstOffset)
            .auto_commit_interval(Duration::from_millis(500))
            .broker_suspend_max_time(Duration::from_secs(1))
            .start()
            .await
            .expect("lite consumer starts");
        let lite_seen = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
        let lite_task = tokio::spawn({
            let lite = lite.clone();
            let seen = lite_seen.clone();
            async move {
                let mut stream = lite.stream();
                while let Some(m) = stream.next().await {
                    let Ok(m) = m else { continue };
                    let mut seen = seen.lock().expect("lite record lock");
                    *seen.entry(m.msg_id.clone()).or_default() += 1;
                }
            }
        });
        let expected: Vec<String> = sent.iter().cloned().chain(outage.clone()).collect();
        let total = expected.len();
        rec.wait_distinct(total, Duration::from_secs(120)).await;
        poll_until(Duration::from_secs(120), Duration::from_millis(100), "the lite consumer has everything", || {
            let n = lite_seen.lock().expect("lite record lock").len();
            async move { if n >= total { Ok(n) } else { Err(n) } }
        })
        .await;
        let read_failover = killed.elapsed();
        let push_pulls = counts(push.client_instance().expect("a remoting consumer"));
        let lite_pulls = counts(lite.client_instance());
        println!("everything consumed {read_failover:?} after the kill; pulls push {push_pulls:?} lite {lite_pulls:?}");
        assert!(push_pulls.from_slave > 0, "the push consumer read broker-a's queues from the slave");
        assert!(lite_pulls.from_slave > 0, "the lite consumer read broker-a's queues from the slave");

        // The master comes back: the offsets the consumers hold reach it, and reads return to it.
        let restarted = Instant::now();
        rmq_testkit::start_broker("broker-a").await;
        let max = env.max_offsets(&topic, QUEUES).await;
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut last: BTreeMap<(String, i32), i64> = BTreeMap::new();
        loop {
            let mut all = true;
            for g in [&push_group, &lite_group] {
                for q in 0..QUEUES {
                    let off = env.committed_offset(g, &env.mq(&topic, q)).await.unwrap_or(-1);
                    if let Some(prev) = last.insert((g.clone(), q), off) {
                        assert!(off >= prev, "{g} queue {q}: committed offset moved back {prev} -> {off}");
                    }
                    all &= off == max[usize::try_from(q).unwrap_or(0)];
                }
            }
            if all {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "both groups commit broker-a's queues at their max {max:?} once it is back: {last:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let commit_after_restart = restarted.elapsed();
        let before = counts(push.client_instance().expect("a remoting consumer"));
        let back = env.send_spread(&producer, 64, |i| Message::new(&topic, format!("back-{i}"))).await;
        rec.wait_distinct(total + back.len(), Duration::from_secs(60)).await;
        poll_until(Duration::from_secs(30), Duration::from_millis(100), "push reads return to the master", || async {
            let now = counts(push.client_instance().expect("a remoting consumer"));
            if now.from_master >= before.from_master + 8 { Ok(now) } else { Err(now) }
        })
        .await;

        let (push_missing, push_dups) =
            rec.with(|seen| (seen.missing(expected.iter().map(String::as_str)), seen.duplicates()));
        let (lite_missing, lite_dups) = {
            let seen = lite_seen.lock().expect("lite record lock");
            let missing = expected.iter().filter(|id| !seen.contains_key(*id)).count();
            (missing, seen.values().map(|n| n - 1).sum::<usize>())
        };
        println!(
            "cluster-figures: scenario=master-kill version={} send_failover_ms={} consumed_all_ms={} \
             commit_after_restart_ms={} lost_push={} lost_lite={lite_missing} duplicates_push={push_dups} \
             duplicates_lite={lite_dups} failed_send_attempts={failed_sends}",
            env.broker.version,
            send_failover.as_millis(),
            read_failover.as_millis(),
            commit_after_restart.as_millis(),
            push_missing.len()
        );
        assert!(push_missing.is_empty(), "push: none lost ({} missing)", push_missing.len());
        assert_eq!(lite_missing, 0, "lite: none lost");
        push.shutdown().await.expect("push shutdown");
        lite.shutdown().await.expect("lite shutdown");
        lite_task.await.expect("lite task ends");
        producer.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}

/// Controller mode (5.x): the master is SIGKILLed, the controller elects the slave; the producer
/// and a push consumer follow the new master from the route within [`ROUTE_FOLLOW_LIMIT`] of the election, and every acknowledged
/// send is consumed. Beside them an orderly consumer reads keys sent in order through the
/// failover: it locks its queues again on the new master, and per key every acknowledged message
/// arrives, first deliveries in send order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs RMQ_TOPOLOGY=controller (5.x only): the cluster step of scripts/test.sh"]
async fn controller_elects_a_new_master_clients_follow_nothing_acknowledged_lost() {
    within(CLUSTER_TIMEOUT, async {
        require_topology("controller");
        let env = Env::new().await;
        let namesrv = env.namesrv().to_owned();
        let old_master = group_addrs(&namesrv, GROUP_A)
            .get(&0)
            .cloned()
            .expect("broker-a has a master");
        let topic = env.topic("cl_controller", QUEUES).await;
        let group = rmq_testkit::unique_name("cl_controller_cg");
        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(&namesrv, &group, &topic).suspend_timeout(Duration::from_secs(1)),
            consumer::recording(rec.clone(), 0, |_, _| false),
        )
        .await;
        let producer = env.producer().await;
        // The ledger: every acknowledged send, with the time of its acknowledgement.
        let ledger = Arc::new(Mutex::new(Vec::<(String, Instant)>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        // Ordered keys: an orderly consumer, and a sender that sends each key's messages one
        // after the other (a failed send is sent again before the next of its key).
        let ord_topic = env.topic("cl_controller_ord", QUEUES).await;
        let ord_calls = Arc::new(Calls::default());
        let ord_consumer = ord::start(
            ord::builder(&namesrv, &rmq_testkit::unique_name("cl_controller_og"), &ord_topic),
            Recording::accepting(0, ord_calls.clone()),
        )
        .await;
        let ord_acked = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
        let ord_sender = tokio::spawn(send_keys_in_order(
            producer.clone(),
            ord_topic.clone(),
            ord_acked.clone(),
            stop.clone(),
        ));
        let sender = tokio::spawn({
            let (producer, ledger, stop, topic) = (producer.clone(), ledger.clone(), stop.clone(), topic.clone());
            async move {
                let mut failed = 0usize;
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    match producer.send(Message::new(&topic, format!("c-{i}"))).await {
                        Ok(r) => ledger.lock().expect("ledger lock").push((r.msg_id, Instant::now())),
                        Err(_) => {
                            failed += 1;
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                    i += 1;
                }
                failed
            }
        });
        poll_until(Duration::from_secs(60), Duration::from_millis(50), "sends before the kill", || {
            let n = ledger.lock().expect("ledger lock").len();
            async move { if n >= 200 { Ok(n) } else { Err(n) } }
        })
        .await;
        // Only a replica of the sync state set can be elected (unclean elections are off): the
        // slave joins it some seconds after the cluster is up, once it has caught up.
        let controller = std::env::var("RMQ_CONTROLLER_ADDR").expect("RMQ_CONTROLLER_ADDR (the cluster step sets it)");
        poll_until(Duration::from_secs(60), Duration::from_millis(100), "a slave of broker-a is in the sync state set", || {
            let in_sync = rmq_testkit::in_sync_replicas(&controller, GROUP_A);
            let old = old_master.clone();
            async move {
                match in_sync {
                    Ok(addrs) if addrs.iter().any(|a| *a != old) => Ok(addrs),
                    other => Err(other),
                }
            }
        })
        .await;
        let victim = process_of(&old_master);
        let killed = Instant::now();
        rmq_testkit::kill_broker(victim).await;
        poll_until(Duration::from_secs(60), Duration::from_millis(100), "a new master of broker-a is registered", || {
            let addrs = group_addrs(&namesrv, GROUP_A);
            let old = old_master.clone();
            async move {
                match addrs.get(&0) {
                    Some(a) if *a != old => Ok(a.clone()),
                    _ => Err(addrs),
                }
            }
        })
        .await;
        let elected = killed.elapsed();
        let acked_at_kill = ledger.lock().expect("ledger lock").len();
        let ord_at_kill = ord_acked.lock().expect("ordered ledger lock").clone();
        poll_until(Duration::from_secs(60), Duration::from_millis(50), "sends resume on the new master", || {
            let n = ledger.lock().expect("ledger lock").len();
            async move { if n >= acked_at_kill + 100 { Ok(n) } else { Err(n) } }
        })
        .await;
        let first_after = ledger.lock().expect("ledger lock")[acked_at_kill].1;
        let send_failover = first_after.saturating_duration_since(killed);
        poll_until(Duration::from_secs(60), Duration::from_millis(50), "ordered sends resume on the new master", || {
            let now = ord_acked.lock().expect("ordered ledger lock").clone();
            let resumed = now.iter().all(|(k, n)| *n >= ord_at_kill.get(k).copied().unwrap_or(0) + 5);
            async move { if resumed { Ok(now) } else { Err(now) } }
        })
        .await;
        stop.store(true, Ordering::Relaxed);
        let failed_sends = sender.await.expect("sender task");
        ord_sender.await.expect("ordered sender task");
        let ord_sent = ord_acked.lock().expect("ordered ledger lock").clone();
        ord_calls
            .wait_for(Duration::from_secs(120), "every acknowledged ordered send consumed", |calls| {
                let seen = per_key(calls);
                ord_sent.iter().all(|(k, n)| {
                    seen.get(k).is_some_and(|s| first_deliveries(s).len() >= *n)
                })
            })
            .await;
        let ord_all = ord_calls.snapshot();
        let ord_seen = per_key(&ord_all);
        let mut ord_duplicates = 0usize;
        for (k, n) in &ord_sent {
            let seqs = &ord_seen[k];
            let first = first_deliveries(seqs);
            ord_duplicates += seqs.len() - first.len();
            // A send that failed at the stop may still have been stored: beyond `n`, only later
            // sequence numbers, still in order.
            assert_eq!(&first[..*n], (0..*n).collect::<Vec<_>>().as_slice(), "key {k}: every acknowledged message, first deliveries in send order");
            assert!(first.windows(2).all(|w| w[0] < w[1]), "key {k}: first deliveries in send order: {first:?}");
        }
        let ord_total: usize = ord_sent.values().sum();
        let ord_failover = ord_all
            .iter()
            .filter(|c| c.msgs.iter().any(|(k, s, _, _)| *s >= ord_at_kill.get(k).copied().unwrap_or(0)))
            .map(|c| c.start.saturating_duration_since(killed.into_std()))
            .min();
        ord_consumer.shutdown().await.expect("orderly consumer shutdown");
        let acked: Vec<String> = ledger.lock().expect("ledger lock").iter().map(|(id, _)| id.clone()).collect();
        let after_kill: HashSet<&str> = acked[acked_at_kill..].iter().map(String::as_str).collect();
        rec.wait_for(Duration::from_secs(120), "every acknowledged send consumed", |seen| {
            seen.missing(acked.iter().map(String::as_str)).is_empty()
        })
        .await;
        let consume_failover = rec.with(|seen| {
            seen.deliveries
                .iter()
                .find(|d| after_kill.contains(d.msg.msg_id.as_str()))
                .map(|d| d.at.saturating_duration_since(killed))
        });
        let dups = rec.with(|seen| seen.duplicates());
        println!(
            "cluster-figures: scenario=controller version={} elected_ms={} send_failover_ms={} \
             consume_failover_ms={:?} acked={} lost=0 duplicates={dups} failed_send_attempts={failed_sends} \
             orderly_failover_ms={:?} orderly_acked={ord_total} orderly_lost=0 orderly_duplicates={} \
             orderly_keys_in_order={}",
            env.broker.version,
            elected.as_millis(),
            send_failover.as_millis(),
            consume_failover.map(|d| d.as_millis()),
            acked.len(),
            ord_failover.map(|d| d.as_millis()),
            ord_duplicates,
            ord_sent.len()
        );
        assert!(
            send_failover <= elected + ROUTE_FOLLOW_LIMIT,
            "the producer followed the new master within {ROUTE_FOLLOW_LIMIT:?} of the election ({elected:?} after the kill): {send_failover:?}"
        );
        let consume_failover = consume_failover.expect("a message sent after the kill was consumed");
        assert!(
            consume_failover <= elected + ROUTE_FOLLOW_LIMIT,
            "the consumer followed the new master within {ROUTE_FOLLOW_LIMIT:?} of the election ({elected:?} after the kill): {consume_failover:?}"
        );
        let ord_failover = ord_failover.expect("an ordered message sent after the kill was consumed");
        assert!(
            ord_failover <= elected + ROUTE_FOLLOW_LIMIT,
            "the orderly consumer locked and consumed on the new master within {ROUTE_FOLLOW_LIMIT:?} of the election ({elected:?} after the kill): {ord_failover:?}"
        );
        c.shutdown().await.expect("clean shutdown");
        producer.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
        // The killed replica joins again (as a slave) for the next run of the step.
        rmq_testkit::start_broker(victim).await;
    })
    .await;
}

/// Keys of the controller test's ordered sends.
const ORDERED_KEYS: usize = 4;

/// Sends `<key>:<seq>` for every key in turn, each key to its queue (`select_by_hash`), until
/// `stop`; a failed send is sent again (after 50 ms) before anything later of its key. `acked`
/// holds per key how many were acknowledged (sequence numbers `0..n`).
async fn send_keys_in_order(
    producer: Producer,
    topic: String,
    acked: Arc<Mutex<BTreeMap<String, usize>>>,
    stop: Arc<AtomicBool>,
) {
    let keys: Vec<String> = (0..ORDERED_KEYS).map(ord::key).collect();
    for seq in 0.. {
        for key in &keys {
            loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let msg = Message::new(&topic, ord::body(key, seq)).with_keys([key.as_str()]);
                match producer
                    .send_with_selector(msg, select_by_hash(key.clone()))
                    .await
                {
                    Ok(_) => {
                        acked
                            .lock()
                            .expect("ordered ledger lock")
                            .insert(key.clone(), seq + 1);
                        break;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }
    }
}

/// The committed offsets of `group` on the queues `0..queues` of `topic` held by broker group
/// `broker_name` at `addr`.
async fn committed_at(
    env: &Env,
    addr: &str,
    broker_name: &str,
    group: &str,
    topic: &str,
    queues: i32,
) -> Vec<i64> {
    let mut out = Vec::new();
    for q in 0..queues {
        let header = rmq_protocol::header::QueryConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id: q,
            set_zero_if_not_found: None,
            broker_name: Some(broker_name.to_owned()),
        };
        let off = env
            .admin
            .query_consumer_offset(addr, header)
            .await
            .unwrap_or_else(|e| {
                panic!("committed offset of {group} on {broker_name} queue {q}: {e}")
            });
        out.push(off.unwrap_or(-1));
    }
    out
}

/// The broker groups whose queues of `topic` the push consumer holds now.
fn held_groups(
    c: &rmq_consumer_push::PushConsumer,
    topic: &str,
) -> std::collections::BTreeSet<String> {
    consumer::queue_stats(c, topic)
        .into_iter()
        .map(|s| s.queue.broker_name)
        .collect()
}

/// Route churn: a broker group that starts serving the topic while a push consumer runs has its
/// queues picked up by the next rebalance after the route poll, and its messages consumed; a group
/// that stops serving it (its queues no longer readable in the route) has its queues dropped, and
/// their offsets are committed on the way out (the periodic persist is 10 min here: the drop and
/// the pulls' commit flag are what commit them). Then a group that dies (the producer avoids it
/// after a failed send), leaves the routes and returns is sent to again at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs RMQ_TOPOLOGY=master-slave with broker-b: the cluster step of scripts/test.sh"]
async fn route_churn_added_group_is_consumed_removed_group_committed_first() {
    within(CLUSTER_TIMEOUT, async {
        require_topology("master-slave");
        const PER_QUEUE: usize = 10;
        let env = Env::new().await;
        let broker_b = env_addr("RMQ_BROKER_B_ADDR");
        let topic = env.topic("cl_churn", QUEUES).await;
        let group = rmq_testkit::unique_name("cl_churn_cg");
        let fast_routes = |instance: &str| {
            rmq_client_core::ClientConfig::builder()
                .namesrv_addr(env.namesrv())
                .instance_name(instance)
                .poll_name_server_interval(Duration::from_secs(1))
                .persist_consumer_offset_interval(Duration::from_secs(600))
                .build()
                .expect("client config")
        };
        let rec = Arc::new(Recorder::new());
        let c = ConsumerSpec::new(env.namesrv(), &group, &topic)
            .builder()
            .client_config(fast_routes("churn-consumer"))
            .rebalance_interval(Duration::from_secs(1))
            .start(consumer::recording(rec.clone(), 0, |_, _| false))
            .await
            .expect("consumer starts");
        let producer = Producer::builder()
            .group(rmq_testkit::unique_name("cl_churn_pg"))
            .client_config(fast_routes("churn-producer"))
            .start()
            .await
            .expect("producer starts");
        let mut expected = Vec::new();
        for q in 0..QUEUES {
            for i in 0..PER_QUEUE {
                let mq = MessageQueue::new(&topic, GROUP_A, q);
                let sent = producer
                    .send_to_queue(Message::new(&topic, format!("a-{q}-{i}")), &mq)
                    .await
                    .unwrap_or_else(|e| panic!("send to {mq}: {e}"));
                expected.push(sent.msg_id);
            }
        }
        rec.wait_distinct(expected.len(), Duration::from_secs(60)).await;
        assert_eq!(held_groups(&c, &topic), [GROUP_A.to_owned()].into(), "broker-a only at first");

        // Added: broker-b starts serving the topic.
        let added = Instant::now();
        rmq_testkit::admin::create_topic(env.admin.remoting(), env.namesrv(), &broker_b, &topic, QUEUES)
            .await
            .unwrap_or_else(|e| panic!("create {topic} on broker-b: {e}"));
        let picked_up = poll_until(Duration::from_secs(30), Duration::from_millis(100), "the consumer holds broker-b's queues", || {
            let held = held_groups(&c, &topic);
            async move { if held.contains("broker-b") { Ok(added.elapsed()) } else { Err(held) } }
        })
        .await;
        let mq_b = |q: i32| MessageQueue::new(&topic, "broker-b", q);
        // The producer learns broker-b's address from its next route poll.
        poll_until(Duration::from_secs(30), Duration::from_millis(200), "the producer routes to broker-b", || {
            let (producer, msg, mq) = (producer.clone(), Message::new(&topic, "b-probe"), mq_b(0));
            async move { producer.send_to_queue(msg, &mq).await.map(|s| s.msg_id).map_err(|e| e.to_string()) }
        })
        .await;
        let probe_total = 1;
        let mut sent_b = probe_total;
        for q in 0..QUEUES {
            for i in 0..PER_QUEUE {
                let sent = producer
                    .send_to_queue(Message::new(&topic, format!("b-{q}-{i}")), &mq_b(q))
                    .await
                    .unwrap_or_else(|e| panic!("send to broker-b queue {q}: {e}"));
                expected.push(sent.msg_id);
                sent_b += 1;
            }
        }
        rec.wait_distinct(expected.len() + probe_total, Duration::from_secs(60)).await;
        let consumed_b = added.elapsed();
        let mut max_b = Vec::new();
        for q in 0..QUEUES {
            max_b.push(env.max_offset_at(&broker_b, &topic, q).await);
        }
        assert_eq!(
            max_b.iter().sum::<i64>(),
            i64::try_from(sent_b).unwrap_or(i64::MAX),
            "broker-b holds what was sent to it"
        );
        // The listener sees a message before its call settles: wait until every broker-b queue's
        // in-memory offset is past its last message, so the drop below has them all to commit.
        let want: Vec<Option<i64>> = max_b.iter().map(|m| Some(*m)).collect();
        poll_until(Duration::from_secs(30), Duration::from_millis(50), "broker-b's messages settled", || {
            let mut got: Vec<(i32, Option<i64>)> = consumer::queue_stats(&c, &topic)
                .into_iter()
                .filter(|s| s.queue.broker_name == "broker-b")
                .map(|s| (s.queue.queue_id, s.committed_offset))
                .collect();
            got.sort_unstable();
            let got: Vec<Option<i64>> = got.into_iter().map(|(_, o)| o).collect();
            let done = got == want;
            async move { if done { Ok(()) } else { Err(got) } }
        })
        .await;
        // Pulls carry the consumer's offsets too (the commit flag of PULL_MESSAGE), so some may be
        // committed already: printed, not asserted.
        let before_drop = committed_at(&env, &broker_b, "broker-b", &group, &topic, QUEUES).await;
        println!("broker-b committed {before_drop:?} of {max_b:?} before the drop");

        // Removed: broker-b's queues stop being readable (perm write-only); the consumer drops them
        // and commits their offsets first.
        let removed = Instant::now();
        rmq_testkit::admin::set_topic_perm(env.admin.remoting(), &broker_b, &topic, QUEUES, 2)
            .await
            .unwrap_or_else(|e| panic!("make {topic} write-only on broker-b: {e}"));
        let dropped = poll_until(Duration::from_secs(30), Duration::from_millis(100), "the consumer dropped broker-b's queues", || {
            let held = held_groups(&c, &topic);
            async move { if held.contains("broker-b") { Err(held) } else { Ok(removed.elapsed()) } }
        })
        .await;
        let after_drop = committed_at(&env, &broker_b, "broker-b", &group, &topic, QUEUES).await;
        assert_eq!(after_drop, max_b, "the dropped queues' offsets were committed on the way out");
        assert_eq!(held_groups(&c, &topic), [GROUP_A.to_owned()].into(), "broker-a's queues stay");

        // Back after leaving: broker-b dies while the producer sends (a failed send makes the producer
        // avoid it, Java's fault tolerance: up to 10 min), leaves the routes, and comes back; the
        // producer forgot it on the way and sends to it again as soon as its route has it.
        rmq_testkit::kill_broker("broker-b").await;
        for i in 0..8 {
            producer
                .send(Message::new(&topic, format!("b-dead-{i}")))
                .await
                .unwrap_or_else(|e| panic!("a send while broker-b is dead goes to broker-a: {e}"));
        }
        poll_until(Duration::from_secs(30), Duration::from_millis(100), "the name server dropped broker-b", || {
            let gone = group_addrs(env.namesrv(), "broker-b").is_empty();
            async move { if gone { Ok(()) } else { Err(()) } }
        })
        .await;
        // The producer's route poll (1 s) drops broker-b too; sends go on meanwhile.
        for i in 0..8 {
            producer
                .send(Message::new(&topic, format!("b-gone-{i}")))
                .await
                .unwrap_or_else(|e| panic!("a send while broker-b is gone: {e}"));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        rmq_testkit::start_broker("broker-b").await;
        let returned = Instant::now();
        let back = poll_until(Duration::from_secs(30), Duration::from_millis(100), "a send lands on broker-b again", || {
            let producer = producer.clone();
            let msg = Message::new(&topic, "b-back");
            async move {
                match producer.send(msg).await {
                    Ok(r) if r.message_queue.broker_name == "broker-b" => Ok(returned.elapsed()),
                    Ok(r) => Err(r.message_queue.broker_name),
                    Err(e) => Err(e.to_string()),
                }
            }
        })
        .await;

        let (missing, dups) = rec.with(|seen| (seen.missing(expected.iter().map(String::as_str)), seen.duplicates()));
        println!(
            "cluster-figures: scenario=route-churn version={} picked_up_ms={} consumed_added_ms={} dropped_ms={} back_ms={} lost={} duplicates={dups}",
            env.broker.version,
            picked_up.as_millis(),
            consumed_b.as_millis(),
            dropped.as_millis(),
            back.as_millis(),
            missing.len()
        );
        assert!(missing.is_empty(), "none lost: {missing:?}");
        c.shutdown().await.expect("consumer shutdown");
        producer.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}
