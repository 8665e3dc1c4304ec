//! Explicit pulls against the RocketMQ at `NAMESRV_ADDR`: read every queue
//! of a topic from the group's committed offset (else the queue's first
//! offset) to its end, record the new offsets, then wait for one more
//! message with a long poll.
//!
//! ```sh
//! NAMESRV_ADDR=127.0.0.1:9876 cargo run --example pull_explicit -- [topic]
//! ```
//!
//! Send something first, e.g. with the `producer` example (default topic
//! `rmq_example`).

use std::time::Duration;

use rmq::{PullConsumer, PullStatus};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let topic = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "rmq_example".to_owned());

    // Name servers come from NAMESRV_ADDR; offsets are kept by the broker
    // for the group (clustering, the default).
    let pull = PullConsumer::builder()
        .group("rmq_example_pull")
        .start()
        .await?;

    let queues = pull.fetch_subscribe_queues(&topic).await?;
    for queue in &queues {
        // Where this group stopped last time, else the start of the queue.
        let mut offset = match pull.fetch_consume_offset(queue, true).await? {
            Some(offset) => offset,
            None => pull.min_offset(queue).await?,
        };
        loop {
            let result = pull.pull(queue, "*", offset, 32).await?;
            for msg in &result.messages {
                println!(
                    "{queue} @{}: {}",
                    msg.queue_offset,
                    String::from_utf8_lossy(&msg.body)
                );
            }
            match result.status {
                PullStatus::Found | PullStatus::NoMatchedMsg => {}
                PullStatus::OffsetIllegal => println!("{queue}: offset {offset} moved"),
                _ => break, // nothing new
            }
            offset = result.next_begin_offset;
        }
        // Remember how far we got (persisted within 5 s and at shutdown).
        pull.update_consume_offset(queue, offset)?;
    }

    // Long polling: the broker answers as soon as a message arrives in the
    // first queue, or after 10 s with nothing.
    if let Some(queue) = queues.first() {
        let offset = pull.fetch_consume_offset(queue, false).await?.unwrap_or(0);
        println!("waiting up to 10 s for a new message in {queue} ...");
        let result = pull
            .pull_blocking(queue, "*", offset, 32, Duration::from_secs(10))
            .await?;
        println!("{:?}: {} message(s)", result.status, result.messages.len());
        if !result.messages.is_empty() {
            pull.update_consume_offset(queue, result.next_begin_offset)?;
        }
    }

    pull.shutdown().await?; // persists the offsets, unregisters
    Ok(())
}
