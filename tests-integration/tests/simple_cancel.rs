//! Cancel safety of `SimpleConsumer::receive`, over the brokers' pop (5.x) and through the proxy:
//! a receive future dropped after the broker popped for it (the branch of a `select!` that lost)
//! loses nothing: its messages stay hidden for the invisible time, then come back to the group
//! with their reconsume times raised by one; receives raced against timers in `select!` lose
//! nothing either, and nothing acked comes back. Pop needs RocketMQ 5 and the proxy is 5.x only,
//! so both are `#[ignore]`d; `scripts/test.sh` runs them on 5.x (the `remoting_` one in its pop
//! step, the `grpc_` one in its gRPC step).

use std::collections::{HashMap, HashSet};
use std::task::Poll;
use std::time::{Duration, Instant};

use rmq_consumer_pull::{Expression, ReceivedMessage, SimpleConsumer};
use rmq_producer::{Message, Producer};
use rmq_testkit::grpc::endpoint;
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

/// Messages the dropped receive pops (at most one receive's worth).
const POPPED: usize = 4;
/// Receives raced against a timer of 0, 1, .. ms.
const RACES: usize = 48;

fn assert_v5(env: &Env) {
    assert!(
        env.broker.major_version() != Some(4),
        "pop needs RocketMQ 5; this broker is {}",
        env.broker.version
    );
}

/// Sends `n` messages `prefix-i` to `topic`; answers their ids.
async fn send(producer: &Producer, topic: &str, prefix: &str, n: usize) -> HashSet<String> {
    let mut ids = HashSet::new();
    for i in 0..n {
        let r = producer
            .send(Message::new(topic, format!("{prefix}-{i}")))
            .await
            .expect("send");
        ids.insert(r.msg_id);
    }
    ids
}

/// Acks `got`; every ack must be taken.
async fn ack(c: &SimpleConsumer, got: &[ReceivedMessage]) {
    if !got.is_empty() {
        c.ack_batch(got).await.expect("ack taken");
    }
}

/// Receives until every message of `ids` was received and acked (at most `limit`): none may come
/// again once acked (`acked`, shared with earlier phases), none may be missing. Answers the
/// reconsume times each was received with.
async fn drain(
    c: &SimpleConsumer,
    ids: &HashSet<String>,
    acked: &mut HashSet<String>,
    invisible: Duration,
    limit: Duration,
) -> HashMap<String, u32> {
    let deadline = Instant::now() + limit;
    let mut times = HashMap::new();
    while !ids.iter().all(|id| acked.contains(id)) {
        let missing: Vec<&String> = ids.iter().filter(|id| !acked.contains(*id)).collect();
        assert!(
            Instant::now() < deadline,
            "not back within {limit:?}: {missing:?}"
        );
        let got = c.receive(32, invisible).await.expect("receive");
        for m in &got {
            assert!(
                !acked.contains(&m.msg_id),
                "{} came again after its ack was taken",
                m.msg_id
            );
            times.insert(m.msg_id.clone(), m.reconsume_times());
        }
        ack(c, &got).await;
        acked.extend(got.iter().map(|m| m.msg_id.clone()));
    }
    times
}

/// The two cancellations, with `c` reading `topic` (one broker) and `producer` writing it.
async fn receives_dropped_in_flight_lose_nothing(
    c: &SimpleConsumer,
    producer: &Producer,
    topic: &str,
    invisible: Duration,
) {
    // Route, connection and heartbeat in place: the first poll of a receive sends its request.
    let warm = c.receive(1, invisible).await.expect("receive");
    assert!(warm.is_empty(), "the topic starts empty");
    let mut acked = HashSet::new();

    // 1. A receive polled once (its request goes out), then left alone while the broker pops and
    //    answers, then dropped: what `select!` does to a branch that lost after the answer arrived.
    let ids = send(producer, topic, "dropped", POPPED).await;
    {
        let mut receive = Box::pin(c.receive(POPPED, invisible));
        assert!(
            matches!(futures::poll!(receive.as_mut()), Poll::Pending),
            "a receive waits for the broker"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let dropped_at = Instant::now();
    // The broker popped them for the dropped receive: hidden now.
    let hidden = c.receive(POPPED, invisible).await.expect("receive");
    assert!(
        hidden.is_empty(),
        "the dropped receive's messages are hidden (popped for it): {:?}",
        hidden.iter().map(|m| &m.msg_id).collect::<Vec<_>>()
    );
    let times = drain(c, &ids, &mut acked, invisible, invisible * 4).await;
    let back_after = dropped_at.elapsed();
    assert!(
        times.values().all(|t| *t == 1),
        "each came back once, after its invisible time: reconsume times {times:?}"
    );
    assert!(
        back_after >= invisible,
        "back {back_after:?} after the drop, before the invisible time {invisible:?}"
    );
    println!(
        "{POPPED} messages of a dropped receive back {back_after:?} after the drop (invisible {invisible:?})"
    );

    // 2. Receives raced against timers of 0..RACES ms in `select!`: some win, some are dropped
    //    before, during or after the broker's pop.
    let ids = send(producer, topic, "raced", RACES).await;
    let mut dropped = 0;
    for ms in (0..).take(RACES) {
        tokio::select! {
            biased;
            got = c.receive(2, invisible) => {
                let got = got.expect("receive");
                ack(c, &got).await;
                acked.extend(got.iter().map(|m| m.msg_id.clone()));
            }
            () = tokio::time::sleep(Duration::from_millis(ms)) => dropped += 1,
        }
    }
    let raced_acked = ids.iter().filter(|id| acked.contains(*id)).count();
    let times = drain(c, &ids, &mut acked, invisible, invisible * 4).await;
    let came_back = times.values().filter(|t| **t > 0).count();
    println!(
        "{RACES} receives raced: {dropped} dropped, {raced_acked} messages acked from the winners, \
         {} received after, {came_back} of them back after a dropped receive popped them",
        times.len()
    );
    assert!(dropped > 0, "some receives lost their race");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "pop needs RocketMQ 5: scripts/test.sh runs it on 5.x (cargo test -- --ignored)"]
async fn remoting_receive_dropped_in_select_loses_nothing() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        assert_v5(&env);
        let topic = env.topic("pop_cancel", 1).await;
        let group = rmq_testkit::unique_name("pop_cancel");
        let c = SimpleConsumer::builder()
            .group(group)
            .namesrv_addr(env.namesrv())
            .subscribe(topic.as_str(), Expression::all())
            .await_duration(Duration::from_secs(1))
            .start()
            .await
            .expect("simple consumer starts");
        let producer = env.producer().await;
        receives_dropped_in_flight_lose_nothing(&c, &producer, &topic, Duration::from_secs(3))
            .await;
        c.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn grpc_receive_dropped_in_select_loses_nothing() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        // One queue on one broker: a receive pops everything sent.
        let topic = env.topic("grpc_cancel", 1).await;
        let c = SimpleConsumer::builder()
            .group(rmq_testkit::unique_name("grpc_cancel"))
            .endpoint(endpoint())
            .subscribe(topic.as_str(), Expression::all())
            .await_duration(Duration::from_secs(1))
            .start()
            .await
            .expect("gRPC simple consumer starts");
        let producer = env.producer().await;
        // The proxy's smallest invisible time for a receive (minInvisibleTimeMillsForRecv).
        receives_dropped_in_flight_lose_nothing(&c, &producer, &topic, Duration::from_secs(10))
            .await;
        c.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
