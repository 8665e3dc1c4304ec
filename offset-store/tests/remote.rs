//! The offset stores against the real broker (rmq-testkit).

use std::collections::HashMap;
use std::sync::Arc;

use rmq_client_core::{ClientConfig, ClientInstance};
use rmq_offset_store::{
    Error, LocalFileOffsetStore, OffsetStore, PersistMode, ReadOffsetType, RemoteBrokerOffsetStore,
};
use rmq_protocol::{MessageQueue, RequestCode};
use rmq_testkit::client::{TestConsumer, consumer_setup, poll_until, within};
use rmq_testkit::proxy::FaultProxy;

fn queue(topic: &str, id: i32) -> MessageQueue {
    // `consumer_setup` has started the broker, so this does not block.
    MessageQueue::new(topic, &rmq_testkit::ensure_broker().broker_name, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persisted_offset_is_read_by_a_fresh_store() {
    within(60, "persist + read", async {
        let (i, topic, group) = consumer_setup("os_rt", 2).await;
        let mq = queue(&topic, 0);
        let store = RemoteBrokerOffsetStore::new(i.clone(), &group);
        store.load().await.unwrap();
        store.update_offset(&mq, 42, true);
        store.update_offset(&mq, 41, true);
        store.persist(&mq, PersistMode::Sync).await.unwrap();

        assert_eq!(store.memory_offset(&mq), Some(42));
        let fresh = RemoteBrokerOffsetStore::new(i.clone(), &group);
        assert_eq!(
            fresh
                .read_offset(&mq, ReadOffsetType::ReadFromMemory)
                .await
                .unwrap(),
            None
        );
        assert_eq!(fresh.memory_offset(&mq), None);
        assert_eq!(
            fresh
                .read_offset(&mq, ReadOffsetType::MemoryFirstThenStore)
                .await
                .unwrap(),
            Some(42)
        );
        // The store read filled memory.
        assert_eq!(
            fresh.offset_table(Some(&topic)),
            HashMap::from([(mq.clone(), 42)])
        );

        // Direct update bypasses memory; ReadFromStore sees it and refreshes memory.
        fresh
            .update_consume_offset_to_broker(&mq, 50, PersistMode::Sync)
            .await
            .unwrap();
        assert_eq!(
            fresh
                .read_offset(&mq, ReadOffsetType::ReadFromMemory)
                .await
                .unwrap(),
            Some(42)
        );
        assert_eq!(
            fresh
                .read_offset(&mq, ReadOffsetType::ReadFromStore)
                .await
                .unwrap(),
            Some(50)
        );
        assert_eq!(
            fresh
                .read_offset(&mq, ReadOffsetType::ReadFromMemory)
                .await
                .unwrap(),
            Some(50)
        );

        // A frozen offset is not overwritten by a store read.
        fresh.update_and_freeze_offset(&mq, 7);
        assert_eq!(
            fresh
                .read_offset(&mq, ReadOffsetType::ReadFromStore)
                .await
                .unwrap(),
            Some(50)
        );
        assert_eq!(
            fresh
                .read_offset(&mq, ReadOffsetType::ReadFromMemory)
                .await
                .unwrap(),
            Some(7)
        );
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_group_reads_none() {
    within(60, "not found", async {
        let (i, topic, _group) = consumer_setup("os_nf", 1).await;
        let never = rmq_testkit::unique_name("GID_never");
        let store = RemoteBrokerOffsetStore::new(i.clone(), &never);
        let got = store
            .read_offset(&queue(&topic, 0), ReadOffsetType::MemoryFirstThenStore)
            .await
            .unwrap();
        // QUERY_NOT_FOUND on an empty queue (brokers before 5.x may answer 0).
        let broker = rmq_testkit::broker().await;
        if broker.version_at_least(5, 0) {
            assert_eq!(got, None);
        } else {
            assert!(matches!(got, None | Some(0)), "{got:?}");
        }
        if got.is_none() {
            assert!(
                store.offset_table(None).is_empty(),
                "not found: memory stays empty"
            );
        }
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persist_all_stores_held_queues_and_forgets_the_rest() {
    within(60, "persist_all", async {
        let (i, topic, group) = consumer_setup("os_all", 4).await;
        let mqs: Vec<MessageQueue> = (0..4).map(|q| queue(&topic, q)).collect();
        let store = RemoteBrokerOffsetStore::new(i.clone(), &group);
        for (n, mq) in (10..).zip(&mqs) {
            store.update_offset(mq, n, false);
        }
        // Hold queues 0..3 (oneway, as the periodic persist does); queue 3 is no longer held.
        let held = &mqs[..3];
        store.persist_all(held, PersistMode::Oneway).await.unwrap();
        assert_eq!(store.offset_table(None).len(), 3, "queue 3 forgotten");

        let fresh = RemoteBrokerOffsetStore::new(i.clone(), &group);
        poll_until(10, "oneway offsets stored", || async {
            let mut all = true;
            for (n, mq) in (10..).zip(held) {
                all &= fresh
                    .read_offset(mq, ReadOffsetType::ReadFromStore)
                    .await
                    .unwrap()
                    == Some(n);
            }
            all
        })
        .await;

        // Sync mode: stored once it returns.
        for mq in held {
            store.update_offset(mq, 100, true);
        }
        store.persist_all(held, PersistMode::Sync).await.unwrap();
        for mq in held {
            assert_eq!(
                fresh
                    .read_offset(mq, ReadOffsetType::ReadFromStore)
                    .await
                    .unwrap(),
                Some(100)
            );
        }
        // Queue 3 was never written.
        let q3 = fresh
            .read_offset(&mqs[3], ReadOffsetType::ReadFromStore)
            .await
            .unwrap();
        assert!(matches!(q3, None | Some(0)), "{q3:?}");

        // An empty list changes nothing (Java).
        store.persist_all(&[], PersistMode::Sync).await.unwrap();
        assert_eq!(store.offset_table(None).len(), 3);
        i.release().await;
    })
    .await;
}

/// The broker creates a group's offset map of a topic on the first commit without atomicity
/// (4.9.x `ConsumerOffsetManager.commitOffset`: a get, then a put of a new map), so first commits
/// of several queues of one topic racing on its threads used to lose all but one map: a
/// shutdown's persist then vanished. Every queue of many fresh groups' first persist is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_first_persist_of_many_queues_keeps_every_queue() {
    within(90, "first persists", async {
        let (i, topic, _) = consumer_setup("os_first", 16).await;
        let mqs: Vec<MessageQueue> = (0..16).map(|q| queue(&topic, q)).collect();
        for round in 0..12 {
            let group = rmq_testkit::unique_name("GID_os_first");
            // 5.x stores offsets only for a group that has heartbeated.
            i.register_consumer(&group, TestConsumer::new(&group, &topic))
                .await
                .expect("consumer registered");
            let store = RemoteBrokerOffsetStore::new(i.clone(), &group);
            for (n, mq) in (1..).zip(&mqs) {
                store.update_offset(mq, n, false);
            }
            store.persist_all(&mqs, PersistMode::Sync).await.unwrap();
            let fresh = RemoteBrokerOffsetStore::new(i.clone(), &group);
            for (n, mq) in (1..).zip(&mqs) {
                let stored = fresh
                    .read_offset(mq, ReadOffsetType::ReadFromStore)
                    .await
                    .unwrap();
                assert_eq!(
                    stored,
                    Some(n),
                    "round {round}: queue {} of {group}",
                    mq.queue_id
                );
            }
        }
        i.release().await;
    })
    .await;
}

/// A broker that moved, as a master does when a controller elects another:
/// the cached route names an address that is gone (the first proxy shut
/// down), the name server that still answers names another (the second
/// proxy). Offsets are persisted and read at the new address, not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_follow_a_broker_to_the_address_the_route_names_now() {
    within(60, "moved broker", async {
        let (setup, topic, group) = consumer_setup("os_mv", 1).await;
        let namesrv = &rmq_testkit::ensure_broker().namesrv_addr;
        let gone = FaultProxy::start(namesrv).await.expect("first proxy");
        let next = FaultProxy::start(namesrv).await.expect("second proxy");
        let config = ClientConfig::builder()
            .namesrv_addr(format!("{};{}", gone.namesrv_addr(), next.namesrv_addr()))
            .instance_name(rmq_testkit::unique_name("os_mv_c"))
            .build()
            .expect("config");
        let i = ClientInstance::get_or_start(config).expect("instance");
        i.route(&topic)
            .await
            .expect("route through the first proxy");
        let mq = queue(&topic, 0);
        let store = RemoteBrokerOffsetStore::new(i.clone(), &group);
        store.update_offset(&mq, 9, false);
        store
            .persist(&mq, PersistMode::Sync)
            .await
            .expect("persisted through the first proxy");
        assert_eq!(gone.request_count(RequestCode::UPDATE_CONSUMER_OFFSET), 1);

        gone.shutdown().await;
        store.update_offset(&mq, 12, false);
        store
            .persist(&mq, PersistMode::Sync)
            .await
            .expect("persisted at the address the route names now");
        assert_eq!(next.request_count(RequestCode::UPDATE_CONSUMER_OFFSET), 1);
        let fresh = RemoteBrokerOffsetStore::new(i.clone(), &group);
        assert_eq!(
            fresh
                .read_offset(&mq, ReadOffsetType::ReadFromStore)
                .await
                .expect("read"),
            Some(12)
        );
        i.release().await;
        next.shutdown().await;
        setup.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_broker_is_a_typed_error_and_partial_persists_report_it() {
    within(60, "unknown broker", async {
        let (i, topic, group) = consumer_setup("os_nb", 1).await;
        let good = queue(&topic, 0);
        let bad = MessageQueue::new(&topic, "no-such-broker", 0);
        let store = RemoteBrokerOffsetStore::new(i.clone(), &group);

        let err = store.read_offset(&bad, ReadOffsetType::ReadFromStore).await.unwrap_err();
        assert!(
            matches!(&err, Error::BrokerNotFound { broker_name, .. } if broker_name == "no-such-broker"),
            "{err:?}"
        );
        assert!(err.is_retryable());

        store.update_offset(&good, 5, false);
        store.update_offset(&bad, 6, false);
        let err = store
            .persist_all(&[good.clone(), bad.clone()], PersistMode::Sync)
            .await
            .unwrap_err();
        match &err {
            Error::Persist { failed, total, source } => {
                assert_eq!(failed, std::slice::from_ref(&bad));
                assert_eq!(*total, 2);
                assert!(matches!(**source, Error::BrokerNotFound { .. }), "{source:?}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(store.read_offset(&good, ReadOffsetType::ReadFromStore).await.unwrap(), Some(5));
        assert_eq!(store.offset_table(None).len(), 2, "failed offsets stay in memory");
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcasting_store_survives_recreation() {
    within(60, "local store", async {
        let (i, topic, group) = consumer_setup("os_bc", 4).await;
        let dir = tempfile::tempdir().unwrap();
        // The queues come from the real route, as a broadcasting consumer takes them.
        let mqs = i.route(&topic).await.unwrap().subscribe_queues().to_vec();
        assert_eq!(mqs.len(), 4);
        let store: Arc<dyn OffsetStore> =
            Arc::new(LocalFileOffsetStore::with_root(dir.path(), i.client_id(), &group).unwrap());
        store.load().await.unwrap();
        for (n, mq) in (1..).zip(&mqs) {
            store.update_offset(mq, n, true);
        }
        store.persist_all(&mqs, PersistMode::Oneway).await.unwrap();
        drop(store);

        let again = LocalFileOffsetStore::with_root(dir.path(), i.client_id(), &group).unwrap();
        assert!(
            again
                .path()
                .starts_with(dir.path().join(i.client_id()).join(&group))
        );
        again.load().await.unwrap();
        let expected: HashMap<MessageQueue, i64> =
            (1..).zip(&mqs).map(|(n, mq)| (mq.clone(), n)).collect();
        assert_eq!(again.offset_table(Some(&topic)), expected);
        i.release().await;
    })
    .await;
}
