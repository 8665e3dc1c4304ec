//! Two brokers: one is killed mid-run, sends continue on the other with no
//! error reaching the caller. Needs the local script's second broker.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rmq_producer::Message;
use rmq_testkit::env::Env;
use rmq_testkit::wait::{LONG_TEST_TIMEOUT, within};
use rmq_testkit::{BROKER_B, kill_broker, second_broker};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_continue_when_one_broker_dies() {
    within(LONG_TEST_TIMEOUT + Duration::from_secs(300), async {
        let env = Env::new().await;
        let broker_b = second_broker().await;
        let topic = rmq_testkit::unique_name("failover");
        env.topic_on(&topic, &env.broker.broker_addr, 4).await;
        env.topic_on(&topic, &broker_b, 4).await;
        let p = env.producer().await;

        // Wait until the route names both brokers.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let route = p
                .client_instance()
                .expect("a remoting producer")
                .refresh_route(&topic)
                .await
                .expect("route");
            let brokers: HashSet<_> = route
                .publish_queues()
                .iter()
                .map(|q| q.broker_name.clone())
                .collect();
            if brokers.len() == 2 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "route never listed two brokers"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        let killed = Arc::new(AtomicBool::new(false));
        // How many brokers the sends before the kill have used so far.
        let brokers_used = Arc::new(AtomicUsize::new(0));
        let sender = {
            let p = p.clone();
            let topic = topic.clone();
            let killed = killed.clone();
            let brokers_used = brokers_used.clone();
            tokio::spawn(async move {
                let mut used_before = HashSet::new();
                let mut used_after = HashSet::new();
                let mut sent_after = 0u32;
                let mut i = 0u32;
                while sent_after < 200 {
                    let after = killed.load(Ordering::SeqCst);
                    let r = p
                        .send(Message::new(&topic, format!("m{i}")))
                        .await
                        .unwrap_or_else(|e| panic!("send {i} failed (after kill: {after}): {e:?}"));
                    if after {
                        used_after.insert(r.message_queue.broker_name);
                        sent_after += 1;
                    } else {
                        used_before.insert(r.message_queue.broker_name);
                        brokers_used.store(used_before.len(), Ordering::SeqCst);
                    }
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                (used_before, used_after, i)
            })
        };
        // The kill comes once both brokers took sends.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while brokers_used.load(Ordering::SeqCst) < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the sends before the kill never used both brokers"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        kill_broker(BROKER_B).await;
        killed.store(true, Ordering::SeqCst);
        let (before, after, total) = sender.await.expect("sender");
        assert_eq!(
            before.len(),
            2,
            "both brokers were used before the kill: {before:?}"
        );
        assert!(!after.contains(BROKER_B), "{after:?}");
        assert!(total > 200);
        p.shutdown().await.expect("producer shutdown");
        // broker-b stays down: the other tests expect broker-a alone.
    })
    .await;
}
