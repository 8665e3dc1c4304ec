//! The common sends against the RocketMQ at `NAMESRV_ADDR`.
//!
//! ```sh
//! NAMESRV_ADDR=127.0.0.1:9876 cargo run --example producer -- [topic]
//! ```
//!
//! The topic (default `rmq_example`) is created by the broker on first send
//! when it has `autoCreateTopicEnable=true`.

use rmq::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let topic = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "rmq_example".to_owned());

    // Name servers come from NAMESRV_ADDR; every other setting is Java's default.
    let producer = Producer::builder()
        .group("rmq_example_producer")
        .start()
        .await?;

    // A plain send: waits for the broker to store the message.
    let sent = producer
        .send(
            Message::new(&topic, "order created")
                .with_tags("created")
                .with_keys(["order-42"])
                .with_property("region", "eu"),
        )
        .await?;
    println!(
        "sent {} to {} at offset {} ({:?})",
        sent.msg_id, sent.message_queue, sent.queue_offset, sent.status
    );

    // Ordered: all messages of one order go to the same queue, in order.
    for step in ["created", "paid", "shipped"] {
        let r = producer
            .send_with_selector(
                Message::new(&topic, step)
                    .with_tags(step)
                    .with_keys(["order-7"]),
                select_by_hash("order-7"),
            )
            .await?;
        println!("order-7 {step}: queue {}", r.message_queue.queue_id);
    }

    // Delayed: delay level 3 (10 s with the broker's default levels).
    let r = producer
        .send(Message::new(&topic, "reminder").with_delay_level(3))
        .await?;
    println!("delayed message {}", r.msg_id);

    // A batch: one request, stored contiguously in one queue.
    let batch = (0..10)
        .map(|i| Message::new(&topic, format!("batch item {i}")).with_tags("batch"))
        .collect();
    let r = producer.send_batch(batch).await?;
    println!("batch of 10 at offset {}: {}", r.queue_offset, r.msg_id);

    // Oneway: no answer awaited.
    producer
        .send_oneway(Message::new(&topic, "fire and forget"))
        .await?;

    // A failed send hands the message back for a retry later.
    match producer.send(Message::new("TBW102", "not allowed")).await {
        Ok(_) => println!("unexpected: sent to a reserved topic"),
        Err(e) => {
            // `rmq::Error` prints the whole cause chain; the message comes
            // back for a retry (`UnsentExt`, in the prelude).
            println!("refused as expected ({}): {e}", e.kind());
            let _message = e.into_message();
        }
    }

    let _ = producer.shutdown().await;
    Ok(())
}
