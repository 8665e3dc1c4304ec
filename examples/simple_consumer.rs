//! Pop consumption (RocketMQ 5.x) with the simple consumer: produce 100
//! messages, then receive them in batches of 16, each hidden from the rest
//! of the group for 30 s; ack them in one request per batch, except one
//! message per batch that we pretend needs longer: its invisible time is
//! extended, then it is acked with the renewed handle. Prints a summary and
//! exits 0.
//!
//! ```sh
//! cargo run --example simple_consumer
//! ```
//!
//! Uses the RocketMQ at `NAMESRV_ADDR`; when that is unset it starts a
//! local one (`scripts/rocketmq-local.sh`, 5.x) and stops it at the end.
//! Against a 4.x broker `start` fails with a "pop needs RocketMQ 5" error.
//! Start more copies with the same group (and no producing) to see the
//! broker share the messages without any rebalance.

#[path = "support/local_rocketmq.rs"]
mod local_rocketmq;

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use local_rocketmq::{Outcome, run_example};
use rmq::prelude::*;
use rmq::{Expression, SimpleConsumer};

const MESSAGES: usize = 100;

#[tokio::main]
async fn main() -> Outcome {
    run_example(|namesrv| async move { run(&namesrv).await }).await
}

async fn run(namesrv: &str) -> Outcome {
    let started = Instant::now();
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("simple_{stamp}");

    let producer = Producer::builder()
        .group("simple_example_producer")
        .namesrv_addr(namesrv)
        .start()
        .await?;
    // The first send creates the topic (the broker auto-creates it).
    producer.send(Message::new(&topic, "warm-up")).await?;

    let consumer = SimpleConsumer::builder()
        .group(format!("simple_example_{stamp}"))
        .namesrv_addr(namesrv)
        .subscribe(topic.as_str(), Expression::tag("*"))
        .await_duration(Duration::from_secs(5)) // long polling per receive
        .start()
        .await?;

    for i in 0..MESSAGES {
        producer
            .send(Message::new(&topic, format!("message {i}")))
            .await?;
    }

    let mut done = HashSet::new();
    let mut extended = 0;
    let idle_limit = Duration::from_secs(30);
    let mut last_message = Instant::now();
    while done.len() < MESSAGES && last_message.elapsed() < idle_limit {
        let mut batch = consumer.receive(16, Duration::from_secs(30)).await?;
        if batch.is_empty() {
            continue;
        }
        last_message = Instant::now();
        // One message needs longer: hide it for another minute, keep the
        // renewed handle (the old one is stale now), ack it afterwards.
        let mut slow = batch.pop();
        if let Some(m) = slow.as_mut() {
            let renewed = consumer
                .change_invisible_duration(&*m, Duration::from_secs(60))
                .await?;
            m.renew(renewed);
            extended += 1;
        }
        consumer.ack_batch(&batch).await?; // one request per broker
        if let Some(m) = slow {
            consumer.ack(&m).await?;
            batch.push(m);
        }
        for m in &batch {
            let body = String::from_utf8_lossy(&m.body);
            if body.starts_with("message ") {
                done.insert(body.into_owned());
            }
        }
    }

    consumer.shutdown().await?;
    let _ = producer.shutdown().await;
    println!(
        "received and acked {} of {MESSAGES} messages ({extended} with an extended invisible time) in {:.1?}",
        done.len(),
        started.elapsed()
    );
    if done.len() < MESSAGES {
        return Err(format!("only {} of {MESSAGES} messages arrived", done.len()).into());
    }
    Ok(())
}
