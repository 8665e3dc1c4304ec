//! The rebalancer against the real broker (rmq-testkit): two clients of one
//! group split a topic's queues.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmq_client_core::ClientInstance;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::MessageModel;
use rmq_rebalance::{AllocateAveragely, AllocateStrategy, Rebalancer, sort_consumer_ids};
use rmq_testkit::client::{TestConsumer, create_topic, instance, poll_until, within};

/// Registers a consumer of `topic` in `group`. The route comes first (as a
/// consumer's start does): the registration heartbeat goes to the brokers
/// of the cached routes, and a fresh instance has none.
async fn register(instance: &ClientInstance, group: &str, topic: &str) {
    instance.route(topic).await.expect("route");
    let handle = TestConsumer::new(group, topic);
    instance
        .register_consumer(group, handle)
        .await
        .expect("consumer registered");
}

/// Waits until the broker lists exactly `expected` as the group's consumers.
async fn wait_for_consumers(instance: &ClientInstance, group: &str, expected: &[&str]) {
    let broker = rmq_testkit::broker().await;
    let mut want: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    sort_consumer_ids(&mut want);
    poll_until(15, "consumer list", || async {
        let mut ids = instance
            .get_consumer_id_list(&broker.broker_addr, group)
            .await
            .unwrap_or_default();
        sort_consumer_ids(&mut ids);
        ids == want
    })
    .await;
}

fn clustering(instance: &ClientInstance, group: &str) -> Rebalancer {
    Rebalancer::new(
        instance.clone(),
        group,
        MessageModel::Clustering,
        Arc::new(AllocateAveragely),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_split_an_eight_queue_topic() {
    within(90, "split", async {
        let a = instance("rb_a").await;
        let b = instance("rb_b").await;
        assert_ne!(a.client_id(), b.client_id());
        let topic = rmq_testkit::unique_name("rb_t");
        let group = rmq_testkit::unique_name("GID_rb");
        create_topic(&a, &topic, 8).await;
        register(&a, &group, &topic).await;
        register(&b, &group, &topic).await;
        wait_for_consumers(&a, &group, &[a.client_id(), b.client_id()]).await;

        let ra = clustering(&a, &group);
        let rb = clustering(&b, &group);
        let mine_a = ra.allocate(&topic).await.unwrap().expect("topic allocated");
        let mine_b = rb.allocate(&topic).await.unwrap().expect("topic allocated");
        assert_eq!(mine_a.len(), 4, "{mine_a:?}");
        assert_eq!(mine_b.len(), 4, "{mine_b:?}");
        let set_a: BTreeSet<&MessageQueue> = mine_a.iter().collect();
        let set_b: BTreeSet<&MessageQueue> = mine_b.iter().collect();
        assert!(set_a.is_disjoint(&set_b), "{mine_a:?} vs {mine_b:?}");
        let all = a.route(&topic).await.unwrap().subscribe_queues().to_vec();
        assert_eq!(all.len(), 8);
        let union: Vec<MessageQueue> = set_a.union(&set_b).map(|&mq| mq.clone()).collect();
        assert_eq!(union, all);

        // Exactly the Java averagely result for the sorted ids.
        let mut cids = vec![a.client_id().to_owned(), b.client_id().to_owned()];
        sort_consumer_ids(&mut cids);
        let expected_a = AllocateAveragely
            .allocate(&group, a.client_id(), &all, &cids)
            .unwrap();
        assert_eq!(mine_a, expected_a);

        // The diff against what `a` holds: first everything is new, then nothing changes.
        let first = ra.rebalance(&topic, []).await.unwrap().unwrap();
        assert_eq!(first.added, mine_a);
        assert!(first.removed.is_empty());
        let other_topic = MessageQueue::new("other", "broker-x", 0);
        let held: Vec<MessageQueue> = mine_a.iter().cloned().chain([other_topic]).collect();
        let again = ra.rebalance(&topic, &held).await.unwrap().unwrap();
        assert!(!again.is_changed(), "{again:?}");
        assert_eq!(
            again.unchanged, mine_a,
            "queues of other topics are ignored"
        );

        // Broadcasting: every queue, no consumer list needed.
        let broadcast = Rebalancer::new(
            a.clone(),
            &group,
            MessageModel::Broadcasting,
            Arc::new(AllocateAveragely),
        );
        assert_eq!(broadcast.allocate(&topic).await.unwrap(), Some(all.clone()));

        // `b` leaves: `a` takes every queue; the diff adds b's former queues.
        b.unregister_consumer(&group).await;
        wait_for_consumers(&a, &group, &[a.client_id()]).await;
        let after = ra.rebalance(&topic, &mine_a).await.unwrap().unwrap();
        assert_eq!(after.added, mine_b);
        assert!(after.removed.is_empty());
        assert_eq!(after.assigned(), all);

        a.release().await;
        b.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_without_route_or_consumers_are_skipped() {
    within(60, "skips", async {
        let a = instance("rb_skip").await;
        let topic = rmq_testkit::unique_name("rb_skip_t");
        let group = rmq_testkit::unique_name("GID_rb_skip");
        create_topic(&a, &topic, 2).await;
        let r = clustering(&a, &group);

        // No consumer of the group is known to the broker.
        assert_eq!(r.allocate(&topic).await.unwrap(), None);
        assert!(r.rebalance(&topic, []).await.unwrap().is_none());
        // No route: an unknown topic and a retry topic that was never used.
        let missing = rmq_testkit::unique_name("rb_missing");
        assert_eq!(r.allocate(&missing).await.unwrap(), None);
        assert_eq!(r.allocate(&format!("%RETRY%{group}")).await.unwrap(), None);

        // Once registered, the topic is allocated: all queues to the only member.
        register(&a, &group, &topic).await;
        wait_for_consumers(&a, &group, &[a.client_id()]).await;
        let mine = r.allocate(&topic).await.unwrap().unwrap();
        assert_eq!(mine, a.route(&topic).await.unwrap().subscribe_queues());
        a.release().await;
    })
    .await;
}
