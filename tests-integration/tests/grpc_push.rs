//! The push consumer over the RocketMQ 5.x proxy
//! (`PushConsumerBuilder::endpoint`): every producer kind (gRPC normal,
//! FIFO, delayed; remoting) consumed with every field equal, once each;
//! FIFO message groups in order across three orderly consumers, a
//! suspended message retried before the rest of its group; a
//! `ReconsumeLater` delivered again after the proxy's backoff with
//! reconsume times 1, then acked and never again; `Retry::Dlq` to the DLQ;
//! the delivery stream; shutdown finishing the call in flight and giving
//! back what was received but not consumed. A gRPC-produced message
//! read by the remoting push consumer is `grpc_consumer.rs`'s. The proxy is
//! `RMQ_PROXY_ENDPOINT`; 4.9.x has no proxy, so these are `#[ignore]`d and
//! `scripts/test.sh` runs them on 5.x.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmq_consumer_push::{
    ConsumeFrom, ConsumeResult, ConsumerState, Error, MessageExt, OrderlyResult, PushConsumer,
    Retry, dlq_topic, listener_fn, orderly_listener_fn,
};
use rmq_producer::Message;
use rmq_protocol::message::property;
use rmq_testkit::client::within;
use rmq_testkit::env::Env;
use rmq_testkit::grpc::{
    endpoint, fielded_message, grpc_producer, orderly_group, remoting_producer, typed_topic,
    user_properties,
};
use rmq_testkit::unique_name;
use rmq_testkit::wait::poll_until;
use tokio::sync::Notify;

/// Every delivery by message id, and a wake-up for each.
#[derive(Default)]
struct Seen {
    by_id: Mutex<HashMap<String, Vec<MessageExt>>>,
    changed: Notify,
}

impl Seen {
    fn record(&self, m: &MessageExt) {
        self.by_id
            .lock()
            .expect("seen lock")
            .entry(m.msg_id.clone())
            .or_default()
            .push(m.clone());
        self.changed.notify_one();
    }

    fn deliveries(&self, id: &str) -> Vec<MessageExt> {
        self.by_id
            .lock()
            .expect("seen lock")
            .get(id)
            .cloned()
            .unwrap_or_default()
    }

    /// Waits until every id of `ids` was delivered at least `times` times.
    async fn wait_for(&self, ids: &[String], times: usize) {
        loop {
            let missing = {
                let seen = self.by_id.lock().expect("seen lock");
                ids.iter()
                    .filter(|id| seen.get(*id).map_or(0, Vec::len) < times)
                    .count()
            };
            if missing == 0 {
                return;
            }
            self.changed.notified().await;
        }
    }
}

/// A gRPC push consumer of `group` on `topics` that records every message
/// and consumes it.
async fn recording_consumer(group: &str, topics: &[&str], seen: &Arc<Seen>) -> PushConsumer {
    let mut b = PushConsumer::builder().group(group).endpoint(endpoint());
    for t in topics {
        b = b.subscribe(*t, "*");
    }
    let s = seen.clone();
    b.start(listener_fn(move |msgs, _ctx| {
        let s = s.clone();
        Box::pin(async move {
            for m in msgs {
                s.record(m);
            }
            ConsumeResult::Success
        })
    }))
    .await
    .expect("gRPC push consumer starts")
}

/// `got` carries what `sent` did, was born between `sent_from` and
/// `sent_to` (ms) on a real host, and is a first delivery.
fn assert_same(sent: &Message, got: &MessageExt, sent_from: i64, sent_to: i64) {
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
        got.property(property::SHARDING_KEY),
        sent.property(property::SHARDING_KEY),
        "message group"
    );
    assert_eq!(
        got.property(property::TIMER_DELIVER_MS),
        sent.property(property::TIMER_DELIVER_MS),
        "delivery timestamp"
    );
    assert_eq!(got.reconsume_times, 0);
    assert!(
        (sent_from - 1..=sent_to + 1).contains(&got.born_timestamp),
        "born timestamp {} outside the send [{sent_from}, {sent_to}]",
        got.born_timestamp
    );
    // A remoting producer's address; or, sent through the proxy, the sender's host name (what
    // the gRPC clients put in the born host), kept as `__BORNHOST`.
    assert!(
        !got.born_host.ip().is_unspecified()
            || got
                .property(property::BORN_HOST)
                .is_some_and(|h| !h.is_empty()),
        "born host {} / {:?}",
        got.born_host,
        got.property(property::BORN_HOST)
    );
    assert!(got.queue_offset >= 0 && got.queue_id >= 0, "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn every_producer_kind_arrives_once_with_every_field() {
    within(150, "producer kinds to the gRPC push consumer", async {
        let normal = typed_topic("GrpcPushNormal", "NORMAL").await;
        let fifo = typed_topic("GrpcPushFifo", "FIFO").await;
        let delay = typed_topic("GrpcPushDelay", "DELAY").await;
        let seen = Arc::new(Seen::default());
        let consumer = recording_consumer(
            &unique_name("grpc_push_kinds"),
            &[&normal, &fifo, &delay],
            &seen,
        )
        .await;
        assert!(consumer.client_instance().is_none());
        let assigned: Vec<String> = consumer
            .inspect()
            .iter()
            .map(|q| q.queue.topic.clone())
            .collect();
        assert_eq!(assigned.len(), 3, "one assignment per topic: {assigned:?}");

        let grpc = grpc_producer("grpc_push_p").await;
        let remoting = remoting_producer("grpc_push_rp").await;
        let from = rmq_client_core::now_ms();
        let mut sent: HashMap<String, Message> = HashMap::new();
        for i in 0..3 {
            let m = fielded_message(&normal, "gRPC push body", i);
            sent.insert(grpc.send(m.clone()).await.expect("send").msg_id, m);
        }
        for i in 3..6 {
            let m = fielded_message(&fifo, "gRPC push body", i)
                .with_property(property::SHARDING_KEY, format!("mg-{}", i % 2));
            sent.insert(grpc.send(m.clone()).await.expect("fifo send").msg_id, m);
        }
        let at = from + 3_000;
        let delayed = fielded_message(&delay, "gRPC push body", 6)
            .with_property(property::TIMER_DELIVER_MS, at.to_string());
        let delayed_id = grpc.send(delayed.clone()).await.expect("delay send").msg_id;
        sent.insert(delayed_id.clone(), delayed);
        let m = fielded_message(&delay, "gRPC push body", 7).deliver_after(Duration::from_secs(2));
        sent.insert(
            grpc.send(m.clone())
                .await
                .expect("deliver_after send")
                .msg_id,
            m,
        );
        for i in 8..10 {
            let m = fielded_message(&normal, "gRPC push body", i);
            sent.insert(
                remoting
                    .send(m.clone())
                    .await
                    .expect("remoting send")
                    .msg_id,
                m,
            );
        }
        let m = fielded_message(&fifo, "gRPC push body", 10)
            .with_property(property::SHARDING_KEY, "mg-remoting");
        sent.insert(
            remoting
                .send(m.clone())
                .await
                .expect("remoting fifo send")
                .msg_id,
            m,
        );
        let to = rmq_client_core::now_ms();

        let ids: Vec<String> = sent.keys().cloned().collect();
        seen.wait_for(&ids, 1).await;
        assert!(
            rmq_client_core::now_ms() >= at - 500,
            "a delayed message came before its time"
        );
        // Every ack out before counting deliveries.
        consumer.shutdown().await.expect("shutdown");
        assert_eq!(consumer.state(), ConsumerState::ShutDown);
        let mut hosts = BTreeSet::new();
        for (id, m) in &sent {
            let got = seen.deliveries(id);
            assert_eq!(got.len(), 1, "{id} delivered {} times", got.len());
            assert_eq!(got[0].msg_id, *id);
            assert_same(m, &got[0], from, to);
            hosts.insert(got[0].born_host.ip());
        }
        println!("{} messages, each once; born hosts {hosts:?}", sent.len());
        grpc.shutdown().await.expect("producer shutdown");
        remoting.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// A FIFO delivery: consumer, message group, seq, reconsume times.
type Delivered = (usize, String, usize, i32);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn fifo_groups_in_order_across_three_orderly_consumers() {
    const GROUPS: usize = 4;
    const PER_GROUP: usize = 10;
    // Suspended once: delivered again before the rest of its group.
    const SUSPENDED: &str = "1:3";
    within(180, "FIFO across gRPC push consumers", async {
        let topic = typed_topic("GrpcPushFifoOrder", "FIFO").await;
        let group = orderly_group("grpc_push_fifo").await;
        let log: Arc<Mutex<Vec<Delivered>>> = Arc::default();
        let changed = Arc::new(Notify::new());
        let mut consumers = Vec::new();
        for c in 0..3 {
            let (log, changed) = (log.clone(), changed.clone());
            let consumer = PushConsumer::builder()
                .group(&group)
                .endpoint(endpoint())
                .subscribe(&topic, "*")
                .consume_concurrency(4)
                .start_orderly(orderly_listener_fn(move |msgs, _ctx| {
                    let (log, changed) = (log.clone(), changed.clone());
                    Box::pin(async move {
                        for m in msgs {
                            let body = String::from_utf8_lossy(&m.body).into_owned();
                            let (g, seq) = body.split_once(':').expect("group:seq body");
                            let seq: usize = seq.parse().expect("seq");
                            log.lock().expect("log lock").push((
                                c,
                                g.to_owned(),
                                seq,
                                m.reconsume_times,
                            ));
                            changed.notify_one();
                            if body == SUSPENDED && m.reconsume_times == 0 {
                                return OrderlyResult::SuspendCurrentQueueAMoment;
                            }
                        }
                        OrderlyResult::Success
                    })
                }))
                .await
                .expect("orderly gRPC push consumer starts");
            consumers.push(consumer);
        }
        assert_eq!(
            consumers[0].inspect().len(),
            4,
            "a FIFO group is assigned each queue"
        );
        let grpc = grpc_producer("grpc_push_p").await;
        for seq in 0..PER_GROUP {
            for g in 0..GROUPS {
                let m = Message::new(&topic, format!("{g}:{seq}"))
                    .with_property(property::SHARDING_KEY, format!("mg-{g}"));
                grpc.send(m).await.expect("fifo send");
            }
        }
        // Every message consumed: one delivery each, one more for the suspended one.
        let total = GROUPS * PER_GROUP + 1;
        loop {
            if log.lock().expect("log lock").len() >= total {
                break;
            }
            changed.notified().await;
        }
        for c in &consumers {
            c.shutdown().await.expect("shutdown");
        }
        let log = log.lock().expect("log lock").clone();
        assert_eq!(log.len(), total, "no more deliveries: {log:?}");
        let mut by_group: BTreeMap<String, Vec<(usize, i32)>> = BTreeMap::new();
        let mut per_consumer = [0usize; 3];
        for (c, g, seq, times) in &log {
            by_group.entry(g.clone()).or_default().push((*seq, *times));
            per_consumer[*c] += 1;
        }
        for g in 0..GROUPS {
            let mut expected: Vec<(usize, i32)> = (0..PER_GROUP).map(|s| (s, 0)).collect();
            if g == 1 {
                expected.insert(4, (3, 1));
            }
            assert_eq!(
                by_group[&g.to_string()],
                expected,
                "message group {g}: (seq, reconsume times) in delivery order"
            );
        }
        println!("FIFO deliveries per consumer: {per_consumer:?}");
        grpc.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn reconsume_later_comes_back_once_after_the_backoff() {
    within(120, "gRPC push retry", async {
        let topic = typed_topic("GrpcPushRetry", "NORMAL").await;
        let group = unique_name("grpc_push_retry");
        let seen = Arc::new(Seen::default());
        let failed_at: Arc<Mutex<Option<Instant>>> = Arc::default();
        let (s, f) = (seen.clone(), failed_at.clone());
        let consumer = PushConsumer::builder()
            .group(&group)
            .endpoint(endpoint())
            .subscribe(&topic, "*")
            .start(listener_fn(move |msgs, _ctx| {
                let (s, f) = (s.clone(), f.clone());
                Box::pin(async move {
                    for m in msgs {
                        s.record(m);
                    }
                    if msgs.iter().any(|m| m.reconsume_times == 0) {
                        *f.lock().expect("failed_at lock") = Some(Instant::now());
                        return ConsumeResult::ReconsumeLater;
                    }
                    ConsumeResult::Success
                })
            }))
            .await
            .expect("gRPC push consumer starts");
        let grpc = grpc_producer("grpc_push_p").await;
        let sent = fielded_message(&topic, "gRPC push body", 1);
        let id = grpc.send(sent.clone()).await.expect("send").msg_id;
        seen.wait_for(std::slice::from_ref(&id), 2).await;
        let failed = failed_at
            .lock()
            .expect("failed_at lock")
            .expect("the first delivery failed");
        let back_after = failed.elapsed();
        let got = seen.deliveries(&id);
        assert_eq!(got[0].reconsume_times, 0);
        assert_eq!(got[1].reconsume_times, 1, "the second delivery is attempt 2");
        assert_eq!(got[1].message.topic, topic, "the retry carries its topic");
        assert_eq!(got[1].message.body, sent.body);
        assert_eq!(got[1].message.tags(), sent.tags());
        assert_eq!(
            user_properties(&got[1].message.properties),
            user_properties(&sent.properties)
        );
        // The proxy's backoff for attempt 1 is 1 s by default.
        assert!(
            back_after >= Duration::from_millis(900),
            "came back after {back_after:?}"
        );
        // Shutdown sends the queued acks, then ends the session: a message
        // not acked would come back within a second of that; a second
        // member of the group gets what comes.
        consumer.shutdown().await.expect("shutdown");
        let after = Arc::new(Seen::default());
        let second = recording_consumer(&group, &[&topic], &after).await;
        let marker = grpc.send(fielded_message(&topic, "gRPC push body", 2)).await.expect("marker").msg_id;
        after.wait_for(std::slice::from_ref(&marker), 1).await;
        let quiet = tokio::time::sleep(Duration::from_secs(3));
        tokio::select! {
            () = quiet => {}
            () = after.wait_for(std::slice::from_ref(&id), 1) => panic!("the acked message came back"),
        }
        assert_eq!(seen.deliveries(&id).len(), 2);
        second.shutdown().await.expect("shutdown");
        grpc.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn the_delivery_stream_over_grpc() {
    within(90, "gRPC push stream", async {
        let topic = typed_topic("GrpcPushStream", "NORMAL").await;
        let (consumer, mut deliveries) = PushConsumer::builder()
            .group(unique_name("grpc_push_stream"))
            .endpoint(endpoint())
            .subscribe(&topic, "*")
            .start_stream()
            .await
            .expect("gRPC push stream starts");
        let grpc = grpc_producer("grpc_push_p").await;
        let mut ids = Vec::new();
        for i in 0..3 {
            ids.push(
                grpc.send(fielded_message(&topic, "gRPC push body", i))
                    .await
                    .expect("send")
                    .msg_id,
            );
        }
        // The first delivery of the first message is handed back: it comes
        // again, counted; everything else is acked.
        let mut got: Vec<(String, i32)> = Vec::new();
        while got.iter().filter(|(id, _)| ids.contains(id)).count() < 4 {
            let d = deliveries.next().await.expect("a delivery");
            got.push((d.msg_id.clone(), d.reconsume_times));
            if d.msg_id == ids[0] && d.reconsume_times == 0 {
                d.reconsume_later();
            } else {
                d.ack();
            }
        }
        let first: Vec<i32> = got
            .iter()
            .filter(|(id, _)| *id == ids[0])
            .map(|(_, t)| *t)
            .collect();
        assert_eq!(first, [0, 1]);
        consumer.shutdown().await.expect("shutdown");
        assert!(deliveries.next().await.is_none(), "the stream ends");
        grpc.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn shutdown_finishes_the_call_in_flight_and_gives_back_the_rest() {
    within(120, "gRPC push shutdown", async {
        let topic = typed_topic("GrpcPushShutdown", "NORMAL").await;
        let group = unique_name("grpc_push_shutdown");
        let seen = Arc::new(Seen::default());
        let started = Arc::new(Notify::new());
        let finished: Arc<Mutex<Option<Instant>>> = Arc::default();
        let (s, st, f) = (seen.clone(), started.clone(), finished.clone());
        let consumer = PushConsumer::builder()
            .group(&group)
            .endpoint(endpoint())
            .subscribe(&topic, "*")
            .consume_concurrency(1)
            .start(listener_fn(move |msgs, _ctx| {
                let (s, st, f) = (s.clone(), st.clone(), f.clone());
                Box::pin(async move {
                    for m in msgs {
                        s.record(m);
                        if &m.body[..] == b"slow" {
                            st.notify_one();
                            tokio::time::sleep(Duration::from_secs(2)).await;
                            *f.lock().expect("finished lock") = Some(Instant::now());
                        }
                    }
                    ConsumeResult::Success
                })
            }))
            .await
            .expect("gRPC push consumer starts");
        let grpc = grpc_producer("grpc_push_p").await;
        let slow = grpc
            .send(Message::new(&topic, "slow"))
            .await
            .expect("send")
            .msg_id;
        started.notified().await;
        // Received while the only permit is taken: not consumed before the shutdown.
        let mut queued = Vec::new();
        for i in 0..3 {
            let m = Message::new(&topic, format!("queued-{i}"));
            queued.push(grpc.send(m).await.expect("send").msg_id);
        }
        consumer.shutdown().await.expect("shutdown");
        let done = Instant::now();
        let finished = finished
            .lock()
            .expect("finished lock")
            .expect("the call in flight finished before the shutdown returned");
        assert!(finished <= done);
        // What the first member did not consume comes to the next one; what
        // it consumed (acked at shutdown) does not.
        let after = Arc::new(Seen::default());
        let second = recording_consumer(&group, &[&topic], &after).await;
        let first_consumed: Vec<String> = queued
            .iter()
            .filter(|id| !seen.deliveries(id).is_empty())
            .cloned()
            .collect();
        let given_back: Vec<String> = queued
            .iter()
            .filter(|id| !first_consumed.contains(id))
            .cloned()
            .collect();
        after.wait_for(&given_back, 1).await;
        let quiet = tokio::time::sleep(Duration::from_secs(3));
        tokio::select! {
            () = quiet => {}
            () = after.wait_for(std::slice::from_ref(&slow), 1) => panic!("the consumed message came back"),
        }
        println!(
            "at shutdown: {} of {} queued consumed by the first member, {} given back",
            first_consumed.len(),
            queued.len(),
            given_back.len()
        );
        second.shutdown().await.expect("shutdown");
        grpc.shutdown().await.expect("producer shutdown");
    })
    .await;
}

/// The bodies in `%DLQ%<group>` (queue 0), once they are `expected`: the
/// broker offers no event for a message stored in the DLQ.
async fn wait_dlq(env: &Env, group: &str, expected: &[&str]) {
    let dlq = dlq_topic(group);
    poll_until(
        Duration::from_secs(30),
        Duration::from_millis(200),
        "the messages in the DLQ",
        || {
            let dlq = dlq.clone();
            async move {
                if let Err(e) = env.admin.refresh_route(&dlq).await {
                    return Err(format!("no DLQ route yet: {e}"));
                }
                let mut bodies: Vec<String> = env
                    .pull_all(&dlq, 0)
                    .await
                    .iter()
                    .map(|m| String::from_utf8_lossy(&m.body).into_owned())
                    .collect();
                bodies.sort();
                if bodies == expected {
                    Ok(())
                } else {
                    Err(format!("DLQ holds {bodies:?}"))
                }
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn retry_dlq_forwards_to_the_dlq_and_the_group_goes_on() {
    within(150, "gRPC push DLQ", async {
        let env = Env::new().await;
        let normal = typed_topic("GrpcPushDlq", "NORMAL").await;
        let fifo = typed_topic("GrpcPushDlqFifo", "FIFO").await;
        let normal_group = unique_name("grpc_push_dlq");
        let fifo_group = orderly_group("grpc_push_dlq_fifo").await;
        // A concurrent listener: "dlq" bodies fail and ask for the DLQ.
        let start = |group: String, topic: String, seen: Arc<Seen>| async move {
            PushConsumer::builder()
                .group(group)
                .endpoint(endpoint())
                .subscribe(topic, "*")
                .start(listener_fn(move |msgs, ctx| {
                    let seen = seen.clone();
                    for m in msgs {
                        seen.record(m);
                    }
                    let failed = msgs.iter().any(|m| m.body.starts_with(b"dlq"));
                    if failed {
                        ctx.set_retry(Retry::Dlq);
                    }
                    Box::pin(async move {
                        if failed {
                            ConsumeResult::ReconsumeLater
                        } else {
                            ConsumeResult::Success
                        }
                    })
                }))
                .await
                .expect("gRPC push consumer starts")
        };
        let seen = Arc::new(Seen::default());
        let fifo_seen = Arc::new(Seen::default());
        let consumer = start(normal_group.clone(), normal.clone(), seen.clone()).await;
        let fifo_consumer = start(fifo_group.clone(), fifo.clone(), fifo_seen.clone()).await;
        let grpc = grpc_producer("grpc_push_p").await;
        let mut ids = Vec::new();
        for body in ["ok-1", "dlq-2", "ok-3"] {
            ids.push(
                grpc.send(Message::new(&normal, body))
                    .await
                    .expect("send")
                    .msg_id,
            );
        }
        let mut fifo_ids = Vec::new();
        for body in ["ok-0", "dlq-1", "ok-2", "ok-3"] {
            let m = Message::new(&fifo, body).with_property(property::SHARDING_KEY, "one-group");
            fifo_ids.push(grpc.send(m).await.expect("fifo send").msg_id);
        }
        seen.wait_for(&ids, 1).await;
        fifo_seen.wait_for(&fifo_ids, 1).await;
        wait_dlq(&env, &normal_group, &["dlq-2"]).await;
        wait_dlq(&env, &fifo_group, &["dlq-1"]).await;
        // The forwarded message was settled: its queue hands out the next one.
        let m = Message::new(&fifo, "ok-4").with_property(property::SHARDING_KEY, "one-group");
        fifo_ids.push(grpc.send(m).await.expect("fifo send").msg_id);
        fifo_seen.wait_for(&fifo_ids, 1).await;
        consumer.shutdown().await.expect("shutdown");
        fifo_consumer.shutdown().await.expect("shutdown");
        for id in &ids {
            assert_eq!(
                seen.deliveries(id).len(),
                1,
                "{id}: once, then acked or in the DLQ"
            );
        }
        // The FIFO group went on after the DLQ, in order.
        let order: Vec<String> = fifo_ids
            .iter()
            .map(|id| {
                let d = fifo_seen.deliveries(id);
                assert_eq!(d.len(), 1, "{id}");
                String::from_utf8_lossy(&d[0].body).into_owned()
            })
            .collect();
        assert_eq!(order, ["ok-0", "dlq-1", "ok-2", "ok-3", "ok-4"]);
        grpc.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn settings_the_proxy_decides_fail_the_start() {
    let start = |b: rmq_consumer_push::PushConsumerBuilder| async move {
        match b
            .group("G")
            .subscribe("T", "*")
            .start(listener_fn(|_, _| {
                Box::pin(async { ConsumeResult::Success })
            }))
            .await
        {
            Err(e) => match e.downcast_ref::<Error>() {
                Some(Error::Config(m)) => m.clone(),
                _ => panic!("expected a config error, got {e:?}"),
            },
            Ok(_) => panic!("expected a config error, got a running consumer"),
        }
    };
    let b = || PushConsumer::builder().endpoint("127.0.0.1:1");
    assert!(
        start(b().namesrv_addr("127.0.0.1:9876"))
            .await
            .contains("namesrv_addr")
    );
    assert!(
        start(b().consume_from(ConsumeFrom::FirstOffset))
            .await
            .contains("consume_from")
    );
    assert!(
        start(b().message_model(rmq_consumer_push::MessageModel::Broadcasting))
            .await
            .contains("broadcasting")
    );
    assert!(
        start(PushConsumer::builder().endpoint("not an endpoint"))
            .await
            .contains("endpoint")
    );
}
