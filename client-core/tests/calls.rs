//! The typed broker calls against the real broker: send, pull, offsets,
//! locks, create topic, consumer list.

use std::time::Duration;

use bytes::Bytes;
use rmq_client_core::{ClientInstance, PullStatus, SendStatus, now_ms};
use rmq_protocol::header::{
    BoundaryType, CreateTopicRequestHeader, PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::message::property;
use rmq_protocol::{MessageQueue, ResponseCode};
use rmq_testkit::client::{create_topic, instance, poll_until, send_header, within};

fn pull_header(group: &str, topic: &str, queue_id: i32, offset: i64) -> PullMessageRequestHeader {
    rmq_testkit::raw::pull_header(group, topic, queue_id, offset, 32)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_then_pull_and_queue_offsets() {
    within(120, "send/pull test", async {
        let broker = rmq_testkit::broker().await;
        let addr = broker.broker_addr.as_str();
        let i = instance("calls-sendpull").await;
        let topic = rmq_testkit::unique_name("sendpull");
        let group = rmq_testkit::unique_name("GID_sendpull");
        create_topic(&i, &topic, 2).await;

        assert_eq!(i.get_max_offset(addr, &topic, 0, None).await.unwrap(), 0);
        assert_eq!(i.get_min_offset(addr, &topic, 0, None).await.unwrap(), 0);
        let before = now_ms();

        for n in 0..3 {
            let uniq = format!("UNIQ{n:028}");
            let header = send_header(&topic, 0, &uniq, &broker.broker_name);
            let r = i
                .send_message(
                    addr,
                    &broker.broker_name,
                    header,
                    Bytes::from(format!("body-{n}")),
                    Duration::from_secs(3),
                )
                .await
                .unwrap();
            assert_eq!(r.status, SendStatus::SendOk);
            assert_eq!(r.msg_id, uniq);
            assert_eq!(r.queue_offset, n);
            assert_eq!(
                r.message_queue,
                MessageQueue::new(&topic, &broker.broker_name, 0)
            );
            assert_eq!(r.offset_msg_id.len(), 32, "{}", r.offset_msg_id);
        }
        let oneway = send_header(&topic, 1, "UNIQ-oneway", &broker.broker_name);
        i.send_message_oneway(
            addr,
            oneway,
            Bytes::from_static(b"ow"),
            Duration::from_secs(3),
        )
        .await
        .unwrap();

        // The consume queue is written asynchronously after the store: wait
        // for it, no fixed delay.
        poll_until(10, "three messages in queue 0", || async {
            i.get_max_offset(addr, &topic, 0, None).await.unwrap() == 3
        })
        .await;
        poll_until(10, "oneway message stored", || async {
            i.get_max_offset(addr, &topic, 1, None).await.unwrap() == 1
        })
        .await;
        assert_eq!(
            i.search_offset(
                addr,
                &topic,
                0,
                before.saturating_sub(60_000),
                BoundaryType::Lower
            )
            .await
            .unwrap(),
            0
        );
        let late = i
            .search_offset(addr, &topic, 0, now_ms() + 3_600_000, BoundaryType::Upper)
            .await
            .unwrap();
        assert!((0..=3).contains(&late), "{late}");

        let mq = MessageQueue::new(&topic, &broker.broker_name, 0);
        let found = i
            .pull_message(addr, &pull_header(&group, &topic, 0, 0), None)
            .await
            .unwrap();
        assert_eq!(found.status, PullStatus::Found);
        assert_eq!(found.next_begin_offset, 3);
        assert_eq!(found.max_offset, 3);
        let msgs = found.decode_messages(&mq).unwrap();
        let bodies: Vec<&[u8]> = msgs.iter().map(|m| &m.body[..]).collect();
        assert_eq!(bodies, [&b"body-0"[..], b"body-1", b"body-2"]);
        for (n, m) in msgs.iter().enumerate() {
            assert_eq!(m.msg_id, format!("UNIQ{n:028}"));
            assert_eq!(m.broker_name, broker.broker_name);
            assert_eq!(m.tags(), Some("t1"));
            assert_eq!(m.property(property::MAX_OFFSET), Some("3"));
        }

        let none = i
            .pull_message(addr, &pull_header(&group, &topic, 0, 3), None)
            .await
            .unwrap();
        assert_eq!(none.status, PullStatus::NoNewMsg);
        assert!(none.decode_messages(&mq).unwrap().is_empty());
        let moved = i
            .pull_message(addr, &pull_header(&group, &topic, 0, 100), None)
            .await
            .unwrap();
        assert_eq!(moved.status, PullStatus::OffsetIllegal);
        assert_eq!(moved.next_begin_offset, 3);
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_offset_round_trip() {
    within(60, "offset test", async {
        let broker = rmq_testkit::broker().await;
        let addr = broker.broker_addr.as_str();
        let i = instance("calls-offset").await;
        let topic = rmq_testkit::unique_name("offset");
        let group = rmq_testkit::unique_name("GID_offset");
        create_topic(&i, &topic, 2).await;
        // 5.x brokers store offsets only for an existing subscription group;
        // a consumer's heartbeat creates it (autoCreateSubscriptionGroup).
        i.route(&topic).await.unwrap();
        i.register_consumer(
            &group,
            rmq_testkit::client::TestConsumer::new(&group, &topic),
        )
        .await
        .unwrap();
        let query = |queue_id| QueryConsumerOffsetRequestHeader {
            consumer_group: group.clone(),
            topic: topic.clone(),
            queue_id,
            set_zero_if_not_found: Some(false),
            broker_name: None,
        };
        // Nothing stored: QUERY_NOT_FOUND (None); brokers before 5.x ignore
        // setZeroIfNotFound and answer 0 for an empty queue.
        let initial = i.query_consumer_offset(addr, query(0)).await.unwrap();
        assert!(matches!(initial, None | Some(0)), "{initial:?}");

        let update = |queue_id, offset| UpdateConsumerOffsetRequestHeader {
            consumer_group: group.clone(),
            topic: topic.clone(),
            queue_id,
            commit_offset: offset,
            broker_name: None,
        };
        i.update_consumer_offset(addr, update(0, 2)).await.unwrap();
        assert_eq!(
            i.query_consumer_offset(addr, query(0)).await.unwrap(),
            Some(2)
        );

        i.update_consumer_offset_oneway(addr, update(1, 1))
            .await
            .unwrap();
        poll_until(10, "oneway offset stored", || async {
            i.query_consumer_offset(addr, query(1)).await.unwrap() == Some(1)
        })
        .await;
        i.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_and_unlock_queues() {
    within(60, "lock test", async {
        let broker = rmq_testkit::broker().await;
        let addr = broker.broker_addr.as_str();
        let a = instance("calls-lock-a").await;
        let b = instance("calls-lock-b").await;
        let topic = rmq_testkit::unique_name("lock");
        let group = rmq_testkit::unique_name("GID_lock");
        create_topic(&a, &topic, 2).await;
        let mqs: Vec<MessageQueue> = (0..2)
            .map(|q| MessageQueue::new(&topic, &broker.broker_name, q))
            .collect();

        let locked = a.lock_batch_mq(addr, &group, &mqs).await.unwrap();
        assert_eq!(locked, mqs);
        // Held by a: b gets nothing.
        assert!(
            b.lock_batch_mq(addr, &group, &mqs)
                .await
                .unwrap()
                .is_empty()
        );

        a.unlock_batch_mq(addr, &group, &mqs[..1], false)
            .await
            .unwrap();
        let locked = b.lock_batch_mq(addr, &group, &mqs).await.unwrap();
        assert_eq!(locked, mqs[..1]);

        b.unlock_batch_mq(addr, &group, &mqs, true).await.unwrap();
        a.unlock_batch_mq(addr, &group, &mqs, false).await.unwrap();
        poll_until(10, "oneway unlock applied", || async {
            a.lock_batch_mq(addr, &group, &mqs).await.unwrap() == mqs
        })
        .await;
        a.release().await;
        b.release().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topic_and_errors() {
    within(60, "create topic test", async {
        let broker = rmq_testkit::broker().await;
        let addr = broker.broker_addr.as_str();
        let i: ClientInstance = instance("calls-create").await;
        let topic = rmq_testkit::unique_name("create");
        i.create_topic(addr, CreateTopicRequestHeader::new(&topic, 3))
            .await
            .unwrap();
        poll_until(15, "route of the created topic", || async {
            i.refresh_route(&topic).await.is_ok()
        })
        .await;
        let route = i.route(&topic).await.unwrap();
        assert_eq!(route.publish_queues().len(), 3);

        // No consumer in a group: an empty list, not an error.
        let group = rmq_testkit::unique_name("GID_empty");
        assert!(
            i.get_consumer_id_list(addr, &group)
                .await
                .unwrap()
                .is_empty()
        );

        // A broker error carries the code and remark.
        let err = i
            .create_topic(addr, CreateTopicRequestHeader::new("bad topic!", 8))
            .await
            .unwrap_err();
        assert!(err.response_code().is_some(), "{err}");
        assert_ne!(err.response_code(), Some(ResponseCode::SUCCESS));
        i.release().await;
    })
    .await;
}
