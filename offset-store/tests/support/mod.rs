//! Shared helpers of the offset-store integration tests (real broker via
//! rmq-testkit).
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_client_core::{ClientConfig, ClientInstance, ConsumerHandle};
use rmq_protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ExpressionType, MessageModel, SubscriptionData,
};

/// Runs `f`, failing the test when it takes longer than `secs`.
pub async fn within<F: Future>(secs: u64, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(secs), f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: did not finish within {secs} s"),
    }
}

/// Polls `check` every 100 ms until it returns true; panics after `secs`.
/// Used only where the broker offers no event to await (oneway writes).
pub async fn poll_until<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if check().await {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: not true after {secs} s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A fresh instance (own client id) on the test broker.
pub async fn instance(tag: &str) -> ClientInstance {
    let broker = rmq_testkit::broker().await;
    let config = ClientConfig::builder()
        .namesrv_addr(&broker.namesrv_addr)
        .instance_name(rmq_testkit::unique_name(tag))
        .build()
        .expect("valid config");
    ClientInstance::get_or_start(config).expect("instance starts")
}

/// Creates `topic` with `queues` queues on the test broker; waits for its route.
pub async fn create_topic(instance: &ClientInstance, topic: &str, queues: i32) {
    let broker = rmq_testkit::broker().await;
    rmq_testkit::admin::create_topic(
        instance.remoting(),
        &broker.namesrv_addr,
        &broker.broker_addr,
        topic,
        queues,
    )
    .await
    .expect("topic created");
}

/// A minimal clustering consumer (one `*` subscription): its heartbeat
/// creates the subscription group, which 5.x brokers need before they store
/// offsets.
#[derive(Debug)]
pub struct TestConsumer {
    group: String,
    topic: String,
}

impl TestConsumer {
    pub fn new(group: &str, topic: &str) -> Arc<Self> {
        Arc::new(TestConsumer {
            group: group.to_owned(),
            topic: topic.to_owned(),
        })
    }
}

impl ConsumerHandle for TestConsumer {
    fn consumer_data(&self) -> ConsumerData {
        ConsumerData {
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            consume_type: ConsumeType::ConsumePassively,
            group_name: self.group.clone(),
            message_model: MessageModel::Clustering,
            subscription_data_set: vec![SubscriptionData::build(
                self.topic.clone(),
                "*",
                ExpressionType::Tag,
                1,
            )],
            unit_mode: false,
        }
    }
}

/// An instance with a registered consumer of a fresh `queues`-queue topic:
/// (instance, topic, group).
pub async fn setup(tag: &str, queues: i32) -> (ClientInstance, String, String) {
    let i = instance(tag).await;
    let topic = rmq_testkit::unique_name(&format!("{tag}_t"));
    let group = rmq_testkit::unique_name(&format!("GID_{tag}"));
    create_topic(&i, &topic, queues).await;
    i.route(&topic).await.expect("route");
    i.register_consumer(&group, TestConsumer::new(&group, &topic))
        .await
        .expect("consumer registered");
    (i, topic, group)
}
