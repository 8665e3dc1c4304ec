//! Issue 5, scenarios 2 and 3: an orderly listener suspending a message gets the same message
//! again after the suspend time, before anything later of its queue, with its reconsume times
//! counted; past the max reconsume times the message goes to the group's DLQ and the queue goes
//! on.

use std::sync::Arc;
use std::time::Duration;

use rmq_consumer_push::{MaxReconsume, OrderlyResult, dlq_topic};
use rmq_testkit::orderly::{
    Call, Calls, Recording, body, builder, key, parse, send_ordered, start,
};
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

/// Deliveries of message `seq` as `(reconsume times, call)`.
fn deliveries_of(calls: &[Call], seq: usize) -> Vec<(i32, &Call)> {
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

/// Waits until the broker's committed offset of every queue of `topic` holding messages of
/// the test equals its max offset.
async fn wait_committed(env: &Env, group: &str, topic: &str, queue_id: i32) {
    let mq = env.mq(topic, queue_id);
    let max = env.max_offset(&mq).await;
    poll_until(
        Duration::from_secs(20),
        Duration::from_millis(100),
        "committed offset == max offset",
        || {
            let mq = mq.clone();
            async move {
                match env.committed_offset(group, &mq).await {
                    Some(c) if c == max => Ok(()),
                    other => Err(format!("committed {other:?}, max {max}")),
                }
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_message_comes_back_before_anything_later() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("ord_susp", 4).await;
        let group = rmq_testkit::unique_name("ord_susp_g");
        let producer = env.producer().await;
        let k = key(0);
        let queues = send_ordered(&producer, &topic, std::slice::from_ref(&k), 0..10, 1).await;
        producer.shutdown().await.expect("producer shutdown");
        let queue_id = queues[&k];

        let calls = Arc::new(Calls::default());
        let listener = Recording {
            label: 0,
            calls: calls.clone(),
            delay: Duration::ZERO,
            // Message 3 is suspended three times, then accepted.
            decide: Box::new(|msgs| {
                if msgs
                    .iter()
                    .any(|m| parse(m).1 == 3 && m.reconsume_times < 3)
                {
                    OrderlyResult::SuspendCurrentQueueAMoment
                } else {
                    OrderlyResult::Success
                }
            }),
        };
        let started = std::time::Instant::now();
        // Default suspend time (1 s) and batch size (1).
        let consumer = start(builder(env.namesrv(), &group, &topic), listener).await;
        calls.wait_accepted(10, Duration::from_secs(60)).await;
        let took = started.elapsed();
        let all = calls.snapshot();

        let threes = deliveries_of(&all, 3);
        let times: Vec<i32> = threes.iter().map(|(rt, _)| *rt).collect();
        assert_eq!(
            times,
            [0, 1, 2, 3],
            "reconsume times of the suspended message"
        );
        for pair in threes.windows(2) {
            let gap = pair[1].1.start - pair[0].1.end;
            assert!(
                gap >= Duration::from_millis(900),
                "redelivered after {gap:?}, expected the 1 s suspend time"
            );
        }
        let accepted_at = threes[3].1.end;
        for c in &all {
            for m in &c.msgs {
                if m.1 > 3 {
                    assert!(
                        c.start >= accepted_at,
                        "{} delivered before message 3 was accepted",
                        body(&m.0, m.1)
                    );
                }
            }
        }
        // Every message once, except the suspended one; in order.
        let seqs: Vec<usize> = all
            .iter()
            .flat_map(|c| c.msgs.iter().map(|m| m.1))
            .collect();
        assert_eq!(seqs, [0, 1, 2, 3, 3, 3, 3, 4, 5, 6, 7, 8, 9]);
        println!("suspend x3 then accept: 10 messages in {took:?}");

        consumer.shutdown().await.expect("shutdown");
        wait_committed(&env, &group, &topic, queue_id).await;
        env.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_max_reconsume_times_the_message_goes_to_the_dlq() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("ord_dlq", 4).await;
        let group = rmq_testkit::unique_name("ord_dlq_g");
        let producer = env.producer().await;
        let k = key(7);
        let queues = send_ordered(&producer, &topic, std::slice::from_ref(&k), 0..5, 1).await;
        producer.shutdown().await.expect("producer shutdown");
        let queue_id = queues[&k];

        let calls = Arc::new(Calls::default());
        let listener = Recording {
            label: 0,
            calls: calls.clone(),
            delay: Duration::ZERO,
            // Message 1 always fails.
            decide: Box::new(|msgs| {
                if msgs.iter().any(|m| parse(m).1 == 1) {
                    OrderlyResult::SuspendCurrentQueueAMoment
                } else {
                    OrderlyResult::Success
                }
            }),
        };
        let started = std::time::Instant::now();
        let consumer = start(
            builder(env.namesrv(), &group, &topic)
                .max_reconsume(MaxReconsume::Times(2))
                .suspend_current_queue_time(Duration::from_millis(200)),
            listener,
        )
        .await;
        // 0, 2, 3, 4 accepted; 1 given up.
        calls.wait_accepted(4, Duration::from_secs(60)).await;
        let took = started.elapsed();
        let all = calls.snapshot();
        let ones = deliveries_of(&all, 1);
        let times: Vec<i32> = ones.iter().map(|(rt, _)| *rt).collect();
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

        // The message is in %DLQ%<group> (created by the broker on the first dead letter).
        let dlq = dlq_topic(&group);
        let failing = body(&k, 1);
        let dead = poll_until(
            Duration::from_secs(30),
            Duration::from_millis(200),
            "the message in the DLQ",
            || {
                let dlq = dlq.clone();
                let env = &env;
                let failing = failing.clone();
                async move {
                    if let Err(e) = env.admin.refresh_route(&dlq).await {
                        return Err(format!("no DLQ route yet: {e}"));
                    }
                    let msgs = env.pull_all(&dlq, 0).await;
                    let bodies: Vec<String> = msgs
                        .iter()
                        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
                        .collect();
                    if bodies.contains(&failing) {
                        Ok(bodies)
                    } else {
                        Err(format!("DLQ holds {bodies:?}"))
                    }
                }
            },
        )
        .await;
        assert_eq!(dead, [body(&k, 1)], "exactly the failing message is dead");
        println!("DLQ after 3 deliveries: {took:?} until the queue's last message");

        consumer.shutdown().await.expect("shutdown");
        wait_committed(&env, &group, &topic, queue_id).await;
        env.shutdown().await;
    })
    .await;
}
