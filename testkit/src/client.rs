//! Helpers for tests of the crates above `rmq-client-core`: bounded waits, a
//! fresh [`ClientInstance`] on the test broker, topic creation and the
//! smallest [`ConsumerHandle`].
//!
//! (`rmq-client-core`'s own tests keep their copies: this module depends on
//! it, so its tests would see a second build of its types.)

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_client_core::{ClientConfig, ClientInstance, ConsumerHandle};
use rmq_protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ExpressionType, MessageModel, SubscriptionData,
};

/// Runs `f`, failing the test when it takes longer than `secs` seconds.
///
/// # Panics
///
/// When `f` does not finish in time (the message names `what`).
pub async fn within<F: Future>(secs: u64, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(secs), f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: did not finish within {secs} s"),
    }
}

/// Runs `fut`, failing the test when it takes longer than `limit` (the
/// whole-test bound of the end-to-end suites).
///
/// # Panics
///
/// When `fut` does not finish in time.
pub async fn within_limit<F: Future>(limit: Duration, fut: F) -> F::Output {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("test did not finish within {limit:?}"),
    }
}

/// Polls `check` every 100 ms until it returns true. Only for what the
/// broker offers no event to await (oneway writes, consumer lists).
///
/// # Panics
///
/// When `check` is still false after `secs` seconds (the message names
/// `what`).
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

/// A fresh instance (own client id: a unique instance name from `tag`) on
/// the test broker, which is started if needed.
///
/// # Panics
///
/// When the config is invalid or the instance does not start.
pub async fn instance(tag: &str) -> ClientInstance {
    let broker = crate::broker().await;
    let config = ClientConfig::builder()
        .namesrv_addr(&broker.namesrv_addr)
        .instance_name(crate::unique_name(tag))
        .build()
        .expect("valid config");
    ClientInstance::get_or_start(config).expect("instance starts")
}

/// Creates `topic` with `queues` queues on the test broker (through the
/// instance's remoting client) and waits for its route.
///
/// # Panics
///
/// When the topic cannot be created.
pub async fn create_topic(instance: &ClientInstance, topic: &str, queues: i32) {
    let broker = crate::broker().await;
    crate::admin::create_topic(
        instance.remoting(),
        &broker.namesrv_addr,
        &broker.broker_addr,
        topic,
        queues,
    )
    .await
    .expect("topic created");
}

/// The smallest consumer an instance can register: a clustering consumer
/// with one `*` subscription. Its heartbeat creates the subscription group,
/// which 5.x brokers need before they store offsets.
#[derive(Debug)]
pub struct TestConsumer {
    group: String,
    topic: String,
}

impl TestConsumer {
    /// A consumer of `topic` in `group`.
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
