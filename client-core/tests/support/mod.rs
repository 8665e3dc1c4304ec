//! Shared helpers of the client-core integration tests (real broker via
//! rmq-testkit).
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmq_client_core::{ClientConfig, ClientInstance, ConsumerHandle};
use rmq_protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ExpressionType, MessageModel, SubscriptionData,
};
use rmq_protocol::header::SendMessageRequestHeaderV2;
use rmq_protocol::message::{encode_properties, property};
use tokio::sync::Notify;

/// Runs `f`, failing the test when it takes longer than `secs`.
pub async fn within<F: Future>(secs: u64, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(secs), f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: did not finish within {secs} s"),
    }
}

/// Polls `check` every 200 ms until it returns true; panics after `secs`.
/// Used only where the broker offers no event to await.
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
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A config for the test broker with a unique instance name.
pub async fn config(tag: &str) -> ClientConfig {
    let broker = rmq_testkit::broker().await;
    ClientConfig::builder()
        .namesrv_addr(&broker.namesrv_addr)
        .instance_name(rmq_testkit::unique_name(tag))
        .build()
        .expect("valid config")
}

/// A fresh instance (own client id) on the test broker.
pub async fn instance(tag: &str) -> ClientInstance {
    ClientInstance::get_or_start(config(tag).await).expect("instance starts")
}

/// Creates `topic` with `queues` queues on the default test broker and waits
/// until the name server routes it.
pub async fn create_topic(instance: &ClientInstance, topic: &str, queues: i32) {
    let broker = rmq_testkit::broker().await;
    create_topic_on(instance, &broker.broker_addr, topic, queues).await;
}

/// Creates `topic` on the broker at `broker_addr`.
pub async fn create_topic_on(
    instance: &ClientInstance,
    broker_addr: &str,
    topic: &str,
    queues: i32,
) {
    let broker = rmq_testkit::broker().await;
    rmq_testkit::admin::create_topic(
        instance.remoting(),
        &broker.namesrv_addr,
        broker_addr,
        topic,
        queues,
    )
    .await
    .expect("topic created");
}

/// A minimal consumer: one `*` subscription; counts and signals
/// NOTIFY_CONSUMER_IDS_CHANGED.
#[derive(Debug)]
pub struct TestConsumer {
    pub group: String,
    pub topic: String,
    pub notified: AtomicUsize,
    pub notify: Notify,
}

impl TestConsumer {
    pub fn new(group: &str, topic: &str) -> Arc<Self> {
        Arc::new(TestConsumer {
            group: group.to_owned(),
            topic: topic.to_owned(),
            notified: AtomicUsize::new(0),
            notify: Notify::new(),
        })
    }

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

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A SEND_MESSAGE_V2 header for `queue_id` with a `UNIQ_KEY` and tag `t1`.
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
        born_timestamp: now_ms(),
        flag: 0,
        properties: Some(encode_properties(&props)),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: Some(broker_name.into()),
    }
}
