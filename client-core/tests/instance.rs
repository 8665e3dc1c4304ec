//! ClientInstance against the real broker: routes, heartbeats,
//! unregistration and NOTIFY_CONSUMER_IDS_CHANGED.

use std::sync::Arc;

use rmq_client_core::{ClientInstance, Error};
use rmq_testkit::client::{TestConsumer, create_topic, instance, poll_until, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn route_of_a_topic_created_after_start_is_found_on_demand() {
    within(120, "route test", async {
        let broker = rmq_testkit::broker().await;
        let i = instance("route").await;
        let topic = rmq_testkit::unique_name("route");
        assert!(i.cached_route(&topic).is_none());
        let missing = i.route(&topic).await.unwrap_err();
        assert!(matches!(missing, Error::RouteNotFound { .. }), "{missing}");

        create_topic(&i, &topic, 6).await;
        let route = i.route(&topic).await.expect("route found on demand");
        let on_broker = |qs: &[rmq_protocol::MessageQueue]| {
            qs.iter()
                .filter(|q| q.broker_name == broker.broker_name)
                .count()
        };
        assert_eq!(on_broker(route.publish_queues()), 6);
        assert_eq!(on_broker(route.subscribe_queues()), 6);
        assert!(route.publish_queues().iter().all(|q| q.topic == topic));
        assert_eq!(
            i.find_broker_addr_in_publish(&broker.broker_name)
                .as_deref(),
            Some(broker.broker_addr.as_str())
        );
        assert_eq!(
            i.find_broker_addr_in_subscribe(&broker.broker_name, 0, true),
            Some((broker.broker_addr.clone(), false))
        );
        assert!(i.cached_topics().contains(&topic));

        // Unchanged route: the cached Arc is kept.
        let again = i.refresh_route(&topic).await.unwrap();
        assert!(Arc::ptr_eq(&route, &again));
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_heartbeat_lists_us_until_unregistered() {
    within(120, "consumer heartbeat test", async {
        let broker = rmq_testkit::broker().await;
        let i = instance("hb-consumer").await;
        let topic = rmq_testkit::unique_name("hbc");
        let group = rmq_testkit::unique_name("GID_hbc");
        create_topic(&i, &topic, 2).await;
        i.route(&topic).await.unwrap();

        i.register_consumer(&group, TestConsumer::new(&group, &topic))
            .await
            .unwrap();
        let ids = i
            .get_consumer_id_list(&broker.broker_addr, &group)
            .await
            .unwrap();
        assert_eq!(ids, [i.client_id().to_owned()]);

        i.unregister_consumer(&group).await;
        poll_until(20, "consumer gone after unregister", || async {
            let ids = i
                .get_consumer_id_list(&broker.broker_addr, &group)
                .await
                .unwrap();
            !ids.iter().any(|id| id == i.client_id())
        })
        .await;

        // Registered again, then the instance shuts down: gone as well.
        i.register_consumer(&group, TestConsumer::new(&group, &topic))
            .await
            .unwrap();
        let ids = i
            .get_consumer_id_list(&broker.broker_addr, &group)
            .await
            .unwrap();
        assert!(ids.iter().any(|id| id == i.client_id()));
        let client_id = i.client_id().to_owned();
        i.release().await;
        assert!(i.is_shutdown());

        let observer = instance("hb-observer").await;
        poll_until(20, "consumer gone after shutdown", || async {
            let ids = observer
                .get_consumer_id_list(&broker.broker_addr, &group)
                .await
                .unwrap();
            !ids.contains(&client_id)
        })
        .await;
        observer.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_heartbeat_shows_the_connection_until_shutdown() {
    within(120, "producer heartbeat test", async {
        let broker = rmq_testkit::broker().await;
        let i = instance("hb-producer").await;
        let observer = instance("hb-pobserver").await;
        let topic = rmq_testkit::unique_name("hbp");
        let group = rmq_testkit::unique_name("PID_hbp");
        create_topic(&observer, &topic, 1).await;

        // Registered before any broker is known (like a producer's start):
        // the first route brings the broker, which triggers a heartbeat.
        i.register_producer(&group).await.unwrap();
        i.route(&topic).await.unwrap();
        let listed = |client_id: String| {
            let observer = observer.clone();
            let group = group.clone();
            let addr = broker.broker_addr.clone();
            async move {
                match observer.get_producer_connection_list(&addr, &group).await {
                    Ok(pc) => pc.contains_client(&client_id),
                    // "the producer group not exist"
                    Err(Error::Broker { .. }) => false,
                    Err(e) => panic!("producer connection list: {e}"),
                }
            }
        };
        let client_id = i.client_id().to_owned();
        poll_until(20, "producer listed", || listed(client_id.clone())).await;

        i.release().await;
        poll_until(20, "producer gone after shutdown", || async {
            !listed(client_id.clone()).await
        })
        .await;
        observer.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_member_notifies_the_first() {
    within(120, "notify test", async {
        let broker = rmq_testkit::broker().await;
        let first = instance("notify-a").await;
        let second = instance("notify-b").await;
        assert_ne!(first.client_id(), second.client_id());
        let topic = rmq_testkit::unique_name("notify");
        let group = rmq_testkit::unique_name("GID_notify");
        create_topic(&first, &topic, 2).await;
        first.route(&topic).await.unwrap();
        second.route(&topic).await.unwrap();

        let handle = TestConsumer::new(&group, &topic);
        first
            .register_consumer(&group, handle.clone())
            .await
            .unwrap();
        // The broker may also notify the first member about its own
        // arrival; let that one land before counting.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(3), handle.wait_past(0)).await;
        let seen = handle.count();

        second
            .register_consumer(&group, TestConsumer::new(&group, &topic))
            .await
            .unwrap();
        within(15, "NOTIFY_CONSUMER_IDS_CHANGED", handle.wait_past(seen)).await;

        let mut ids = first
            .get_consumer_id_list(&broker.broker_addr, &group)
            .await
            .unwrap();
        ids.sort();
        let mut want = vec![first.client_id().to_owned(), second.client_id().to_owned()];
        want.sort();
        assert_eq!(ids, want);

        // The second leaves: the first hears about it too.
        let seen = handle.count();
        second.release().await;
        within(15, "NOTIFY after leave", handle.wait_past(seen)).await;
        first.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_per_client_id() {
    within(60, "sharing test", async {
        let config = rmq_testkit::client::config("shared").await;
        let a = ClientInstance::get_or_start(config.clone()).unwrap();
        let b = ClientInstance::get_or_start(config).unwrap();
        assert_eq!(a.users(), 2);
        let group = rmq_testkit::unique_name("PID_shared");
        a.register_producer(&group).await.unwrap();
        assert!(matches!(
            b.register_producer(&group).await,
            Err(Error::DuplicateGroup { .. })
        ));
        a.release().await;
        assert!(!b.is_shutdown());
        b.release().await;
        assert!(b.is_shutdown());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_unregister_and_release_of_a_dropped_consumer() {
    within(120, "background unregister test", async {
        let broker = rmq_testkit::broker().await;
        let i = instance("bg-unreg").await;
        let topic = rmq_testkit::unique_name("bgu");
        let group = rmq_testkit::unique_name("GID_bgu");
        create_topic(&i, &topic, 1).await;
        i.route(&topic).await.unwrap();
        i.register_consumer(&group, TestConsumer::new(&group, &topic))
            .await
            .unwrap();
        let client_id = i.client_id().to_owned();

        // What a consumer's drop guard does: no await at the call.
        i.spawn_unregister_consumer_and_release(&group);
        poll_until(20, "instance released in the background", || async {
            i.is_shutdown()
        })
        .await;
        assert!(i.consumer(&group).is_none());

        let observer = instance("bg-unreg-observer").await;
        poll_until(20, "consumer gone after the background release", || async {
            let ids = observer
                .get_consumer_id_list(&broker.broker_addr, &group)
                .await
                .unwrap();
            !ids.contains(&client_id)
        })
        .await;
        observer.release().await;
    })
    .await;
}
