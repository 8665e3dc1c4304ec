//! The lite pull consumer as a `Stream` against the RocketMQ at
//! `NAMESRV_ADDR`: subscribe with the group rebalance, read messages one by
//! one (a slow reader slows pulling; the buffer stays bounded), commit
//! every 100 messages, stop after 30 s without messages.
//!
//! ```sh
//! NAMESRV_ADDR=127.0.0.1:9876 cargo run --example lite_pull_stream -- [topic]
//! ```
//!
//! Start several copies with the same group: they split the topic's
//! queues, and when one stops the others take its queues over from its
//! committed offsets.

use std::time::Duration;

use futures::StreamExt;
use rmq::LitePullConsumer;
use rmq::consumer_pull::ConsumeFrom;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let topic = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "rmq_example".to_owned());

    let consumer = LitePullConsumer::builder()
        .group("rmq_example_lite")
        .subscribe(topic.as_str(), "*")
        .consume_from(ConsumeFrom::FirstOffset) // for a group that has no offsets yet
        .auto_commit(false) // we commit ourselves
        .pull_threshold_for_all(1_000) // at most 1 000 messages buffered
        .start()
        .await?;
    println!("reading {:?}", consumer.assignment());

    let mut messages = consumer.stream();
    let mut read = 0u64;
    loop {
        let next = tokio::time::timeout(Duration::from_secs(30), messages.next()).await;
        let msg = match next {
            Err(_) => break,   // 30 s without a message
            Ok(None) => break, // the consumer was shut down
            Ok(Some(Err(e))) => {
                eprintln!("pull error: {e}"); // reported once; reading goes on
                continue;
            }
            Ok(Some(Ok(msg))) => msg,
        };
        println!(
            "{}#{} @{}: {}",
            msg.topic,
            msg.queue_id,
            msg.queue_offset,
            String::from_utf8_lossy(&msg.body)
        );
        read += 1;
        if read % 100 == 0 {
            consumer.commit().await?; // the offsets after the messages handed out
            println!(
                "{read} read, committed; buffer: {}",
                consumer.buffered().total
            );
        }
    }

    consumer.commit().await?;
    consumer.shutdown().await?; // stops pulling, persists, unregisters
    println!("{read} message(s) read");
    Ok(())
}
