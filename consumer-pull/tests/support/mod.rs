//! Shared helpers of the pull consumers' end-to-end tests: the real broker,
//! topic creation, a producer, bounded waits.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::time::Duration;

use rmq_consumer_pull::{MessageExt, MessageQueue};
use rmq_producer::{Message, Producer};
use rmq_remoting::{ClientOptions, RemotingClient};
use rmq_testkit::Broker;

/// Upper bound of one test (the first run may start the broker).
pub const TEST_TIMEOUT: Duration = Duration::from_secs(240);

/// Runs `fut`, failing the test when it takes longer than `limit`.
pub use rmq_testkit::client::within_limit as within;

/// The test broker plus a raw remoting client for admin calls.
pub struct Env {
    pub broker: &'static Broker,
    pub remoting: RemotingClient,
}

pub async fn env() -> Env {
    let broker = rmq_testkit::broker().await;
    Env {
        broker,
        remoting: RemotingClient::new(ClientOptions::default()),
    }
}

impl Env {
    pub fn namesrv(&self) -> String {
        self.broker.namesrv_addr.clone()
    }

    /// A fresh topic with `queues` queues on the default broker.
    pub async fn topic(&self, prefix: &str, queues: i32) -> String {
        let topic = rmq_testkit::unique_name(prefix);
        rmq_testkit::admin::create_topic(
            &self.remoting,
            &self.broker.namesrv_addr,
            &self.broker.broker_addr,
            &topic,
            queues,
        )
        .await
        .unwrap_or_else(|e| panic!("create topic {topic}: {e}"));
        topic
    }

    /// The queues of `topic` on the default broker, sorted.
    pub fn queues(&self, topic: &str, queues: i32) -> Vec<MessageQueue> {
        (0..queues)
            .map(|q| MessageQueue::new(topic, self.broker.broker_name.clone(), q))
            .collect()
    }

    /// A started producer with a fresh group.
    pub async fn producer(&self) -> Producer {
        Producer::builder()
            .group(rmq_testkit::unique_name("pg"))
            .namesrv_addr(self.namesrv())
            .start()
            .await
            .expect("producer starts")
    }
}

/// Sends `count` messages with bodies `"{prefix}-{i}"` in batches of up to
/// 100 (spread over the queues by the producer), returns the bodies.
pub async fn send_batches(
    producer: &Producer,
    topic: &str,
    prefix: &str,
    count: usize,
) -> Vec<String> {
    let bodies: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    for chunk in bodies.chunks(100) {
        let msgs = chunk
            .iter()
            .map(|b| Message::new(topic, b.clone()))
            .collect();
        producer.send_batch(msgs).await.expect("send batch");
    }
    bodies
}

/// Sends `count` messages with bodies `"{prefix}-{i}"` to one queue.
pub async fn send_to(
    producer: &Producer,
    queue: &MessageQueue,
    prefix: &str,
    count: usize,
) -> Vec<String> {
    let bodies: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    for chunk in bodies.chunks(50) {
        for b in chunk {
            producer
                .send_to_queue(Message::new(queue.topic.as_str(), b.clone()), queue)
                .await
                .expect("send to queue");
        }
    }
    bodies
}

/// The body of a message as text.
pub fn body(m: &MessageExt) -> String {
    String::from_utf8_lossy(&m.body).into_owned()
}

/// Counts bodies; panics naming duplicates.
pub fn count_once(received: &[String]) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for b in received {
        *counts.entry(b.clone()).or_default() += 1;
    }
    counts
}
