//! rmq in one minute: produce 1 000 messages, consume them with a push
//! consumer that fails a few on their first delivery (they come back through
//! `%RETRY%<group>`), print a summary and exit 0.
//!
//! ```sh
//! cargo run --example quickstart
//! ```
//!
//! Uses the RocketMQ at `NAMESRV_ADDR`; when that is unset it starts a local
//! one from Maven Central jars with `scripts/rocketmq-local.sh` (Java 8+ and
//! Maven needed) and stops it again at the end.

#[path = "support/local_rocketmq.rs"]
mod local_rocketmq;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use local_rocketmq::{Outcome, run_example};
use rmq::prelude::*;
use tokio::sync::Notify;

const MESSAGES: usize = 1_000;
/// Every `FAIL_EVERY`-th message fails its first delivery.
const FAIL_EVERY: usize = 100;

#[derive(Default)]
struct Tally {
    consumed: HashSet<String>,
    deliveries: usize,
    retried: usize,
}

#[tokio::main]
async fn main() -> Outcome {
    run_example(|namesrv| async move { run(&namesrv).await }).await
}

async fn run(namesrv: &str) -> Outcome {
    let started = Instant::now();
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("quickstart_{stamp}");
    let group = format!("quickstart_consumer_{stamp}");

    let producer = Producer::builder()
        .group("quickstart_producer")
        .namesrv_addr(namesrv)
        .start()
        .await?;
    // The first send creates the topic (the broker auto-creates it).
    producer
        .send(Message::new(&topic, "hello").with_tags("warmup"))
        .await?;

    let tally = Arc::new(Mutex::new(Tally::default()));
    let done = Arc::new(Notify::new());
    let listener = {
        let tally = tally.clone();
        let done = done.clone();
        listener_fn(move |msgs, _ctx| {
            let tally = tally.clone();
            let done = done.clone();
            Box::pin(async move {
                let mut t = tally.lock().unwrap_or_else(|e| e.into_inner());
                let mut result = ConsumeResult::Success;
                for m in msgs.iter() {
                    t.deliveries += 1;
                    let Some(n) = std::str::from_utf8(&m.body)
                        .ok()
                        .and_then(|b| b.strip_prefix("message "))
                        .and_then(|n| n.parse::<usize>().ok())
                    else {
                        continue; // the warm-up message
                    };
                    if m.reconsume_times > 0 {
                        t.retried += 1;
                    } else if n % FAIL_EVERY == 0 {
                        result = ConsumeResult::ReconsumeLater; // comes back via %RETRY%
                        continue;
                    }
                    t.consumed.insert(m.msg_id.clone());
                }
                if t.consumed.len() >= MESSAGES {
                    done.notify_one();
                }
                result
            })
        })
    };
    let consumer = PushConsumer::builder()
        .group(group)
        .namesrv_addr(namesrv)
        .consume_from(ConsumeFrom::FirstOffset)
        .subscribe(&topic, "*")
        .start(listener)
        .await?;

    for i in 0..MESSAGES {
        producer
            .send(Message::new(&topic, format!("message {i}")).with_keys([format!("k{i}")]))
            .await?;
    }
    println!(
        "produced {MESSAGES} messages to {topic} in {:.1?}",
        started.elapsed()
    );

    let waited = tokio::time::timeout(Duration::from_secs(120), done.notified()).await;
    consumer.shutdown().await?;
    let _ = producer.shutdown().await;

    let t = tally.lock().unwrap_or_else(|e| e.into_inner());
    println!(
        "consumed {} of {MESSAGES} (deliveries {}, retried {}), elapsed {:.1?}",
        t.consumed.len(),
        t.deliveries,
        t.retried,
        started.elapsed()
    );
    if waited.is_err() || t.consumed.len() < MESSAGES {
        return Err("not every message was consumed within 120 s".into());
    }
    Ok(())
}
