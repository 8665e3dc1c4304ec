//! NEEDS THE LOCAL TWO-BROKER CLUSTER (`scripts/rocketmq-local.sh`): starts
//! `broker-b` if needed, STOPS it, and starts it again at the end. Other
//! test processes using broker-b at the same moment will see it go away.
//! Kept in its own test binary, named to run last.

use std::time::Duration;

use rmq_client_core::ClientInstance;
use rmq_testkit::client::{create_topic_on, poll_until, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "stops a local broker: run alone by the broker-fault step of scripts/test.sh (cargo test -- --ignored)"]
async fn a_stopped_broker_is_dropped_from_the_route_snapshot() {
    within(900, "broker stop test", async {
        let broker = rmq_testkit::broker().await;
        let addr_b = rmq_testkit::second_broker().await;
        let b = rmq_testkit::BROKER_B;

        // Refresh every second, so the background task (not this test)
        // notices the change.
        let config = rmq_client_core::ClientConfig::builder()
            .namesrv_addr(&broker.namesrv_addr)
            .instance_name(rmq_testkit::unique_name("brokerstop"))
            .poll_name_server_interval(Duration::from_secs(1))
            .build()
            .unwrap();
        let i = ClientInstance::get_or_start(config).unwrap();
        let topic = rmq_testkit::unique_name("brokerstop");
        create_topic_on(&i, &broker.broker_addr, &topic, 2).await;
        create_topic_on(&i, &addr_b, &topic, 2).await;
        poll_until(30, "route lists both brokers", || async {
            i.refresh_route(&topic)
                .await
                .is_ok_and(|r| r.broker_names().any(|n| n == b))
        })
        .await;
        assert_eq!(i.route(&topic).await.unwrap().publish_queues().len(), 4);
        assert_eq!(
            i.find_broker_addr_in_publish(b).as_deref(),
            Some(addr_b.as_str())
        );

        rmq_testkit::stop_broker(b).await;
        poll_until(60, "broker-b dropped by the periodic refresh", || async {
            i.cached_route(&topic)
                .is_some_and(|r| r.broker_names().all(|n| n != b))
        })
        .await;
        let route = i.cached_route(&topic).unwrap();
        assert_eq!(route.publish_queues().len(), 2);
        assert!(
            route
                .publish_queues()
                .iter()
                .all(|q| q.broker_name == broker.broker_name)
        );
        assert_eq!(i.find_broker_addr_in_publish(b), None);
        assert!(i.broker_addrs().iter().all(|(name, _, _)| name != b));
        i.release().await;
        // broker-b stays stopped: the other tests expect broker-a alone.
    })
    .await;
}
