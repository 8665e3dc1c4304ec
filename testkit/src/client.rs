//! Helpers for the tests of `rmq-client-core` and the crates above it:
//! bounded waits, a fresh [`ClientInstance`] on the test broker, topic
//! creation and the smallest [`ConsumerHandle`].
//!
//! (`rmq-client-core`'s integration tests use it too: they link the same
//! build of the crate as this module; only its unit tests could not.)

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmq_client_core::{ClientConfig, ClientInstance, ConsumerHandle};
use rmq_protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ExpressionType, MessageModel, SubscriptionData,
};
use rmq_protocol::header::SendMessageRequestHeaderV2;
use rmq_protocol::message::{encode_properties, property};
use tokio::sync::Notify;

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
    crate::wait::within(limit, fut).await
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

/// A config for the test broker (started if needed) with a unique instance
/// name from `tag`.
///
/// # Panics
///
/// When the config is invalid.
pub async fn config(tag: &str) -> ClientConfig {
    let broker = crate::broker().await;
    ClientConfig::builder()
        .namesrv_addr(&broker.namesrv_addr)
        .instance_name(crate::unique_name(tag))
        .build()
        .expect("valid config")
}

/// A fresh instance (own client id: a unique instance name from `tag`) on
/// the test broker, which is started if needed.
///
/// # Panics
///
/// When the config is invalid or the instance does not start.
pub async fn instance(tag: &str) -> ClientInstance {
    ClientInstance::get_or_start(config(tag).await).expect("instance starts")
}

/// Creates `topic` with `queues` queues on the test broker (through the
/// instance's remoting client) and waits for its route.
///
/// # Panics
///
/// When the topic cannot be created.
pub async fn create_topic(instance: &ClientInstance, topic: &str, queues: i32) {
    let broker = crate::broker().await;
    create_topic_on(instance, &broker.broker_addr, topic, queues).await;
}

/// Creates `topic` with `queues` queues on the broker at `broker_addr` and
/// waits for its route.
///
/// # Panics
///
/// When the topic cannot be created.
pub async fn create_topic_on(
    instance: &ClientInstance,
    broker_addr: &str,
    topic: &str,
    queues: i32,
) {
    let broker = crate::broker().await;
    crate::admin::create_topic(
        instance.remoting(),
        &broker.namesrv_addr,
        broker_addr,
        topic,
        queues,
    )
    .await
    .expect("topic created");
}

/// A fresh instance (unique instance name from `tag`) with a registered [`TestConsumer`] of a
/// fresh `queues`-queue topic: `(instance, topic, group)`. The topic is routed and the group
/// exists on the broker when this returns.
///
/// # Panics
///
/// When the topic cannot be created or routed, or the consumer not registered.
pub async fn consumer_setup(tag: &str, queues: i32) -> (ClientInstance, String, String) {
    let i = instance(tag).await;
    let topic = crate::unique_name(&format!("{tag}_t"));
    let group = crate::unique_name(&format!("GID_{tag}"));
    create_topic(&i, &topic, queues).await;
    i.route(&topic).await.expect("route");
    i.register_consumer(&group, TestConsumer::new(&group, &topic))
        .await
        .expect("consumer registered");
    (i, topic, group)
}

/// The smallest consumer an instance can register: a clustering consumer
/// with one `*` subscription. Its heartbeat creates the subscription group,
/// which 5.x brokers need before they store offsets. It counts and signals
/// NOTIFY_CONSUMER_IDS_CHANGED.
#[derive(Debug)]
pub struct TestConsumer {
    group: String,
    topic: String,
    notified: AtomicUsize,
    notify: Notify,
}

impl TestConsumer {
    /// A consumer of `topic` in `group`.
    pub fn new(group: &str, topic: &str) -> Arc<Self> {
        Arc::new(TestConsumer {
            group: group.to_owned(),
            topic: topic.to_owned(),
            notified: AtomicUsize::new(0),
            notify: Notify::new(),
        })
    }

    /// How many NOTIFY_CONSUMER_IDS_CHANGED arrived.
    pub fn count(&self) -> usize {
        self.notified.load(Ordering::SeqCst)
    }

    /// Waits until more than `seen` notifications arrived.
    pub async fn wait_past(&self, seen: usize) {
        loop {
            let notified = self.notify.notified();
            if self.count() > seen {
                return;
            }
            notified.await;
        }
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

    fn notify_ids_changed(&self) {
        self.notified.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// A SEND_MESSAGE_V2 header for `queue_id` of `topic` on `broker_name`, with
/// a `UNIQ_KEY` of `uniq` and the tag `t1` (for tests that send through the
/// typed calls directly).
pub fn send_header(
    topic: &str,
    queue_id: i32,
    uniq: &str,
    broker_name: &str,
) -> SendMessageRequestHeaderV2 {
    let mut props = std::collections::HashMap::new();
    props.insert(property::UNIQ_KEY.to_owned(), uniq.to_owned());
    props.insert(property::TAGS.to_owned(), "t1".to_owned());
    SendMessageRequestHeaderV2 {
        producer_group: "PID_client_core_tests".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: rmq_client_core::now_ms(),
        flag: 0,
        properties: Some(encode_properties(&props)),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: Some(broker_name.into()),
    }
}
