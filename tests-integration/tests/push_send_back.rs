//! Issue 4, scenario 4: a failed CONSUMER_SEND_MSG_BACK keeps the message in the process queue
//! (consumed again locally), and the committed offset never passes it — neither while the
//! consumer runs nor when it dies without shutdown.

use std::sync::Arc;
use std::time::Duration;

use rmq_producer::Message;
use rmq_protocol::{RequestCode, ResponseCode};
use rmq_testkit::proxy::{FaultProxy, Rule};
use rmq_tests_integration::child::{Child, ChildConfig, ChildMode};
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, Sent, TEST_TIMEOUT, poll_until, within};

/// Messages per test, all in queue 0; the one at [`FAIL_AT`] fails on its original delivery.
const N: usize = 20;
const FAIL_AT: usize = 5;
/// The consumer's pause before consuming a message locally again after a failed send-back
/// (default 5 s; shortened to keep the suite fast).
const LOCAL_RETRY: Duration = Duration::from_secs(1);

async fn send_queue0(env: &Env, topic: &str) -> Vec<Sent> {
    let producer = env.producer().await;
    let mut sent = Vec::new();
    for i in 0..N {
        let tag = if i == FAIL_AT { "fail" } else { "ok" };
        let msg = Message::new(topic, i.to_string()).with_tags(tag);
        let mut s = env.send_to_queue(&producer, msg, 0).await;
        s.index = i;
        sent.push(s);
    }
    producer.shutdown().await.expect("producer shutdown");
    sent
}

/// In-process: the proxy answers SYSTEM_ERROR to every send-back. The failing message is
/// consumed again locally (several send-back attempts), the committed offset of its queue (the
/// consumer's inspection and the broker's) stays at its offset; once the fault is cleared the
/// send-back succeeds, it comes back through the retry topic and the queue is committed fully.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_send_back_holds_the_offset_until_the_fault_clears() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("push_sendback", 1).await;
        let group = rmq_testkit::unique_name("push_sendback_cg");
        let sent = send_queue0(&env, &topic).await;
        let fail = &sent[FAIL_AT];
        let mq = env.mq(&topic, 0);

        let proxy = FaultProxy::start(env.namesrv())
            .await
            .expect("proxy starts");
        proxy.set_rule(
            RequestCode::CONSUMER_SEND_MSG_BACK,
            Rule::error_with(ResponseCode::SYSTEM_ERROR, "injected by the test"),
        );
        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(proxy.namesrv_addr(), &group, &topic).local_retry_delay(LOCAL_RETRY),
            // The failing message fails whenever it comes from the topic itself (its local
            // re-consumptions too); its retry, from the retry topic, succeeds.
            consumer::recording(rec.clone(), 0, {
                let topic = topic.clone();
                move |m, q| m.tags() == Some("fail") && q.topic == topic
            }),
        )
        .await;

        // The others are consumed; the failing one is held. Sample both committed offsets until
        // three send-backs (the first and two local re-consumptions) have failed and the broker
        // has the held offset.
        let mut samples = 0;
        let mut broker_at_fail = false;
        loop {
            let local = consumer::committed_offset(&c, &mq);
            let broker = env.committed_offset(&group, &mq).await;
            assert!(
                local.is_none_or(|o| o <= fail.queue_offset),
                "inspection: committed offset {local:?} passed the held message at {}",
                fail.queue_offset
            );
            assert!(
                broker.is_none_or(|o| o <= fail.queue_offset),
                "broker: committed offset {broker:?} passed the held message at {}",
                fail.queue_offset
            );
            broker_at_fail |= broker == Some(fail.queue_offset);
            samples += 1;
            if broker_at_fail && proxy.request_count(RequestCode::CONSUMER_SEND_MSG_BACK) >= 3 {
                break;
            }
            assert!(
                samples < 600,
                "no progress: broker {broker:?}, local {local:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        rec.with(|seen| {
            for s in &sent {
                let n = seen.counts.get(&s.msg_id).copied().unwrap_or(0);
                if s.index == FAIL_AT {
                    assert!(
                        n >= 3,
                        "held message consumed again locally: {n} deliveries"
                    );
                    // Consumed again locally from its own queue (Java counts each failed
                    // send-back as a reconsumption).
                    let held = seen.of(&s.msg_id);
                    assert!(held.iter().all(|d| d.queue.topic == topic), "{held:?}");
                    assert_eq!(held[0].msg.reconsume_times, 0);
                } else {
                    assert_eq!(n, 1, "message {} once", s.index);
                }
            }
        });
        let snap = consumer::snapshot(&c, &mq).expect("the queue is assigned");
        assert_eq!(
            (snap.count, snap.min_offset, snap.max_offset),
            (1, Some(fail.queue_offset), Some(fail.queue_offset)),
            "only the failing message is held: {snap:?}"
        );

        // The fault clears: the next local attempt fails again, its send-back succeeds, and the
        // message returns through the retry topic.
        proxy.clear_all();
        rec.wait_for(
            Duration::from_secs(30),
            "the held message back via the retry topic",
            |s| s.of(&fail.msg_id).iter().any(|d| d.queue.topic != topic),
        )
        .await;
        rec.with(|seen| {
            let ds = seen.of(&fail.msg_id);
            let retried = ds.iter().find(|d| d.queue.topic != topic).expect("retried");
            assert_eq!(retried.queue.topic, format!("%RETRY%{group}"));
            assert_eq!(retried.msg.message.topic, topic, "original topic shown");
            assert!(retried.msg.reconsume_times >= 1);
        });
        env.wait_committed_at_max(&group, &topic, 1, Duration::from_secs(10))
            .await;
        c.shutdown().await.expect("clean shutdown");
        proxy.shutdown().await;
        env.shutdown().await;
    })
    .await;
}

/// A consumer process whose send-backs all fail is SIGKILLed while it holds the failing message:
/// the broker's committed offset has not passed it, and a new consumer of the group gets it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_consumer_holding_a_failed_message_loses_nothing() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("push_sendback_kill", 1).await;
        let group = rmq_testkit::unique_name("push_sendback_kill_cg");
        let sent = send_queue0(&env, &topic).await;
        let fail = &sent[FAIL_AT];
        let mq = env.mq(&topic, 0);
        let dir = tempfile::tempdir().expect("temp dir");

        let mut child = Child::spawn(
            env!("CARGO_BIN_EXE_push-child"),
            &ChildConfig {
                namesrv: env.namesrv().to_owned(),
                group: group.clone(),
                topic: topic.clone(),
                out: dir.path().join("deliveries.txt"),
                mode: ChildMode::FailSendBack,
                fail_tag: Some("fail".into()),
                delay: Duration::ZERO,
            },
        );
        // Another process: poll its output and the broker.
        poll_until(
            Duration::from_secs(60),
            Duration::from_millis(100),
            "child consumed everything, re-consumed the held message, committed up to it",
            || {
                let (env, group, mq, child) = (&env, &group, &mq, &child);
                async move {
                    let records = child.records();
                    let held = records.iter().filter(|r| r.msg_id == fail.msg_id).count();
                    assert!(
                        records.iter().all(|r| r.queue_topic == mq.topic),
                        "nothing came back through the retry topic: {records:?}"
                    );
                    let others = records.iter().filter(|r| r.msg_id != fail.msg_id).count();
                    let committed = env.committed_offset(group, mq).await;
                    assert!(
                        committed.is_none_or(|o| o <= fail.queue_offset),
                        "broker: committed offset {committed:?} passed the held message at {}",
                        fail.queue_offset
                    );
                    if held >= 2 && others >= N - 1 && committed == Some(fail.queue_offset) {
                        Ok(())
                    } else {
                        Err((held, others, committed))
                    }
                }
            },
        )
        .await;
        child.assert_running();
        child.kill();
        let committed = env.committed_offset(&group, &mq).await;
        assert_eq!(committed, Some(fail.queue_offset), "after the kill");

        // A new consumer of the group (no fault) starts from the committed offset.
        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic),
            consumer::recording(rec.clone(), 0, |_, _| false),
        )
        .await;
        rec.wait_for(
            Duration::from_secs(30),
            "the held message and the rest again",
            |s| {
                sent[FAIL_AT..]
                    .iter()
                    .all(|m| s.counts.contains_key(&m.msg_id))
            },
        )
        .await;
        env.wait_committed_at_max(&group, &topic, 1, Duration::from_secs(10))
            .await;
        c.shutdown().await.expect("clean shutdown");
        rec.with(|seen| {
            let d = seen.of(&fail.msg_id);
            assert_eq!(d.len(), 1);
            assert_eq!(
                d[0].msg.reconsume_times, 0,
                "from its own queue, not a retry"
            );
            for s in &sent[..FAIL_AT] {
                assert!(
                    !seen.counts.contains_key(&s.msg_id),
                    "committed message {} redelivered",
                    s.index
                );
            }
        });
        env.shutdown().await;
    })
    .await;
}
