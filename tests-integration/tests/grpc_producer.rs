//! The producer over the RocketMQ 5.x proxy (`ProducerBuilder::endpoint`):
//! every kind of send is read back by the remoting pull consumer of the same
//! broker with every field equal. The proxy is `RMQ_PROXY_ENDPOINT`
//! (`RMQ_PROXY=1 scripts/rocketmq-local.sh start`); 4.9.x has no proxy, so
//! these are `#[ignore]`d and `scripts/test.sh` runs them on 5.x only.

use std::time::Duration;

use rmq_consumer_pull::{PullConsumer, PullStatus};
use rmq_producer::{Message, MessageExt, SendResult, UnsentExt};
use rmq_protocol::message::property;
use rmq_testkit::client::within;
use rmq_testkit::{broker, unique_name};

use rmq_testkit::grpc::{fielded_message, grpc_producer, typed_topic, user_properties};

async fn pull_consumer() -> PullConsumer {
    PullConsumer::builder()
        .group(unique_name("grpc_check"))
        .namesrv_addr(broker().await.namesrv_addr.clone())
        .start()
        .await
        .expect("pull consumer starts")
}

/// The message `msg_id` stored in some queue of `topic` at `offset` or
/// later (the proxy picks the queue and does not say which), polled: the
/// broker offers no event for "stored in one of these queues".
async fn find(pull: &PullConsumer, topic: &str, offset: i64, msg_id: &str) -> MessageExt {
    let queues = pull.fetch_subscribe_queues(topic).await.expect("queues");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        for q in &queues {
            let r = pull.pull(q, "*", offset, 32).await.expect("pull");
            if r.status == PullStatus::Found {
                if let Some(m) = r
                    .messages
                    .into_iter()
                    .find(|m| m.message.unique_key() == Some(msg_id))
                {
                    return m;
                }
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{msg_id} not stored in {topic} after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn assert_same(sent: &Message, result: &SendResult, got: &MessageExt) {
    assert_eq!(got.message.topic, sent.topic);
    assert_eq!(got.message.body, sent.body);
    assert_eq!(got.message.tags(), sent.tags());
    assert_eq!(
        got.message.keys().collect::<Vec<_>>(),
        sent.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        user_properties(&got.message.properties),
        user_properties(&sent.properties)
    );
    assert_eq!(
        got.message.unique_key(),
        Some(result.msg_id.as_str()),
        "UNIQ_KEY is the gRPC message id"
    );
    assert_eq!(result.message_queue.topic, sent.topic);
    let age = rmq_client_core::now_ms() - got.born_timestamp;
    assert!(
        (0..60_000).contains(&age),
        "born timestamp {} is {age} ms old",
        got.born_timestamp
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn sync_async_and_batch_sends_arrive_with_every_field() {
    within(90, "normal sends", async {
        let topic = typed_topic("GrpcNormal", "NORMAL").await;
        let producer = grpc_producer("grpc_producer").await;
        assert!(producer.is_grpc() && producer.client_instance().is_none());
        let pull = pull_consumer().await;

        let sent = fielded_message(&topic, "gRPC body", 0);
        let result = producer.send(sent.clone()).await.expect("send");
        assert!(!result.msg_id.is_empty());
        let got = find(&pull, &topic, result.queue_offset, &result.msg_id).await;
        assert_eq!(got.queue_offset, result.queue_offset);
        assert_same(&sent, &result, &got);

        let (tx, rx) = tokio::sync::oneshot::channel();
        let sent_async = fielded_message(&topic, "gRPC body", 1);
        producer.send_with_callback(sent_async.clone(), move |r| {
            let _ = tx.send(r);
        });
        let result = rx.await.expect("callback called").expect("async send");
        let got = find(&pull, &topic, result.queue_offset, &result.msg_id).await;
        assert_same(&sent_async, &result, &got);

        // A batch: one request, every message stored.
        let batch: Vec<_> = (10..13)
            .map(|i| fielded_message(&topic, "gRPC body", i))
            .collect();
        let result = producer.send_batch(batch.clone()).await.expect("batch");
        let ids: Vec<_> = result.msg_id.split(',').map(str::to_owned).collect();
        assert_eq!(ids.len(), 3, "{result:?}");
        for (sent, id) in batch.iter().zip(&ids) {
            let got = find(&pull, &topic, 0, id).await;
            assert_eq!(got.message.body, sent.body);
            assert_eq!(got.message.tags(), sent.tags());
        }

        // The proxy picks queues: a send aimed at one is refused, typed.
        let queues = producer.publish_queues(&topic).await.expect("queues");
        assert_eq!(queues.len(), 4);
        let e = producer
            .send_to_queue(fielded_message(&topic, "gRPC body", 2), &queues[3])
            .await
            .unwrap_err();
        assert!(
            matches!(
                e.downcast_ref::<rmq_producer::Error>()
                    .map(rmq_producer::Error::inner),
                Some(rmq_producer::Error::TransportUnsupported(_))
            ),
            "{e:?}"
        );

        // A topic the proxy does not know: a typed error, the message handed back.
        let e = producer
            .send(Message::new(unique_name("GrpcMissing"), "x"))
            .await
            .unwrap_err();
        assert!(!e.is_retryable(), "{e:?}");
        assert!(e.into_message().is_some());

        // A delay level cannot go through the proxy: refused before sending.
        let e = producer
            .send(fielded_message(&topic, "gRPC body", 3).with_delay_level(2))
            .await
            .unwrap_err();
        assert!(format!("{e:#?}").contains("NotOverGrpc"), "{e:#?}");

        producer.shutdown().await.expect("producer shutdown");
        pull.shutdown().await.expect("pull shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn fifo_message_group_arrives_in_order_as_sharding_key() {
    within(90, "FIFO sends", async {
        let topic = typed_topic("GrpcFifo", "FIFO").await;
        let producer = grpc_producer("grpc_producer").await;
        let pull = pull_consumer().await;
        let mut results = Vec::new();
        for i in 0..10 {
            let msg = fielded_message(&topic, "gRPC body", i)
                .with_property(property::SHARDING_KEY, "order-7");
            results.push((msg.clone(), producer.send(msg).await.expect("FIFO send")));
        }
        let mut queue = None;
        for (i, (sent, result)) in results.iter().enumerate() {
            if i > 0 {
                assert_eq!(
                    result.queue_offset,
                    results[i - 1].1.queue_offset + 1,
                    "in order"
                );
            }
            let got = find(&pull, &topic, result.queue_offset, &result.msg_id).await;
            assert_eq!(got.queue_offset, result.queue_offset);
            assert_eq!(
                *queue.get_or_insert(got.queue_id),
                got.queue_id,
                "one group, one queue"
            );
            assert_same(sent, result, &got);
            assert_eq!(
                got.message.property(property::SHARDING_KEY),
                Some("order-7")
            );
        }
        producer.shutdown().await.expect("producer shutdown");
        pull.shutdown().await.expect("pull shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn delivery_time_holds_the_message_until_then() {
    within(90, "delayed send", async {
        let topic = typed_topic("GrpcDelay", "DELAY").await;
        let producer = grpc_producer("grpc_producer").await;
        let pull = pull_consumer().await;
        let deliver_at = rmq_client_core::now_ms() + 3_000;
        let sent = fielded_message(&topic, "gRPC body", 0)
            .with_property(property::TIMER_DELIVER_MS, deliver_at.to_string());
        let result = producer.send(sent.clone()).await.expect("delayed send");
        // The offset answered is the timer topic's: read the topic's queue from its start.
        let got = find(&pull, &topic, 0, &result.msg_id).await;
        assert_same(&sent, &result, &got);
        assert_eq!(
            got.message.property(property::TIMER_DELIVER_MS),
            Some(deliver_at.to_string().as_str())
        );
        assert!(
            got.store_timestamp >= deliver_at - 1_000,
            "stored at {} for delivery at {deliver_at}",
            got.store_timestamp
        );
        producer.shutdown().await.expect("producer shutdown");
        pull.shutdown().await.expect("pull shutdown");
    })
    .await;
}
