//! How a service's own test can use rmq without a JVM: start a fake
//! RocketMQ in-process, produce, consume with rmq's push consumer, assert,
//! and shape the broker's behaviour (a failed delivery retried after its
//! 10 s delay level, fast-forwarded by the fake's clock; a broker that
//! answers "busy").
//!
//! ```sh
//! cargo run --example test_with_fake
//! ```
//!
//! No broker needs to run. In a real test suite the body of `main` is a
//! `#[tokio::test(flavor = "multi_thread")]` function; it prints what it
//! checked and exits 0.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq::prelude::*;
use rmq::protocol::{RequestCode, ResponseCode};
use rmq_fake::{Action, FakeCluster, Fault};
use tokio::sync::Notify;

/// What the service under test would do with an order: fail the first time
/// it sees order 3 (a flaky downstream), succeed otherwise.
#[derive(Default)]
struct OrderService {
    handled: Mutex<HashMap<String, Vec<i32>>>,
    changed: Notify,
}

impl OrderService {
    fn handle(&self, m: &MessageExt) -> ConsumeResult {
        let body = String::from_utf8_lossy(&m.body).to_string();
        self.handled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(body.clone())
            .or_default()
            .push(m.reconsume_times);
        self.changed.notify_waiters();
        if body == "order 3" && m.reconsume_times == 0 {
            ConsumeResult::ReconsumeLater
        } else {
            ConsumeResult::Success
        }
    }

    fn deliveries(&self) -> HashMap<String, Vec<i32>> {
        self.handled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    async fn wait_until(&self, what: &str, pred: impl Fn(&HashMap<String, Vec<i32>>) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let changed = self.changed.notified();
            if pred(&self.deliveries()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not reached: {:?}",
                self.deliveries()
            );
            let _ = tokio::time::timeout(Duration::from_millis(100), changed).await;
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    // Two brokers, 8 queues per topic; starts in milliseconds.
    let cluster = FakeCluster::builder()
        .brokers(2)
        .queues(8)
        .topic("orders")
        .start()
        .await?;
    println!(
        "fake RocketMQ at {} ({} brokers), up in {:?}",
        cluster.namesrv_addr(),
        cluster.brokers().len(),
        started.elapsed()
    );

    let producer = Producer::builder()
        .group("orders-producer")
        .namesrv_addr(cluster.namesrv_addr())
        .start()
        .await?;
    for i in 0..10 {
        producer
            .send(Message::new("orders", format!("order {i}")).with_tags("created"))
            .await?;
    }

    let service = Arc::new(OrderService::default());
    let consumer = {
        let service = service.clone();
        PushConsumer::builder()
            .group("orders-consumer")
            .namesrv_addr(cluster.namesrv_addr())
            .consume_from(ConsumeFrom::FirstOffset)
            .subscribe("orders", "created")
            .start(listener_fn(move |msgs, _ctx| {
                let result = msgs.iter().map(|m| service.handle(m)).fold(
                    ConsumeResult::Success,
                    |acc, r| match r {
                        ConsumeResult::Success => acc,
                        other => other,
                    },
                );
                Box::pin(async move { result })
            }))
            .await?
    };

    // Every order is handled; order 3 failed once and waits in %RETRY%.
    service
        .wait_until("10 orders handled", |d| d.len() == 10)
        .await;
    let broker_with_retry = loop {
        if let Some(b) = cluster.brokers().iter().find(|b| b.scheduled() > 0) {
            break b.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    println!(
        "order 3 failed; its retry waits on {} (delay level 3 = 10 s)",
        broker_with_retry.name()
    );
    // No need to wait 10 s: move the fake's clock.
    let retry_started = Instant::now();
    cluster.clock().advance(Duration::from_secs(10));
    service
        .wait_until("order 3 retried", |d| {
            d.get("order 3").is_some_and(|times| times == &[0, 1])
        })
        .await;
    println!(
        "order 3 came back through %RETRY%orders-consumer after {:?} of real time",
        retry_started.elapsed()
    );
    for (order, times) in service.deliveries() {
        let expected: &[i32] = if order == "order 3" { &[0, 1] } else { &[0] };
        assert_eq!(times, expected, "{order}");
    }

    // Faults the real broker only shows under load: "busy" answers.
    let busy = cluster.add_fault(
        Fault::on(
            RequestCode::SEND_MESSAGE_V2,
            Action::error(ResponseCode::SYSTEM_BUSY),
        )
        .times(1),
    );
    let sent = producer
        .send(Message::new("orders", "order 10").with_tags("created"))
        .await?;
    println!(
        "a SYSTEM_BUSY answer was retried by the producer: {:?} on {}",
        sent.status, sent.message_queue
    );
    cluster.clear_fault(busy);
    service
        .wait_until("order 10 handled", |d| d.contains_key("order 10"))
        .await;

    consumer.shutdown().await?;
    let _ = producer.shutdown().await;
    cluster.shutdown().await;
    println!("all checks passed in {:?}", started.elapsed());
    Ok(())
}
