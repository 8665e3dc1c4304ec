//! The push consumer's pop mode against the real broker (RocketMQ 5): pop-mode push consumers and
//! simple consumers sharing one group, each message acked once; a reconsumed message back after
//! its delay; the DLQ after the max reconsume times; more members than queues all receiving; a
//! killed member's messages coming back to the others; the typed refusal of a 4.x broker; orderly
//! pop: per-key order across members, a suspended message back before anything later, the DLQ.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_consumer_pull::{Expression, SimpleConsumer};
use rmq_consumer_push::{
    ConsumeContext, ConsumeResult, MaxReconsume, MessageExt, MessageListener, OrderlyResult, Retry,
    async_trait, dlq_topic,
};
use rmq_producer::Message;
use rmq_protocol::MessageQueue;
use rmq_testkit::orderly;
use rmq_tests_integration::child::{CHILD_POP_INVISIBLE, Child, ChildConfig, ChildMode};
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, poll_until, within};

const V5_ONLY: &str = "pop needs RocketMQ 5";

fn is_v5(env: &Env) -> bool {
    env.broker.major_version() != Some(4)
}

fn assert_v5(env: &Env) {
    assert!(
        is_v5(env),
        "{V5_ONLY}; this broker is {}",
        env.broker.version
    );
}

fn pop_spec(env: &Env, group: &str, topic: &str, invisible: Duration) -> ConsumerSpec {
    ConsumerSpec::new(env.namesrv(), group, topic).pop(invisible)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "4.x only (a 5.x broker pops): scripts/test.sh runs it on 4.9.x (cargo test -- --ignored)"]
async fn pop_mode_on_a_4x_broker_is_a_typed_error() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        assert!(
            !is_v5(&env),
            "needs a 4.x broker; this one is {}",
            env.broker.version
        );
        let topic = env.topic("pushpop49", 2).await;
        let group = rmq_testkit::unique_name("pushpop49");
        let started = Instant::now();
        let err = pop_spec(&env, &group, &topic, Duration::from_secs(10))
            .builder()
            .start(consumer::recording(Arc::new(Recorder::new()), 0, |_, _| {
                false
            }))
            .await
            .expect_err("a 4.x broker cannot pop");
        assert!(
            err.downcast_ref::<rmq_consumer_push::Error>()
                .is_some_and(rmq_consumer_push::Error::is_pop_not_supported),
            "{err:?}"
        );
        assert!(err.to_string().contains("RocketMQ 5"), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "refused at once, not a hang"
        );
    })
    .await;
}

/// What the simple consumers of a test counted: acks the broker took and failed, receives that
/// failed (with the first errors).
#[derive(Default)]
struct SimpleCounts {
    acked: AtomicUsize,
    ack_failed: AtomicUsize,
    receive_failed: AtomicUsize,
    errors: Mutex<Vec<String>>,
}

impl SimpleCounts {
    fn error(&self, what: &str, e: &rmq_error::Error) {
        let mut errors = self.errors.lock().expect("errors lock");
        if errors.len() < 10 {
            errors.push(format!("{what}: {e}"));
        }
    }
}

/// 5 000 messages over 4 queues popped by 2 pop-mode push consumers and 3 simple consumers of one
/// group, without faults: every message delivered exactly once, every ack result counted (the
/// simple consumers' `ack_batch` answers, the push consumers' acker through their running info):
/// 5 000 acks taken, none failed, no receive failed; nothing redelivered once the invisible time
/// (and the broker's revive floor) has passed after the last ack.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn pop_push_and_simple_consumers_share_five_thousand_each_acked_once() {
    within(TEST_TIMEOUT, async {
        const N: usize = 5_000;
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pushpop_mix", 4).await;
        let group = rmq_testkit::unique_name("pushpop_mix");
        let invisible = Duration::from_secs(10);
        let rec = Arc::new(Recorder::new());
        let mut pushes = Vec::new();
        for label in 0..2 {
            pushes.push(
                consumer::start(
                    pop_spec(&env, &group, &topic, invisible),
                    consumer::recording(rec.clone(), label, |_, _| false),
                )
                .await,
            );
        }
        let counts = Arc::new(SimpleCounts::default());
        let mut simples = Vec::new();
        for label in 2..5 {
            let c = SimpleConsumer::builder()
                .group(group.clone())
                .namesrv_addr(env.namesrv())
                .subscribe(topic.as_str(), Expression::all())
                .await_duration(Duration::from_secs(2))
                .start()
                .await
                .expect("simple consumer starts");
            let rec = rec.clone();
            let reader = c.clone();
            let topic = topic.clone();
            let counts = counts.clone();
            let task = tokio::spawn(async move {
                loop {
                    let got = match reader.receive(32, invisible).await {
                        Ok(got) => got,
                        Err(e) if e.is_shutdown() => return,
                        Err(e) => {
                            counts.receive_failed.fetch_add(1, Ordering::Relaxed);
                            counts.error("receive", &e);
                            continue;
                        }
                    };
                    for m in &got {
                        let mq =
                            MessageQueue::new(topic.as_str(), m.broker_name.clone(), m.queue_id);
                        rec.record(label, &mq, std::slice::from_ref(m.message()));
                    }
                    if got.is_empty() {
                        continue;
                    }
                    match reader.ack_batch(&got).await {
                        Ok(()) => counts.acked.fetch_add(got.len(), Ordering::Relaxed),
                        Err(e) => {
                            counts.error("ack_batch", &e);
                            counts.ack_failed.fetch_add(got.len(), Ordering::Relaxed)
                        }
                    };
                }
            });
            simples.push((c, task));
        }

        let producer = env.producer().await;
        let started = Instant::now();
        let sent = env
            .send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        rec.wait_distinct(N, Duration::from_secs(120)).await;
        println!("5 consumers popped {N} in {:?}", started.elapsed());
        let by_push = rec.with(|seen| seen.deliveries.iter().filter(|d| d.consumer < 2).count());
        // Every delivery's ack answered: the simple consumers count their own; the push
        // consumers' acker reports through the running info.
        let acks = || {
            let (mut taken, mut failed) = (0, 0);
            for c in &pushes {
                let (t, f) = consumer::pop_acks(c);
                taken += t;
                failed += f;
            }
            (
                usize::try_from(taken).expect("small"),
                usize::try_from(failed).expect("small"),
                counts.acked.load(Ordering::Relaxed),
                counts.ack_failed.load(Ordering::Relaxed),
            )
        };
        poll_until(
            Duration::from_secs(30),
            Duration::from_millis(50),
            "every ack answered",
            || {
                let now = acks();
                async move {
                    if now.0 + now.1 + now.2 + now.3 >= N {
                        Ok(())
                    } else {
                        Err(now)
                    }
                }
            },
        )
        .await;
        let last_ack = Instant::now();
        let (push_taken, push_failed, simple_taken, simple_failed) = acks();
        let errors = counts.errors.lock().expect("errors lock").clone();
        println!(
            "acks: push {push_taken} taken / {push_failed} failed (of {by_push} delivered), \
             simple {simple_taken} taken / {simple_failed} failed; receive failures {}",
            counts.receive_failed.load(Ordering::Relaxed)
        );
        assert_eq!(
            (push_failed, simple_failed),
            (0, 0),
            "no ack failed: {errors:?}"
        );
        assert_eq!(push_taken, by_push, "each push delivery acked once");
        assert_eq!(push_taken + simple_taken, N, "{N} acks taken");
        assert_eq!(
            counts.receive_failed.load(Ordering::Relaxed),
            0,
            "no receive failed: {errors:?}"
        );
        // Acked: nothing comes back once the invisible time and the broker's revive floor
        // (2 s, see `unacked_comes_back_after_its_invisible_time_and_change_extends_it`) have
        // passed after the last ack, with a second of slack.
        tokio::time::sleep_until((last_ack + invisible + Duration::from_secs(3)).into()).await;
        let expected: HashSet<String> = sent.iter().map(|s| s.msg_id.clone()).collect();
        rec.with(|seen| {
            assert!(seen.unexpected(&expected).is_empty(), "only sent messages");
            assert!(
                seen.missing(expected.iter().map(String::as_str)).is_empty(),
                "none lost"
            );
            let dup: Vec<_> = seen.counts.iter().filter(|(_, n)| **n > 1).collect();
            assert!(dup.is_empty(), "each message once; again: {dup:?}");
            assert_eq!(seen.deliveries.len(), N, "{N} deliveries, none redelivered");
            for label in 0..5 {
                let got = seen
                    .deliveries
                    .iter()
                    .filter(|d| d.consumer == label)
                    .count();
                println!("consumer {label}: {got}");
            }
            assert!(by_push > 0, "the pop-mode push consumers received");
            assert!(
                seen.deliveries.iter().any(|d| d.consumer >= 2),
                "the simple consumers received"
            );
        });
        assert_eq!(
            acks(),
            (push_taken, 0, simple_taken, 0),
            "no ack after the last"
        );
        for c in &pushes {
            c.shutdown().await.expect("push shutdown");
        }
        for (c, task) in simples {
            c.shutdown().await.expect("simple shutdown");
            task.await.expect("reader ends at shutdown");
        }
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// Fails the first delivery of every message with delay level `level`.
struct FailFirst {
    rec: Arc<Recorder>,
    level: u8,
}

#[async_trait]
impl MessageListener for FailFirst {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult {
        self.rec.record(0, ctx.queue(), msgs);
        if msgs.iter().any(|m| m.reconsume_times == 0) {
            ctx.set_retry(Retry::Level(self.level));
            return ConsumeResult::ReconsumeLater;
        }
        ConsumeResult::Success
    }
}

/// `ReconsumeLater` with delay level 2 (5 s): the message is hidden for 5 s (a change of its
/// invisible time), then delivered again with reconsume times 1, not before; once consumed it does
/// not come back. The broker's revive service adds a fixed ~2 s (PopReviveService revives a
/// checkpoint only once it is more than `PopAckConstants.ackTimeInterval` + 1 s behind the scan's
/// end time), so the bound is the delay + 3 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn reconsume_later_comes_back_after_its_delay() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pushpop_later", 1).await;
        let group = rmq_testkit::unique_name("pushpop_later");
        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            pop_spec(&env, &group, &topic, Duration::from_secs(30)),
            FailFirst {
                rec: rec.clone(),
                level: 2,
            },
        )
        .await;
        let producer = env.producer().await;
        producer
            .send(Message::new(&topic, "later"))
            .await
            .expect("send");
        rec.wait_for(Duration::from_secs(60), "delivered twice", |s| {
            s.deliveries.len() >= 2
        })
        .await;
        let (first, second, times) = rec.with(|s| {
            (
                s.deliveries[0].at,
                s.deliveries[1].at,
                s.deliveries[1].msg.reconsume_times,
            )
        });
        let back_after = second - first;
        println!("ReconsumeLater at delay level 2 (5 s): back after {back_after:?}");
        assert_eq!(times, 1, "redelivered with reconsume times 1");
        assert!(
            back_after >= Duration::from_secs(5),
            "back after {back_after:?}"
        );
        // Not the 30 s invisible time: the delay decided when it came back. The broker's revive
        // scan and the pop of the retry topic add a few seconds (8.2 s seen under load), so the
        // bound sits halfway between the delay and the invisible time.
        assert!(
            back_after <= Duration::from_secs(17),
            "back well before the 30 s invisible time (delay 5 s), after {back_after:?}"
        );
        tokio::time::sleep(Duration::from_secs(8)).await;
        assert_eq!(rec.len(), 2, "consumed: not delivered again");
        c.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// Always failing (delay level 1, 1 s): delivered with reconsume times 0, 1, 2, then moved to
/// `%DLQ%<group>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn always_failing_goes_to_the_dlq_after_max_reconsume_times() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pushpop_dlq", 1).await;
        let group = rmq_testkit::unique_name("pushpop_dlq");
        let rec = Arc::new(Recorder::new());
        struct Always(Arc<Recorder>);
        #[async_trait]
        impl MessageListener for Always {
            async fn consume(
                &self,
                msgs: &[MessageExt],
                ctx: &mut ConsumeContext,
            ) -> ConsumeResult {
                self.0.record(0, ctx.queue(), msgs);
                ctx.set_retry(Retry::Level(1));
                ConsumeResult::ReconsumeLater
            }
        }
        let c = consumer::start(
            pop_spec(&env, &group, &topic, Duration::from_secs(30)).max_reconsume_times(2),
            Always(rec.clone()),
        )
        .await;
        let producer = env.producer().await;
        producer
            .send(Message::new(&topic, "dead"))
            .await
            .expect("send");
        let dlq = format!("%DLQ%{group}");
        let addr = env.broker.broker_addr.clone();
        poll_until(
            Duration::from_secs(60),
            Duration::from_millis(200),
            "the DLQ holds the message",
            || {
                let admin = env.admin.clone();
                let (dlq, addr) = (dlq.clone(), addr.clone());
                async move {
                    match admin.get_max_offset(&addr, &dlq, 0, None).await {
                        Ok(1) => Ok(()),
                        other => Err(format!("{other:?}")),
                    }
                }
            },
        )
        .await;
        let times: Vec<i32> =
            rec.with(|s| s.deliveries.iter().map(|d| d.msg.reconsume_times).collect());
        assert_eq!(times, [0, 1, 2], "delivered max reconsume times + 1 times");
        c.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// 6 pop-mode push consumers on a 4-queue topic: every one receives, each message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn six_pop_members_on_four_queues_all_receive() {
    within(TEST_TIMEOUT, async {
        const N: usize = 600;
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pushpop_six", 4).await;
        let group = rmq_testkit::unique_name("pushpop_six");
        let rec = Arc::new(Recorder::new());
        let mut members = Vec::new();
        for label in 0..6 {
            // A slow listener with one call at a time: no member drains everything alone.
            let spec = pop_spec(&env, &group, &topic, Duration::from_secs(30))
                .consume_concurrency(1)
                .pull_batch_size(4);
            members.push(
                consumer::start(
                    spec,
                    consumer::recording_slow(rec.clone(), label, Duration::from_millis(5)),
                )
                .await,
            );
        }
        let producer = env.producer().await;
        env.send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        rec.wait_distinct(N, Duration::from_secs(90)).await;
        rec.with(|seen| {
            let dup: Vec<_> = seen.counts.iter().filter(|(_, n)| **n > 1).collect();
            assert!(dup.is_empty(), "each message once; again: {dup:?}");
            for label in 0..6 {
                let got = seen
                    .deliveries
                    .iter()
                    .filter(|d| d.consumer == label)
                    .count();
                println!("member {label}: {got}");
                assert!(got > 0, "member {label} received nothing");
            }
        });
        for c in &members {
            c.shutdown().await.expect("shutdown");
        }
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// A pop-mode member in a child process takes messages and is SIGKILLed with them in hand: they
/// come back to the surviving member after their invisible time, with reconsume times 1, and
/// nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn killed_pop_members_messages_come_back_to_the_others() {
    within(TEST_TIMEOUT, async {
        const N: usize = 40;
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pushpop_kill", 2).await;
        let group = rmq_testkit::unique_name("pushpop_kill");
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Child::spawn(
            env!("CARGO_BIN_EXE_push-child"),
            &ChildConfig {
                namesrv: env.namesrv().to_owned(),
                group: group.clone(),
                topic: topic.clone(),
                out: dir.path().join("deliveries.txt"),
                mode: ChildMode::Pop,
                fail_tag: None,
                // Holds every message until killed.
                delay: Duration::from_secs(3600),
            },
        );
        poll_until(
            Duration::from_secs(60),
            Duration::from_millis(100),
            "the child started",
            || {
                let started = child.started();
                async move { if started { Ok(()) } else { Err("not yet") } }
            },
        )
        .await;
        let producer = env.producer().await;
        let sent = env
            .send_spread(&producer, N, |i| Message::new(&topic, i.to_string()))
            .await;
        let held = poll_until(
            Duration::from_secs(30),
            Duration::from_millis(100),
            "the child holds messages",
            || {
                let records = child.records();
                async move {
                    if records.is_empty() {
                        Err(0)
                    } else {
                        Ok(records)
                    }
                }
            },
        )
        .await;
        child.assert_running();
        child.kill();
        let killed_at = Instant::now();
        let held_ids: HashSet<String> = child.records().into_iter().map(|r| r.msg_id).collect();
        println!("the child held {} of {N} when killed", held_ids.len());
        assert!(!held.is_empty());

        let rec = Arc::new(Recorder::new());
        let survivor = consumer::start(
            pop_spec(&env, &group, &topic, Duration::from_secs(30)),
            consumer::recording(rec.clone(), 0, |_, _| false),
        )
        .await;
        let expected: HashSet<String> = sent.iter().map(|s| s.msg_id.clone()).collect();
        rec.wait_for(Duration::from_secs(60), "every message reached the survivor", |s| {
            s.missing(expected.iter().map(String::as_str)).is_empty()
        })
        .await;
        println!(
            "every message at the survivor {:?} after the kill (pop invisible time {CHILD_POP_INVISIBLE:?})",
            killed_at.elapsed()
        );
        rec.with(|seen| {
            for id in &held_ids {
                let again = seen.of(id);
                assert!(!again.is_empty(), "held message {id} came back");
                assert!(
                    again.iter().all(|d| d.msg.reconsume_times == 1),
                    "redelivered with reconsume times 1"
                );
            }
        });
        survivor.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// An orderly pop-mode push consumer of `topic` (pop invisible time 30 s).
fn orderly_pop(env: &Env, group: &str, topic: &str) -> rmq_consumer_push::PushConsumerBuilder {
    orderly::builder(env.namesrv(), group, topic)
        .pop_mode(true)
        .pop_invisible_time(Duration::from_secs(30))
}

/// Deliveries of message `seq` as `(reconsume times, call)`.
fn deliveries_of(calls: &[orderly::Call], seq: usize) -> Vec<(i32, &orderly::Call)> {
    calls
        .iter()
        .flat_map(|c| {
            c.msgs
                .iter()
                .filter(move |m| m.1 == seq)
                .map(move |m| (m.3, c))
        })
        .collect()
}

/// 8 keys × 50 messages over 4 queues, consumed by 2 orderly pop-mode members of one group: each
/// key's messages first delivered in send order, no two calls of one queue at once (across the
/// members), none lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn orderly_pop_members_keep_each_keys_order() {
    within(TEST_TIMEOUT, async {
        const PER_KEY: usize = 50;
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pushpop_ord", 4).await;
        let group = rmq_testkit::unique_name("pushpop_ord");
        let keys: Vec<String> = (0..8).map(orderly::key).collect();
        let producer = env.producer().await;
        orderly::send_ordered(&producer, &topic, &keys, 0..PER_KEY, 4).await;
        producer.shutdown().await.expect("producer shutdown");
        let calls = Arc::new(orderly::Calls::default());
        let mut members = Vec::new();
        for label in 0..2 {
            let listener = orderly::Recording::accepting(label, calls.clone());
            members.push(orderly::start(orderly_pop(&env, &group, &topic), listener).await);
        }
        calls
            .wait_for(Duration::from_secs(90), "every message accepted", |all| {
                let per_key = orderly::per_key(all);
                keys.iter().all(|k| {
                    per_key
                        .get(k)
                        .is_some_and(|s| orderly::first_deliveries(s).len() == PER_KEY)
                })
            })
            .await;
        let all = calls.snapshot();
        for (key, seqs) in orderly::per_key(&all) {
            assert_eq!(
                orderly::first_deliveries(&seqs),
                (0..PER_KEY).collect::<Vec<_>>(),
                "first deliveries of {key} in send order"
            );
        }
        let checked = orderly::assert_no_overlap(&all);
        let by_member: Vec<usize> = (0..2)
            .map(|l| all.iter().filter(|c| c.consumer == l).count())
            .collect();
        println!("orderly pop: {checked} calls, per member {by_member:?}");
        for m in members {
            m.shutdown().await.expect("shutdown");
        }
        env.shutdown().await;
    })
    .await;
}

/// An orderly pop-mode listener suspending a message gets it again after the suspend time (the
/// broker hides it), before anything later of its queue, with its reconsume times counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn orderly_pop_suspended_message_comes_back_before_anything_later() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pushpop_osusp", 4).await;
        let group = rmq_testkit::unique_name("pushpop_osusp");
        let producer = env.producer().await;
        let k = orderly::key(0);
        orderly::send_ordered(&producer, &topic, std::slice::from_ref(&k), 0..10, 1).await;
        producer.shutdown().await.expect("producer shutdown");
        let calls = Arc::new(orderly::Calls::default());
        let listener = orderly::Recording {
            label: 0,
            calls: calls.clone(),
            delay: Duration::ZERO,
            // Message 3 is suspended twice, then accepted.
            decide: Box::new(|msgs| {
                if msgs
                    .iter()
                    .any(|m| orderly::parse(m).1 == 3 && m.reconsume_times < 2)
                {
                    OrderlyResult::SuspendCurrentQueueAMoment
                } else {
                    OrderlyResult::Success
                }
            }),
        };
        let suspend = Duration::from_millis(500);
        let consumer = orderly::start(
            orderly_pop(&env, &group, &topic).suspend_current_queue_time(suspend),
            listener,
        )
        .await;
        calls.wait_accepted(10, Duration::from_secs(60)).await;
        let all = calls.snapshot();
        let threes = deliveries_of(&all, 3);
        let times: Vec<i32> = threes.iter().map(|(rt, _)| *rt).collect();
        assert_eq!(times, [0, 1, 2], "reconsume times of the suspended message");
        for pair in threes.windows(2) {
            let gap = pair[1].1.start - pair[0].1.end;
            assert!(
                gap >= suspend - Duration::from_millis(100),
                "redelivered after {gap:?}, before the {suspend:?} suspend time"
            );
        }
        let seqs: Vec<usize> = all
            .iter()
            .flat_map(|c| c.msgs.iter().map(|m| m.1))
            .collect();
        assert_eq!(
            seqs,
            [0, 1, 2, 3, 3, 3, 4, 5, 6, 7, 8, 9],
            "nothing later of the queue before message 3 was accepted"
        );
        consumer.shutdown().await.expect("shutdown");
        env.shutdown().await;
    })
    .await;
}

/// An orderly pop-mode message that keeps failing goes to `%DLQ%<group>` after the max reconsume
/// times and the queue goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn orderly_pop_past_max_reconsume_times_goes_to_the_dlq() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pushpop_odlq", 4).await;
        let group = rmq_testkit::unique_name("pushpop_odlq");
        let producer = env.producer().await;
        let k = orderly::key(7);
        orderly::send_ordered(&producer, &topic, std::slice::from_ref(&k), 0..5, 1).await;
        producer.shutdown().await.expect("producer shutdown");
        let calls = Arc::new(orderly::Calls::default());
        let listener = orderly::Recording {
            label: 0,
            calls: calls.clone(),
            delay: Duration::ZERO,
            decide: Box::new(|msgs| {
                if msgs.iter().any(|m| orderly::parse(m).1 == 1) {
                    OrderlyResult::SuspendCurrentQueueAMoment
                } else {
                    OrderlyResult::Success
                }
            }),
        };
        let consumer = orderly::start(
            orderly_pop(&env, &group, &topic)
                .max_reconsume(MaxReconsume::Times(2))
                .suspend_current_queue_time(Duration::from_millis(200)),
            listener,
        )
        .await;
        calls.wait_accepted(4, Duration::from_secs(60)).await;
        let all = calls.snapshot();
        let times: Vec<i32> = deliveries_of(&all, 1).iter().map(|(rt, _)| *rt).collect();
        assert_eq!(
            times,
            [0, 1, 2],
            "delivered once plus max reconsume times (2)"
        );
        let seqs: Vec<usize> = all
            .iter()
            .flat_map(|c| c.msgs.iter().map(|m| m.1))
            .collect();
        assert_eq!(
            seqs,
            [0, 1, 1, 1, 2, 3, 4],
            "the queue went on after the DLQ"
        );
        let dlq = dlq_topic(&group);
        let failing = orderly::body(&k, 1);
        poll_until(
            Duration::from_secs(30),
            Duration::from_millis(200),
            "the message in the DLQ",
            || {
                let (dlq, env, failing) = (dlq.clone(), &env, failing.clone());
                async move {
                    if let Err(e) = env.admin.refresh_route(&dlq).await {
                        return Err(format!("no DLQ route yet: {e}"));
                    }
                    let bodies: Vec<String> = env
                        .pull_all(&dlq, 0)
                        .await
                        .iter()
                        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
                        .collect();
                    if bodies == [failing.clone()] {
                        Ok(())
                    } else {
                        Err(format!("DLQ holds {bodies:?}"))
                    }
                }
            },
        )
        .await;
        consumer.shutdown().await.expect("shutdown");
        env.shutdown().await;
    })
    .await;
}
