//! The simple consumer over the RocketMQ 5.x proxy
//! (`SimpleConsumerBuilder::endpoint`): every producer kind (gRPC and
//! remoting; normal, FIFO, delayed) received with every field equal; a
//! gRPC-produced message consumed by the remoting push consumer; not acked
//! → delivered again after the invisible time; FIFO message groups in order
//! across three consumers. The proxy is `RMQ_PROXY_ENDPOINT`; 4.9.x has no
//! proxy, so these are `#[ignore]`d and `scripts/test.sh` runs them on 5.x.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use futures::StreamExt;
use rmq_consumer_pull::SimpleConsumer;
use rmq_consumer_push::{ConsumeFrom, PushConsumer};
use rmq_producer::{Message, MessageExt};
use rmq_protocol::message::property;
use rmq_testkit::client::within;
use rmq_testkit::grpc::{
    INVISIBLE, endpoint, fielded_message, grpc_producer, orderly_group, receive_ids,
    remoting_producer, typed_topic, user_properties,
};
use rmq_testkit::{broker, unique_name};

async fn grpc_consumer(group: &str, topic: &str) -> SimpleConsumer {
    SimpleConsumer::builder()
        .group(group)
        .endpoint(endpoint())
        .subscribe(topic, "*")
        .await_duration(Duration::from_secs(5))
        .start()
        .await
        .expect("gRPC simple consumer starts")
}

fn assert_same(sent: &Message, got: &MessageExt) {
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
    assert_eq!(got.reconsume_times, 0);
    let age = rmq_client_core::now_ms() - got.born_timestamp;
    assert!(
        (0..60_000).contains(&age),
        "born timestamp {} is {age} ms old",
        got.born_timestamp
    );
    assert!(got.queue_offset >= 0 && got.queue_id >= 0, "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn every_producer_kind_arrives_with_every_field() {
    within(120, "producer kinds", async {
        let normal = typed_topic("GrpcRecvNormal", "NORMAL").await;
        let fifo = typed_topic("GrpcRecvFifo", "FIFO").await;
        let delay = typed_topic("GrpcRecvDelay", "DELAY").await;
        let group = unique_name("grpc_simple");
        let grpc = grpc_producer("grpc_producer").await;
        let remoting = remoting_producer("remoting_producer").await;

        let mut sent: HashMap<String, Message> = HashMap::new();
        // gRPC sync, gRPC async, remoting sync, a gRPC batch.
        let m = fielded_message(&normal, "gRPC consumed body", 0);
        sent.insert(grpc.send(m.clone()).await.expect("send").msg_id, m);
        let m = fielded_message(&normal, "gRPC consumed body", 1);
        let (tx, rx) = tokio::sync::oneshot::channel();
        grpc.send_with_callback(m.clone(), move |r| {
            let _ = tx.send(r);
        });
        sent.insert(rx.await.expect("callback").expect("async send").msg_id, m);
        let m = fielded_message(&normal, "gRPC consumed body", 2);
        sent.insert(remoting.send(m.clone()).await.expect("send").msg_id, m);
        let batch: Vec<_> = (3..6)
            .map(|i| fielded_message(&normal, "gRPC consumed body", i))
            .collect();
        let ids = grpc.send_batch(batch.clone()).await.expect("batch").msg_id;
        for (id, m) in ids.split(',').zip(batch) {
            sent.insert(id.to_owned(), m);
        }

        let consumer = grpc_consumer(&group, &normal).await;
        let ids: Vec<String> = sent.keys().cloned().collect();
        let got = receive_ids(&consumer, &ids, 60).await;
        for (id, m) in &sent {
            assert_same(m, &got[id]);
            assert_eq!(got[id].msg_id, *id);
        }

        // FIFO: the message group arrives.
        consumer
            .subscribe(&fifo, "*")
            .await
            .expect("subscribe fifo");
        let m = fielded_message(&fifo, "gRPC consumed body", 7)
            .with_property(property::SHARDING_KEY, "group-7");
        let id = grpc.send(m.clone()).await.expect("fifo send").msg_id;
        let got = receive_ids(&consumer, std::slice::from_ref(&id), 60).await;
        assert_same(&m, &got[&id]);
        assert_eq!(got[&id].property(property::SHARDING_KEY), Some("group-7"));

        // Delayed: not before its delivery time, which it carries.
        consumer
            .subscribe(&delay, "*")
            .await
            .expect("subscribe delay");
        let at = rmq_client_core::now_ms() + 3_000;
        let m = fielded_message(&delay, "gRPC consumed body", 8)
            .with_property(property::TIMER_DELIVER_MS, at.to_string());
        let id = grpc.send(m.clone()).await.expect("delay send").msg_id;
        let got = receive_ids(&consumer, std::slice::from_ref(&id), 60).await;
        assert_same(&m, &got[&id]);
        assert!(
            rmq_client_core::now_ms() >= at - 500,
            "a delayed message came before its time"
        );
        assert_eq!(
            got[&id].property(property::TIMER_DELIVER_MS),
            Some(at.to_string().as_str())
        );

        consumer.shutdown().await.expect("shutdown");
        assert!(
            consumer
                .receive(1, INVISIBLE)
                .await
                .unwrap_err()
                .is_shutdown()
        );
        grpc.shutdown().await.expect("producer shutdown");
        remoting.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn grpc_produced_arrives_at_the_remoting_push_consumer() {
    within(90, "gRPC to remoting push", async {
        let topic = typed_topic("GrpcToPush", "NORMAL").await;
        let (push, mut deliveries) = PushConsumer::builder()
            .group(unique_name("grpc_push_check"))
            .namesrv_addr(broker().await.namesrv_addr.clone())
            .subscribe(&topic, "*")
            .consume_from(ConsumeFrom::FirstOffset)
            .start_stream()
            .await
            .expect("push consumer starts");
        let grpc = grpc_producer("grpc_producer").await;
        let sent = fielded_message(&topic, "gRPC consumed body", 1).with_property("user-c", "c");
        let id = grpc.send(sent.clone()).await.expect("send").msg_id;
        loop {
            let d = deliveries.next().await.expect("a delivery");
            if d.msg_id == id {
                assert_same(&sent, d.message());
                d.ack();
                break;
            }
            d.ack();
        }
        push.shutdown().await.expect("push shutdown");
        grpc.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn not_acked_comes_back_after_the_invisible_time() {
    within(120, "redelivery", async {
        let topic = typed_topic("GrpcRedeliver", "NORMAL").await;
        let group = unique_name("grpc_redeliver");
        let grpc = grpc_producer("grpc_producer").await;
        let consumer = grpc_consumer(&group, &topic).await;
        let first = grpc
            .send(fielded_message(&topic, "gRPC consumed body", 1))
            .await
            .expect("send")
            .msg_id;
        let second = grpc
            .send(fielded_message(&topic, "gRPC consumed body", 2))
            .await
            .expect("send")
            .msg_id;

        // Receive both, ack neither; hide the second longer.
        let mut held = HashMap::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
        while held.len() < 2 {
            assert!(tokio::time::Instant::now() < deadline, "first deliveries");
            for m in consumer.receive(32, INVISIBLE).await.expect("receive") {
                held.insert(m.msg_id.clone(), m);
            }
        }
        let received_at = tokio::time::Instant::now();
        let Some(mut longer) = held.remove(&second) else {
            panic!("second message not received");
        };
        assert_eq!(longer.reconsume_times(), 0);
        let renewed = consumer
            .change_invisible_duration(&longer, Duration::from_secs(60))
            .await
            .expect("change invisible duration");
        assert_eq!(renewed.invisible_duration(), Duration::from_secs(60));
        longer.renew(renewed);

        // The first comes back once its invisible time passed, counted.
        let again = loop {
            assert!(
                received_at.elapsed() < Duration::from_secs(60),
                "not redelivered"
            );
            let batch = consumer.receive(32, INVISIBLE).await.expect("receive");
            if let Some(m) = batch.into_iter().find(|m| m.msg_id == first) {
                break m;
            }
        };
        assert!(
            received_at.elapsed() >= INVISIBLE - Duration::from_secs(1),
            "came back after {:?}",
            received_at.elapsed()
        );
        assert_eq!(again.reconsume_times(), 1);
        assert_eq!(
            again.body,
            fielded_message(&topic, "gRPC consumed body", 1).body
        );
        consumer.ack(&again).await.expect("ack the redelivery");
        // The renewed handle acks the hidden one.
        consumer
            .ack(&longer)
            .await
            .expect("ack with the renewed handle");

        consumer.shutdown().await.expect("shutdown");
        grpc.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn fifo_groups_stay_in_order_across_three_consumers() {
    const GROUPS: usize = 3;
    const PER_GROUP: usize = 8;
    within(150, "FIFO across consumers", async {
        let topic = typed_topic("GrpcFifoOrder", "FIFO").await;
        let group = orderly_group("grpc_fifo").await;
        let grpc = grpc_producer("grpc_producer").await;
        for seq in 0..PER_GROUP {
            for g in 0..GROUPS {
                let m = Message::new(&topic, format!("{g}:{seq}"))
                    .with_property(property::SHARDING_KEY, format!("mg-{g}"));
                grpc.send(m).await.expect("fifo send");
            }
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(usize, String)>(256);
        let mut consumers = Vec::new();
        for c in 0..3 {
            let consumer = grpc_consumer(&group, &topic).await;
            let tx = tx.clone();
            consumers.push(consumer.clone());
            tokio::spawn(async move {
                loop {
                    let batch = match consumer.receive(32, INVISIBLE).await {
                        Ok(b) => b,
                        Err(e) if e.is_shutdown() => return,
                        Err(_) => continue,
                    };
                    for m in batch {
                        let body = String::from_utf8_lossy(&m.body).into_owned();
                        if tx.send((c, body)).await.is_err() {
                            return;
                        }
                        if consumer.ack(&m).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
        drop(tx);
        let mut order: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut by_consumer = [0usize; 3];
        let mut total = 0;
        while total < GROUPS * PER_GROUP {
            let (c, body) = rx.recv().await.expect("deliveries");
            let Some((g, seq)) = body.split_once(':') else {
                panic!("body {body}");
            };
            let seq: usize = seq.parse().expect("seq");
            let list = order.entry(g.to_owned()).or_default();
            if list.contains(&seq) {
                continue; // a redelivery of an acked-late message
            }
            list.push(seq);
            by_consumer[c] += 1;
            total += 1;
        }
        for (g, seqs) in &order {
            assert_eq!(
                seqs,
                &(0..PER_GROUP).collect::<Vec<_>>(),
                "message group {g} out of order"
            );
        }
        println!("FIFO deliveries per consumer: {by_consumer:?}");
        for c in consumers {
            c.shutdown().await.expect("shutdown");
        }
        grpc.shutdown().await.expect("producer shutdown");
    })
    .await;
}
