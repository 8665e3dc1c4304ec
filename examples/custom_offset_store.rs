//! A push consumer whose group offsets live in a SQLite file instead of the
//! broker: consume, stop, produce more, restart on the same file — the
//! restarted consumer resumes right after the last committed message, and
//! the broker never stores an offset for the group.
//!
//! ```sh
//! NAMESRV_ADDR=127.0.0.1:9876 cargo run --example custom_offset_store
//! ```
//!
//! The store is `sqlite_offset_store.rs` beside this file.

mod sqlite_offset_store;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmq::prelude::*;
use sqlite_offset_store::SqliteOffsetStore;
use tokio::sync::Notify;

const FIRST: usize = 20;
const SECOND: usize = 5;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("offsets_example_{stamp}");
    let group = format!("offsets_example_consumer_{stamp}");
    let db = std::env::temp_dir().join(format!("rmq-offsets-{stamp}.sqlite"));

    let producer = Producer::builder()
        .group("offsets_example_producer")
        .start()
        .await?;
    send(&producer, &topic, "first", FIRST).await?;

    // First run: reads everything from the start, commits into SQLite.
    let store = SqliteOffsetStore::open(&db, &group)?;
    let got = consume(store, &topic, &group, FIRST).await?;
    println!(
        "first run: {} messages ({} .. {})",
        got.len(),
        got[0],
        got[got.len() - 1]
    );

    send(&producer, &topic, "second", SECOND).await?;

    // Second run on the same file: only what came after the last commit.
    let store = SqliteOffsetStore::open(&db, &group)?;
    let got = consume(store.clone(), &topic, &group, SECOND).await?;
    println!(
        "restarted: {} messages ({} .. {})",
        got.len(),
        got[0],
        got[got.len() - 1]
    );
    if got.iter().any(|b| b.starts_with("first")) {
        return Err("the restarted consumer read a message it had committed".into());
    }
    let mut stored: Vec<_> = store.stored()?.into_iter().collect();
    stored.sort();
    for (mq, offset) in stored {
        println!("sqlite: {mq} -> {offset}");
    }
    let _ = producer.shutdown().await;
    std::fs::remove_file(&db).ok();
    Ok(())
}

async fn send(
    producer: &Producer,
    topic: &str,
    prefix: &str,
    n: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    for i in 0..n {
        producer
            .send(Message::new(topic, format!("{prefix}-{i}")))
            .await?;
    }
    Ok(())
}

/// Runs a push consumer on `store` until `want` messages arrived (60 s at
/// most), then shuts it down (which persists the offsets into SQLite).
async fn consume(
    store: SqliteOffsetStore,
    topic: &str,
    group: &str,
    want: usize,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let enough = Arc::new(Notify::new());
    let (sink, signal) = (got.clone(), enough.clone());
    let consumer = PushConsumer::builder()
        .group(group)
        .subscribe(topic, "*")
        .consume_from(ConsumeFrom::FirstOffset)
        .offset_store(store)
        .start(listener_fn(move |msgs, _ctx| {
            let (sink, signal) = (sink.clone(), signal.clone());
            Box::pin(async move {
                let mut got = sink.lock().unwrap_or_else(|e| e.into_inner());
                got.extend(
                    msgs.iter()
                        .map(|m| String::from_utf8_lossy(&m.body).into_owned()),
                );
                if got.len() >= want {
                    signal.notify_one();
                }
                ConsumeResult::Success
            })
        }))
        .await?;
    let waited = tokio::time::timeout(Duration::from_secs(60), enough.notified()).await;
    consumer.shutdown().await?;
    waited.map_err(|_| format!("fewer than {want} messages within 60 s"))?;
    let mut got = got.lock().unwrap_or_else(|e| e.into_inner()).clone();
    got.sort();
    Ok(got)
}
