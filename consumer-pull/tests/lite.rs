//! The lite pull consumer against the real broker: group rebalance and
//! takeover, assign + seek, stream backpressure, commit semantics,
//! pause/resume.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmq_consumer_pull::{
    ConsumeFrom, Error, LitePullConsumer, LitePullConsumerBuilder, MessageExt,
};
use rmq_testkit::env::{Env, body, count_once, send_batches, send_to};
use rmq_testkit::wait::{TEST_TIMEOUT, poll_until, within};
use tokio::sync::mpsc;

/// A lite consumer of `group` on the test broker, reading from the first
/// offset, adjusted by `f`.
async fn lite(
    env: &Env,
    group: &str,
    f: impl FnOnce(LitePullConsumerBuilder) -> LitePullConsumerBuilder,
) -> LitePullConsumer {
    let b = LitePullConsumer::builder()
        .group(group)
        .namesrv_addr(env.namesrv())
        .consume_from(ConsumeFrom::FirstOffset);
    f(b).start().await.expect("lite consumer starts")
}

/// Polls until `n` messages arrived (failing after 30 s); checks each batch
/// stays within the poll batch size.
async fn collect(c: &LitePullConsumer, n: usize) -> Vec<MessageExt> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    while out.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} messages arrived",
            out.len()
        );
        let batch = c.poll(Duration::from_millis(500)).await.expect("poll");
        assert!(batch.len() <= c.config().poll_batch_size());
        out.extend(batch);
    }
    out
}

fn offsets(msgs: &[MessageExt]) -> Vec<i64> {
    msgs.iter().map(|m| m.queue_offset).collect()
}

/// Reads `c` with `poll` until it is shut down, sending `(reader, body)`
/// for every message.
fn spawn_reader(
    name: &'static str,
    c: LitePullConsumer,
    tx: mpsc::UnboundedSender<(&'static str, String)>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match c.poll(Duration::from_millis(200)).await {
                Ok(batch) => {
                    for m in &batch {
                        let _ = tx.send((name, body(m)));
                    }
                }
                Err(e) if e.is_shutdown() => break,
                Err(e) => panic!("{name}: poll failed: {e:?}"),
            }
        }
    })
}

/// Receives until every body of `want` arrived; returns everything received.
async fn receive_all(
    rx: &mut mpsc::UnboundedReceiver<(&'static str, String)>,
    want: &[String],
) -> Vec<(&'static str, String)> {
    let mut missing: BTreeSet<&str> = want.iter().map(String::as_str).collect();
    let mut got = Vec::new();
    while !missing.is_empty() {
        let item = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} messages missing, e.g. {:?}",
                    missing.len(),
                    missing.first()
                )
            })
            .expect("readers alive");
        missing.remove(item.1.as_str());
        got.push(item);
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscribers_split_the_queues_then_one_takes_over() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_group", 4).await;
        let group = rmq_testkit::unique_name("lite_group");
        let sub = |b: LitePullConsumerBuilder| b.subscribe(topic.as_str(), "*").pull_batch_size(32);
        let a = lite(&env, &group, sub).await;
        let b = lite(&env, &group, sub).await;

        // The group splits the 4 queues once both see each other (the
        // broker notifies `a` when `b` joins).
        poll_until(
            Duration::from_secs(30),
            Duration::from_millis(50),
            "the group splits the queues",
            || async {
                let (qa, qb) = (a.assignment(), b.assignment());
                let all: BTreeSet<_> = qa.iter().chain(&qb).collect();
                if qa.len() == 2 && qb.len() == 2 && all.len() == 4 {
                    Ok(())
                } else {
                    Err(format!("no split: a={qa:?} b={qb:?}"))
                }
            },
        )
        .await;
        assert_ne!(a.client_id(), b.client_id());

        let (tx, mut rx) = mpsc::unbounded_channel();
        let reader_a = spawn_reader("a", a.clone(), tx.clone());
        let reader_b = spawn_reader("b", b.clone(), tx);
        let producer = env.producer().await;
        let first = send_batches(&producer, &topic, "one", 2000).await;
        let got = receive_all(&mut rx, &first).await;
        let by_a = got.iter().filter(|(r, _)| *r == "a").count();
        let by_b = got.len() - by_a;
        assert!(by_a > 0 && by_b > 0, "both read: a={by_a} b={by_b}");

        // `a` leaves: it commits what it handed out; `b` takes its queues
        // over from there.
        a.shutdown().await.expect("a shuts down");
        reader_a.await.expect("reader a ends at shutdown");
        let second = send_batches(&producer, &topic, "two", 1000).await;
        let got2 = receive_all(&mut rx, &second).await;
        assert!(got2.iter().all(|(r, _)| *r == "b"));
        assert_eq!(b.assignment().len(), 4, "b holds every queue");

        // Nothing lost, and the handover was exact: nothing twice.
        let all: Vec<String> = got.iter().chain(&got2).map(|(_, m)| m.clone()).collect();
        let counts = count_once(&all);
        let dups: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
        assert!(dups.is_empty(), "delivered twice: {dups:?}");
        assert_eq!(counts.len(), 3000);

        b.shutdown().await.expect("b shuts down");
        reader_b.await.expect("reader b ends");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assign_and_seek_replay_and_skip() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_seek", 2).await;
        let queues = env.queues(&topic, 2);
        let (q0, q1) = (queues[0].clone(), queues[1].clone());
        let producer = env.producer().await;
        send_to(&producer, &q0, "s", 20).await;

        let group = rmq_testkit::unique_name("lite_seek");
        let c = lite(&env, &group, |b| b.assign([q0.clone()]).auto_commit(false)).await;
        assert_eq!(c.assignment(), std::slice::from_ref(&q0));
        let all = collect(&c, 20).await;
        assert_eq!(offsets(&all), (0..20).collect::<Vec<_>>());
        assert_eq!(body(&all[0]), "s-0");

        // Replay from an earlier offset.
        c.seek(&q0, 5).await.expect("seek 5");
        let replay = collect(&c, 15).await;
        assert_eq!(offsets(&replay), (5..20).collect::<Vec<_>>());
        c.seek_to_begin(&q0).await.expect("seek to begin");
        assert_eq!(collect(&c, 1).await[0].queue_offset, 0);

        // Seek to the end skips what is stored; new messages still come.
        c.seek_to_end(&q0).await.expect("seek to end");
        let nothing = c.poll(Duration::from_millis(500)).await.expect("poll");
        assert!(nothing.is_empty(), "skipped, got {:?}", offsets(&nothing));
        send_to(&producer, &q0, "new", 3).await;
        let fresh = collect(&c, 3).await;
        assert_eq!(offsets(&fresh), [20, 21, 22]);
        assert_eq!(body(&fresh[0]), "new-0");

        // Typed errors.
        assert!(matches!(
            detailed(c.seek(&q0, 1000).await),
            Err(Error::OffsetOutOfRange {
                offset: 1000,
                min: 0,
                max: 23,
                ..
            })
        ));
        assert!(matches!(
            detailed(c.seek(&q1, 0).await),
            Err(Error::NotAssigned { .. })
        ));
        assert!(matches!(
            detailed(c.pause(std::slice::from_ref(&q1))),
            Err(Error::NotAssigned { .. })
        ));
        assert!(matches!(
            detailed(c.subscribe(&topic, "*").await),
            Err(Error::SubscriptionConflict {
                attempted: "subscribe",
                current: "assign"
            })
        ));

        // Re-assigning switches queues.
        send_to(&producer, &q1, "q1", 2).await;
        c.assign([q1.clone()]).await.expect("assign q1");
        assert_eq!(c.assignment(), std::slice::from_ref(&q1));
        let other = collect(&c, 2).await;
        assert!(other.iter().all(|m| m.queue_id == q1.queue_id));

        c.shutdown().await.expect("shutdown");
        assert!(c.poll(Duration::ZERO).await.unwrap_err().is_shutdown());
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_stream_reader_keeps_the_buffer_bounded() {
    const PER_QUEUE: usize = 20;
    const TOTAL: usize = 50;
    const MESSAGES: usize = 600;
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_backpressure", 4).await;
        let producer = env.producer().await;
        let sent = send_batches(&producer, &topic, "bp", MESSAGES).await;
        let group = rmq_testkit::unique_name("lite_backpressure");
        let c = lite(&env, &group, |b| {
            b.assign(env.queues(&topic, 4))
                .pull_threshold_for_queue(PER_QUEUE)
                .pull_threshold_for_all(TOTAL)
                .pull_batch_size(10)
        })
        .await;

        let check = |c: &LitePullConsumer| {
            let s = c.buffered();
            assert!(s.total <= TOTAL, "{s:?}");
            assert!(s.per_queue.values().all(|n| *n <= PER_QUEUE), "{s:?}");
            assert_eq!(s.total, s.per_queue.values().sum::<usize>());
            s
        };
        // Nobody reads yet: the buffer fills up to the total limit, then
        // pulling stops.
        poll_until(
            Duration::from_secs(30),
            Duration::from_millis(20),
            "the buffer fills up to the total limit",
            || async {
                let s = check(&c);
                if s.total < TOTAL { Err(s) } else { Ok(()) }
            },
        )
        .await;
        // The limit holds by reservation: the peak (which every later check
        // sees too) never passes it.
        let full = check(&c);
        assert_eq!(
            (full.total, full.peak_total),
            (TOTAL, TOTAL),
            "no growth while nobody reads"
        );

        // A slow reader: every message takes 2 ms.
        let mut stream = c.stream();
        let mut received = Vec::new();
        while received.len() < MESSAGES {
            let msg = tokio::time::timeout(Duration::from_secs(30), stream.next())
                .await
                .expect("a message within 30 s")
                .expect("stream open")
                .expect("no error");
            received.push(body(&msg));
            check(&c);
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let s = check(&c);
        assert_eq!(
            s.peak_total, TOTAL,
            "the total limit was reached and held: {s:?}"
        );
        assert!(s.peak_queue <= PER_QUEUE, "{s:?}");
        let counts = count_once(&received);
        assert_eq!(counts.len(), MESSAGES);
        assert!(sent.iter().all(|b| counts.get(b) == Some(&1)));

        c.shutdown().await.expect("shutdown");
        assert!(
            stream.next().await.is_none(),
            "the stream ends after shutdown"
        );
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_semantics() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_commit", 1).await;
        let q = env.queues(&topic, 1).remove(0);
        let producer = env.producer().await;
        send_to(&producer, &q, "c", 40).await;
        let metrics = tokio::runtime::Handle::current().metrics();
        let baseline = metrics.num_alive_tasks();
        let group = rmq_testkit::unique_name("lite_commit");
        let manual = |b: LitePullConsumerBuilder| {
            b.assign([q.clone()]).auto_commit(false).poll_batch_size(4)
        };

        // A: commits after 8, reads more, stops without committing.
        let a = lite(&env, &group, manual).await;
        let read = collect(&a, 8).await;
        let committed = read.last().unwrap().queue_offset + 1;
        a.commit().await.expect("commit");
        assert_eq!(a.committed(&q).await.expect("committed"), Some(committed));
        let more = collect(&a, 5).await;
        assert!(more[0].queue_offset == committed);
        a.shutdown().await.expect("a stops");

        // B resumes from the last commit, not from what A read after it.
        let b = lite(&env, &group, manual).await;
        assert_eq!(b.committed(&q).await.expect("committed"), Some(committed));
        let read = collect(&b, 6).await;
        assert_eq!(
            read[0].queue_offset, committed,
            "resumed from the committed offset"
        );
        let last = read.last().unwrap().queue_offset;
        b.commit().await.expect("commit");
        b.shutdown().await.expect("b stops");

        // C resumes exactly after B's last handed-out message.
        let c = lite(&env, &group, |b| b.assign([q.clone()])).await;
        let read = collect(&c, 3).await;
        assert_eq!(
            read[0].queue_offset,
            last + 1,
            "exactly after the last handed-out message"
        );
        let last = read.last().unwrap().queue_offset;
        // Auto-commit (C's default) commits the handed-out offset at shutdown.
        c.shutdown().await.expect("c stops");

        let d = lite(&env, &group, manual).await;
        assert_eq!(collect(&d, 1).await[0].queue_offset, last + 1);
        d.shutdown().await.expect("d stops");
        // No task of the four consumers (nor of their client instances)
        // outlives their shutdown. A `TaskTracker` counts a task done when
        // its future is dropped, a moment before the runtime counts it
        // dead: allow that moment (yields, bounded).
        let t0 = Instant::now();
        while metrics.num_alive_tasks() != baseline && t0.elapsed() < Duration::from_secs(1) {
            tokio::task::yield_now().await;
        }
        assert_eq!(metrics.num_alive_tasks(), baseline, "tasks left running");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_queue_delivers_nothing_until_resumed() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_pause", 2).await;
        let queues = env.queues(&topic, 2);
        let (q0, q1) = (queues[0].clone(), queues[1].clone());
        let group = rmq_testkit::unique_name("lite_pause");
        let c = lite(&env, &group, |b| b.assign(queues.clone())).await;
        c.pause(std::slice::from_ref(&q0)).expect("pause");
        assert_eq!(c.is_paused(&q0), Some(true));
        assert_eq!(c.is_paused(&q1), Some(false));

        let producer = env.producer().await;
        send_to(&producer, &q0, "p0", 10).await;
        send_to(&producer, &q1, "p1", 10).await;
        let got = collect(&c, 10).await;
        assert!(
            got.iter().all(|m| m.queue_id == q1.queue_id),
            "only the running queue"
        );
        let idle = c.poll(Duration::from_secs(1)).await.expect("poll");
        assert!(
            idle.is_empty(),
            "the paused queue delivered {:?}",
            offsets(&idle)
        );

        c.resume(std::slice::from_ref(&q0)).expect("resume");
        let resumed = collect(&c, 10).await;
        assert!(resumed.iter().all(|m| m.queue_id == q0.queue_id));
        assert_eq!(offsets(&resumed), (0..10).collect::<Vec<_>>());

        c.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_poll_loses_nothing() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_cancel", 1).await;
        let q = env.queues(&topic, 1).remove(0);
        let group = rmq_testkit::unique_name("lite_cancel");
        let c = lite(&env, &group, |b| b.assign([q.clone()])).await;
        // Polls raced against short timers, over and over, while messages
        // arrive: every message is still delivered exactly once, in order.
        let producer = env.producer().await;
        let sending = {
            let q = q.clone();
            tokio::spawn(async move {
                send_to(&producer, &q, "x", 50).await;
                producer
            })
        };
        let mut got: Vec<MessageExt> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while got.len() < 50 {
            assert!(Instant::now() < deadline, "only {}", got.len());
            tokio::select! {
                r = c.poll(Duration::from_secs(5)) => got.extend(r.expect("poll")),
                () = tokio::time::sleep(Duration::from_millis(3)) => {}
            }
        }
        assert_eq!(offsets(&got), (0..50).collect::<Vec<_>>());
        let producer = sending.await.expect("sender");
        let mut per_queue: HashMap<i32, usize> = HashMap::new();
        for m in &got {
            *per_queue.entry(m.queue_id).or_default() += 1;
        }
        assert_eq!(per_queue.get(&q.queue_id), Some(&50));
        c.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// Polls until `n` messages arrived, failing after `limit`.
async fn collect_within(c: &LitePullConsumer, n: usize, limit: Duration) -> Vec<MessageExt> {
    let deadline = Instant::now() + limit;
    let mut out = Vec::new();
    while out.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} messages arrived in {limit:?}",
            out.len()
        );
        out.extend(c.poll(Duration::from_millis(500)).await.expect("poll"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_side_reset_rewinds_the_running_consumer() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_reset", 2).await;
        let queues = env.queues(&topic, 2);
        let producer = env.producer().await;
        let mut sent = send_to(&producer, &queues[0], "r0", 20).await;
        sent.extend(send_to(&producer, &queues[1], "r1", 20).await);
        let group = rmq_testkit::unique_name("lite_reset");
        let c = lite(&env, &group, |b| b.subscribe(topic.as_str(), "*")).await;
        let _first = collect(&c, 40).await;
        c.commit().await.expect("commit");
        for q in &queues {
            assert_eq!(c.committed(q).await.expect("committed"), Some(20));
        }

        // The broker resets the group to the first messages (mqadmin
        // resetOffsetByTime with force): 5.x stores the offsets and answers
        // the consumer's next pull with PULL_OFFSET_MOVED, 4.9.x sends
        // RESET_CONSUMER_CLIENT_OFFSET to the online consumer.
        let admin = rmq_testkit::client::instance("lite_reset_admin").await;
        let applied = admin
            .invoke_broker_to_reset_offset(
                &env.broker.broker_addr,
                rmq_protocol::header::ResetOffsetRequestHeader {
                    topic: topic.clone(),
                    group: group.clone(),
                    timestamp: 0,
                    is_force: true,
                    queue_id: None,
                    offset: None,
                },
            )
            .await
            .expect("the broker resets the group");
        assert!(
            applied.iter().all(|(_, offset)| *offset == 0),
            "{applied:?}"
        );
        admin.shutdown().await;

        // The running consumer reads everything again (the broker holds a
        // caught-up pull up to the 20 s suspend time before answering).
        let again = collect_within(&c, 40, Duration::from_secs(60)).await;
        let bodies: BTreeSet<String> = again.iter().map(body).collect();
        let want: BTreeSet<String> = sent.iter().cloned().collect();
        assert_eq!(bodies, want, "every message again");
        assert_eq!(again.len(), 40, "each message once more");

        // The commit after the replay lands where it was before the reset.
        c.commit().await.expect("commit");
        for q in &queues {
            assert_eq!(c.committed(q).await.expect("committed"), Some(20));
        }
        c.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// The consumer's own error under the one a call returned.
fn detailed<T>(r: rmq_error::Result<T>) -> Result<T, Error> {
    r.map_err(|e| match e.downcast::<Error>() {
        Ok(e) => e,
        Err(e) => panic!("not a pull consumer error: {e:?}"),
    })
}

/// `commit_messages` and `commit_offsets` against the broker: the stored offset is the smallest
/// handed-out offset not committed (a gap holds it back), and the next consumer of the group
/// resumes exactly there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_messages_and_offsets_resume_exactly() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_commit_msgs", 1).await;
        let q = env.queues(&topic, 1).remove(0);
        let producer = env.producer().await;
        send_to(&producer, &q, "m", 30).await;
        let group = rmq_testkit::unique_name("lite_commit_msgs");
        let manual = |b: LitePullConsumerBuilder| {
            b.assign([q.clone()]).auto_commit(false).poll_batch_size(4)
        };

        // A: commits the first 5 read, then the 8th alone: the 6th and 7th stay uncommitted.
        let a = lite(&env, &group, manual).await;
        let read = collect(&a, 10).await;
        assert_eq!(offsets(&read)[..10], (0..10).collect::<Vec<i64>>()[..]);
        a.commit_messages(&read[..5])
            .await
            .expect("commit_messages");
        assert_eq!(a.committed(&q).await.expect("committed"), Some(5));
        a.commit_message(&read[7]).await.expect("commit_message");
        assert_eq!(
            a.committed(&q).await.expect("committed"),
            Some(5),
            "the uncommitted 6th message holds the stored offset back"
        );
        assert_eq!(env.committed_offset(&group, &q).await, Some(5));
        a.shutdown().await.expect("a stops");

        // B resumes at the first uncommitted message; commit_offsets moves past a read prefix.
        let b = lite(&env, &group, manual).await;
        let read = collect(&b, 8).await;
        assert_eq!(
            read[0].queue_offset, 5,
            "resumed at the first uncommitted message"
        );
        b.commit_offsets([(q.clone(), 9)])
            .await
            .expect("commit_offsets");
        assert_eq!(b.committed(&q).await.expect("committed"), Some(9));
        b.shutdown().await.expect("b stops");
        assert_eq!(env.committed_offset(&group, &q).await, Some(9));

        // C resumes exactly there.
        let c = lite(&env, &group, manual).await;
        assert_eq!(collect(&c, 1).await[0].queue_offset, 9);
        // A queue this consumer does not hold is refused, and nothing is committed.
        let other = env
            .queues(&env.topic("lite_commit_other", 1).await, 1)
            .remove(0);
        let refused = detailed(c.commit_offsets([(other.clone(), 1)]).await);
        assert!(
            matches!(&refused, Err(Error::NotAssigned { queue }) if *queue == other),
            "{refused:?}"
        );
        assert_eq!(c.committed(&q).await.expect("committed"), Some(9));
        c.shutdown().await.expect("c stops");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// A lite consumer dropped without `shutdown()` keeps what it committed; what it handed out but
/// did not commit is read again by the next consumer: that is the window a drop may redeliver
/// (with auto-commit, what was handed out since the last auto-commit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_lite_consumer_persists_its_commits() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("lite_drop", 1).await;
        let q = env.queues(&topic, 1).remove(0);
        let producer = env.producer().await;
        send_to(&producer, &q, "d", 20).await;
        let group = rmq_testkit::unique_name("lite_drop");
        let manual = |b: LitePullConsumerBuilder| {
            b.assign([q.clone()]).auto_commit(false).poll_batch_size(4)
        };

        let a = lite(&env, &group, manual).await;
        let read = collect(&a, 8).await;
        a.commit_messages(&read[..3])
            .await
            .expect("commit_messages");
        // A commit is stored at the broker when it returns.
        assert_eq!(env.committed_offset(&group, &q).await, Some(3));
        drop(a);
        // The drop's own persist (a task of the runtime) writes the committed offset, never the
        // handed-out one: it stays 3 while that task runs and after.
        poll_until(
            Duration::from_secs(15),
            Duration::from_millis(50),
            "the dropped consumer's group keeps its committed offset",
            || async {
                match env.committed_offset(&group, &q).await {
                    Some(3) => Ok(()),
                    other => Err(other),
                }
            },
        )
        .await;

        let b = lite(&env, &group, manual).await;
        let again = collect(&b, 5).await;
        assert_eq!(
            offsets(&again)[..5],
            [3, 4, 5, 6, 7],
            "the handed-out, uncommitted messages come again, nothing before them"
        );
        b.shutdown().await.expect("b stops");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
