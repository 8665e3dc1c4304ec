//! The admin calls against the real broker: cluster info, topic list,
//! runtime info, topic and consume stats, offset reset, message view and
//! query, topic and group deletion.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use rmq_client_core::now_ms;
use rmq_client_core::{ClientInstance, Error, SendResult};
use rmq_protocol::header::{QueryMessageRequestHeader, ResetOffsetRequestHeader};
use rmq_protocol::message::{encode_properties, parse_offset_msg_id, property};
use rmq_protocol::{MessageQueue, ResponseCode};
use rmq_testkit::client::{TestConsumer, create_topic, instance, poll_until, send_header, within};

/// Sends `body` to queue `queue_id` of `topic` on the test broker, with a
/// unique key and the business key `key`.
async fn send(i: &ClientInstance, topic: &str, queue_id: i32, uniq: &str, key: &str) -> SendResult {
    let broker = rmq_testkit::broker().await;
    let mut header = send_header(topic, queue_id, uniq, &broker.broker_name);
    let mut props = HashMap::new();
    props.insert(property::UNIQ_KEY.to_owned(), uniq.to_owned());
    props.insert(property::KEYS.to_owned(), key.to_owned());
    header.properties = Some(encode_properties(&props));
    i.send_message(
        &broker.broker_addr,
        &broker.broker_name,
        header,
        Bytes::from(format!("body of {uniq}")),
        Duration::from_secs(3),
    )
    .await
    .expect("sent")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_info_topic_list_and_runtime_info() {
    within(60, "cluster test", async {
        let broker = rmq_testkit::broker().await;
        let i = instance("admin-cluster").await;
        let topic = rmq_testkit::unique_name("admin_list");
        create_topic(&i, &topic, 1).await;

        let cluster = i.get_broker_cluster_info().await.unwrap();
        let data = &cluster.broker_addr_table[&broker.broker_name];
        assert_eq!(data.master_addr(), Some(broker.broker_addr.as_str()));
        assert!(cluster.cluster_addr_table[&broker.cluster].contains(&broker.broker_name));

        let topics = i.get_all_topic_list().await.unwrap();
        assert!(topics.topic_list.contains(&topic), "{topic} not listed");

        let info = i
            .get_broker_runtime_info(&broker.broker_addr)
            .await
            .unwrap();
        let version = &info.table["brokerVersionDesc"];
        assert!(version.starts_with('V'), "{version}");
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_stats_consume_stats_and_reset() {
    within(90, "stats test", async {
        let broker = rmq_testkit::broker().await;
        let addr = broker.broker_addr.as_str();
        let i = instance("admin-stats").await;
        let topic = rmq_testkit::unique_name("admin_stats");
        let group = rmq_testkit::unique_name("GID_admin_stats");
        create_topic(&i, &topic, 2).await;
        for n in 0..3 {
            send(&i, &topic, 0, &format!("UNIQ-stats-{n}"), "k").await;
        }

        // 4.9.x dispatches to the consume queue asynchronously: wait for it.
        poll_until(10, "three messages dispatched", || async {
            i.get_max_offset(addr, &topic, 0, None).await.unwrap() == 3
        })
        .await;
        let stats = i.get_topic_stats_info(addr, &topic).await.unwrap();
        let q0 = &stats.offset_table[&MessageQueue::new(&topic, &broker.broker_name, 0)];
        let q1 = &stats.offset_table[&MessageQueue::new(&topic, &broker.broker_name, 1)];
        assert_eq!((q0.min_offset, q0.max_offset), (0, 3));
        assert!(q0.last_update_timestamp > 0);
        assert_eq!(
            (q1.min_offset, q1.max_offset, q1.last_update_timestamp),
            (0, 0, 0)
        );
        let missing = i
            .get_topic_stats_info(addr, "no_such_topic_admin")
            .await
            .unwrap_err();
        assert_eq!(missing.response_code(), Some(ResponseCode::TOPIC_NOT_EXIST));

        // A consumer's heartbeat (to the brokers of the cached routes) creates
        // the group; then commit queue 0 at 1 and queue 1 at 0 (4.9.x resets
        // only groups with an offset on every queue).
        i.route(&topic).await.unwrap();
        i.register_consumer(&group, TestConsumer::new(&group, &topic))
            .await
            .unwrap();
        for (queue_id, offset) in [(0, 1), (1, 0)] {
            let header = rmq_protocol::header::UpdateConsumerOffsetRequestHeader {
                consumer_group: group.clone(),
                topic: topic.clone(),
                queue_id,
                commit_offset: offset,
                broker_name: None,
            };
            i.update_consumer_offset(addr, header).await.unwrap();
        }
        let consumed = i
            .get_consume_stats(addr, &group, Some(&topic))
            .await
            .unwrap();
        let w = &consumed.offset_table[&MessageQueue::new(&topic, &broker.broker_name, 0)];
        assert_eq!((w.broker_offset, w.consumer_offset, w.lag()), (3, 1, 2));
        let unknown = i
            .get_consume_stats(addr, &rmq_testkit::unique_name("GID_none"), None)
            .await
            .unwrap();
        assert!(unknown.offset_table.is_empty());

        // Reset to the max offsets (timestamp -1) while the consumer is online:
        // 5.x stores them itself, 4.9.x tells the consumer; both answer them.
        let reset = |topic: &str| ResetOffsetRequestHeader {
            topic: topic.to_owned(),
            group: group.clone(),
            timestamp: -1,
            is_force: true,
            queue_id: None,
            offset: None,
        };
        let applied = i
            .invoke_broker_to_reset_offset(addr, reset(&topic))
            .await
            .unwrap();
        let q0_mq = MessageQueue::new(&topic, &broker.broker_name, 0);
        assert!(applied.contains(&(q0_mq.clone(), 3)), "{applied:?}");
        if broker.major_version() == Some(5) {
            let after = i
                .get_consume_stats(addr, &group, Some(&topic))
                .await
                .unwrap();
            assert_eq!(after.offset_table[&q0_mq].consumer_offset, 3);
        }

        // Without online consumers 4.9.x refuses (the client then stores the
        // offsets itself); 5.x resets server-side.
        i.unregister_consumer(&group).await;
        let offline = i.invoke_broker_to_reset_offset(addr, reset(&topic)).await;
        if broker.major_version() == Some(5) {
            offline.unwrap();
        } else {
            assert_eq!(
                offline.unwrap_err().response_code(),
                Some(ResponseCode::CONSUMER_NOT_ONLINE)
            );
        }
        i.delete_subscription_group(addr, &group, true)
            .await
            .unwrap();
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn view_and_query_messages() {
    within(90, "query test", async {
        let broker = rmq_testkit::broker().await;
        let i = instance("admin-query").await;
        let topic = rmq_testkit::unique_name("admin_query");
        create_topic(&i, &topic, 1).await;
        let key = rmq_testkit::unique_name("order");
        let uniq = format!("UNIQ{:028}", now_ms());
        let sent = send(&i, &topic, 0, &uniq, &key).await;

        let (host, offset) = parse_offset_msg_id(&sent.offset_msg_id).unwrap();
        let viewed = i
            .view_message(&host.to_string(), offset, Some(&topic))
            .await
            .unwrap();
        assert_eq!(viewed.msg_id, uniq);
        assert_eq!(viewed.message.body, Bytes::from(format!("body of {uniq}")));
        let nothing = i
            .view_message(&host.to_string(), offset + 1_000_000_000, None)
            .await
            .unwrap_err();
        assert!(matches!(nothing, Error::Broker { .. }), "{nothing:?}");

        let query = |k: &str| QueryMessageRequestHeader {
            topic: topic.clone(),
            key: k.to_owned(),
            max_num: 32,
            begin_timestamp: 0,
            end_timestamp: i64::MAX,
        };
        // The index is written after the message is dispatched: no event to
        // await, so poll.
        poll_until(20, "message indexed by key", || async {
            let found = i
                .query_message(&broker.broker_addr, query(&key), false)
                .await
                .unwrap();
            found.iter().any(|m| m.msg_id == uniq)
        })
        .await;
        let by_id = i
            .query_message(&broker.broker_addr, query(&uniq), true)
            .await
            .unwrap();
        assert!(
            by_id.iter().any(|m| m.message.keys().any(|k| k == key)),
            "{by_id:?}"
        );
        let none = i
            .query_message(&broker.broker_addr, query("no-such-key-anywhere"), false)
            .await
            .unwrap();
        assert!(none.is_empty());
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_topic_everywhere() {
    within(60, "delete test", async {
        let broker = rmq_testkit::broker().await;
        let i = instance("admin-delete").await;
        let topic = rmq_testkit::unique_name("admin_delete");
        create_topic(&i, &topic, 1).await;
        i.delete_topic_in_broker(&broker.broker_addr, &topic)
            .await
            .unwrap();
        i.delete_topic_in_namesrv(&topic, None).await.unwrap();
        let gone = i.refresh_route(&topic).await.unwrap_err();
        assert!(matches!(gone, Error::RouteNotFound { .. }), "{gone:?}");
        let listed = i.get_all_topic_list().await.unwrap();
        assert!(!listed.topic_list.contains(&topic));
        i.release().await;
    })
    .await;
}
