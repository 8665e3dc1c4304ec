//! Issue 5, scenario 5: the fault proxy swallows LOCK_BATCH_MQ of one of two orderly consumers.
//! Once its lease runs out it stops consuming its queue (the other member's queue goes on);
//! after the fault clears it locks the queue again and resumes without loss.
//!
//! The consumers use a short lock lease (renewal every 1 s, lease 3 s) so the test takes
//! seconds; the defaults (20 s / 30 s) behave the same, slower.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_client_core::ClientConfig;
use rmq_consumer_push::PushConsumer;
use rmq_protocol::RequestCode;
use rmq_testkit::orderly::{
    Calls, PERSIST_INTERVAL, Recording, builder, builder_with, first_deliveries, key, per_key,
    send_ordered, start,
};
use rmq_testkit::proxy::{FaultProxy, Rule};
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

const QUEUES: i32 = 2;
const KEYS: usize = 10;
const RENEW: Duration = Duration::from_secs(1);
const LEASE: Duration = Duration::from_secs(3);

/// The queue ids of `topic` the consumer holds, and whether each is locked and fresh.
fn held(c: &PushConsumer, topic: &str) -> Vec<(i32, Option<bool>)> {
    c.inspect()
        .into_iter()
        .filter(|s| s.queue.topic == topic)
        .map(|s| (s.queue.queue_id, s.locked))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_cannot_renew_its_lock_stops_then_resumes_without_loss() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("ord_lost", QUEUES).await;
        let group = rmq_testkit::unique_name("ord_lost_g");
        let keys: Vec<String> = (0..KEYS).map(key).collect();
        let proxy = FaultProxy::start(env.namesrv())
            .await
            .expect("proxy starts");
        let calls = Arc::new(Calls::default());

        // A reaches the broker through the proxy, B directly.
        let a_client = ClientConfig::builder()
            .namesrv_addr(proxy.namesrv_addr())
            .instance_name(rmq_testkit::unique_name("ord_lost_a"))
            .persist_consumer_offset_interval(PERSIST_INTERVAL)
            .build()
            .expect("client config");
        let a = start(
            builder_with(a_client, &group, &topic)
                .lock_renew_interval(RENEW)
                .lock_lease(LEASE),
            Recording::accepting(0, calls.clone()),
        )
        .await;
        let b = start(
            builder(env.namesrv(), &group, &topic)
                .lock_renew_interval(RENEW)
                .lock_lease(LEASE),
            Recording::accepting(1, calls.clone()),
        )
        .await;
        // One queue each, locked.
        let a_queue = poll_until(
            Duration::from_secs(30),
            Duration::from_millis(50),
            "one locked queue per consumer",
            || async {
                let (ha, hb) = (held(&a, &topic), held(&b, &topic));
                match (ha.as_slice(), hb.as_slice()) {
                    ([(qa, Some(true))], [(_, Some(true))]) => Ok(*qa),
                    _ => Err(format!("A holds {ha:?}, B holds {hb:?}")),
                }
            },
        )
        .await;

        let producer = env.producer().await;
        let queues = send_ordered(&producer, &topic, &keys, 0..5, 4).await;
        let a_keys: BTreeSet<&String> = queues
            .iter()
            .filter(|(_, q)| **q == a_queue)
            .map(|(k, _)| k)
            .collect();
        assert!(
            !a_keys.is_empty() && a_keys.len() < KEYS,
            "keys on both queues: {queues:?}"
        );
        calls.wait_accepted(KEYS * 5, Duration::from_secs(30)).await;

        // Fault: A's lock requests vanish (each times out after 1 s).
        let fault_at = Instant::now();
        proxy.set_rule(RequestCode::LOCK_BATCH_MQ, Rule::Drop);
        poll_until(
            LEASE + RENEW + Duration::from_secs(5),
            Duration::from_millis(20),
            "A's lock lease runs out",
            || async {
                match held(&a, &topic).as_slice() {
                    [(_, Some(false))] => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            },
        )
        .await;
        let expired_at = Instant::now();
        let expired_after = expired_at - fault_at;
        assert!(
            expired_after <= LEASE + RENEW + Duration::from_secs(2),
            "the lease ran out after {expired_after:?}"
        );

        // More messages: B's queue goes on, A's waits.
        send_ordered(&producer, &topic, &keys, 5..10, 4).await;
        calls
            .wait_for(
                Duration::from_secs(30),
                "B consumed its new messages",
                |calls| {
                    let b_new = calls
                        .iter()
                        .filter(|c| c.consumer == 1)
                        .flat_map(|c| c.msgs.iter())
                        .filter(|m| m.1 >= 5)
                        .count();
                    b_new >= (KEYS - a_keys.len()) * 5
                },
            )
            .await;
        // Three more seconds of fault: A's re-lock attempts keep failing.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let seen = proxy.request_count(RequestCode::LOCK_BATCH_MQ);
        let during = calls.snapshot();
        let late: Vec<_> = during
            .iter()
            .filter(|c| c.consumer == 0 && c.start >= expired_at)
            .collect();
        assert!(late.is_empty(), "A consumed with an expired lock: {late:?}");
        let waiting = held(&a, &topic);
        let a_snapshot = a.inspect();
        println!(
            "lease ran out {expired_after:?} after the fault; A holds {waiting:?}, {} message(s) \
             pulled and waiting; {seen} LOCK_BATCH_MQ requests seen by the proxy",
            a_snapshot
                .iter()
                .filter(|s| s.queue.topic == topic)
                .map(|s| s.count)
                .sum::<usize>()
        );

        // The fault clears: A locks again and catches up.
        let cleared_at = Instant::now();
        proxy.clear_all();
        calls
            .wait_accepted(KEYS * 10, Duration::from_secs(30))
            .await;
        let resumed_after = cleared_at.elapsed();
        let all = calls.snapshot();
        let expected: Vec<usize> = (0..10).collect();
        for (k, s) in per_key(&all) {
            assert_eq!(first_deliveries(&s), expected, "key {k}");
        }
        let deliveries: usize = all.iter().map(|c| c.msgs.len()).sum();
        println!(
            "A resumed and caught up {resumed_after:?} after the fault cleared; duplicates {}",
            deliveries - KEYS * 10
        );
        assert!(
            matches!(held(&a, &topic).as_slice(), [(_, Some(true))]),
            "A's lock is fresh again"
        );

        producer.shutdown().await.expect("producer shutdown");
        a.shutdown().await.expect("A shuts down");
        b.shutdown().await.expect("B shuts down");
        proxy.shutdown().await;
        env.shutdown().await;
    })
    .await;
}
