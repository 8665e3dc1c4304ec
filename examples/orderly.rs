//! Ordered messages against the RocketMQ at `NAMESRV_ADDR`: every step of an
//! order is sent to one queue (selected by the order id), and an orderly
//! consumer sees the steps of each order in the order they were sent.
//!
//! ```sh
//! NAMESRV_ADDR=127.0.0.1:9876 cargo run --example orderly -- [topic]
//! ```
//!
//! The topic (default `rmq_example_orders`) is created by the broker on first
//! send when it has `autoCreateTopicEnable=true`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmq::prelude::*;

const ORDERS: usize = 5;
const STEPS: [&str; 4] = ["created", "paid", "shipped", "delivered"];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let topic = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "rmq_example_orders".to_owned());
    // Order ids unique to this run, so a second run shows only its own orders.
    let run = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let orders: Vec<String> = (0..ORDERS).map(|i| format!("order-{run}-{i}")).collect();

    // Ordered send: the hash of the order id picks the queue, so all steps of
    // one order land in one queue, in send order. Steps of different orders
    // interleave.
    let producer = Producer::builder()
        .group("rmq_example_order_producer")
        .start()
        .await?;
    for step in STEPS {
        for order in &orders {
            let msg = Message::new(&topic, format!("{order}:{step}"))
                .with_tags(step)
                .with_keys([order.as_str()]);
            let sent = producer
                .send_with_selector(msg, select_by_hash(order.clone()))
                .await?;
            println!(
                "sent {order} {step} to queue {}",
                sent.message_queue.queue_id
            );
        }
    }
    let _ = producer.shutdown().await;

    // Orderly consumer: one call at a time per queue, in offset order, and
    // only while this client holds the queue's broker lock.
    let seen: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
    let sink = seen.clone();
    let consumer = PushConsumer::builder()
        .group("rmq_example_orderly")
        .consume_from(ConsumeFrom::FirstOffset)
        .subscribe(&topic, "*")
        .start_orderly(orderly_listener_fn(move |msgs, ctx| {
            let sink = sink.clone();
            Box::pin(async move {
                for m in msgs {
                    let text = String::from_utf8_lossy(&m.body).into_owned();
                    let Some((order, step)) = text.split_once(':') else {
                        continue;
                    };
                    println!(
                        "queue {} offset {}: {order} {step}",
                        ctx.queue().queue_id,
                        m.queue_offset
                    );
                    let mut seen = sink.lock().unwrap_or_else(|e| e.into_inner());
                    seen.entry(order.to_owned())
                        .or_default()
                        .push(step.to_owned());
                }
                // A failure would return SuspendCurrentQueueAMoment: the same
                // messages again in 1 s, nothing later of the queue first.
                OrderlyResult::Success
            })
        }))
        .await?;

    // Wait (at most 30 s) until every step of this run's orders arrived.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let done = {
            let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            orders
                .iter()
                .all(|o| seen.get(o).is_some_and(|s| s.len() >= STEPS.len()))
        };
        if done || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    consumer.shutdown().await?;

    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    for order in &orders {
        let steps = seen.get(order).cloned().unwrap_or_default();
        let in_order = steps == STEPS;
        println!(
            "{order}: {} {}",
            steps.join(" -> "),
            if in_order {
                "(in order)"
            } else {
                "(incomplete)"
            }
        );
    }
    Ok(())
}
