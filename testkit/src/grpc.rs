//! What the tests against the 5.x gRPC proxy share: the endpoint, typed topics, an orderly
//! (FIFO) subscription group, producers of either transport, a message with every field the
//! tests compare, and receiving a known set of messages with a [`SimpleConsumer`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use rmq_consumer_pull::{ReceivedMessage, SimpleConsumer};
use rmq_producer::{Message, Producer};
use rmq_protocol::Properties;

use crate::client::instance;
use crate::{broker, unique_name};

/// Why the proxy tests are ignored in the normal run.
pub const IGNORED: &str =
    "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x";

/// The smallest invisible time the proxy accepts for a receive (its
/// `minInvisibleTimeMillsForRecv`).
pub const INVISIBLE: Duration = Duration::from_secs(10);

/// The proxy's gRPC endpoint, `RMQ_PROXY_ENDPOINT`.
///
/// # Panics
///
/// When `RMQ_PROXY_ENDPOINT` is not set.
pub fn endpoint() -> String {
    std::env::var("RMQ_PROXY_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "RMQ_PROXY_ENDPOINT is not set: {IGNORED}; locally: \
             eval \"$(RMQ_PROXY=1 scripts/rocketmq-local.sh start)\""
        )
    })
}

/// A producer through the proxy (`.endpoint(..)`), group `<group_prefix>_<unique>`.
///
/// # Panics
///
/// When it does not start.
pub async fn grpc_producer(group_prefix: &str) -> Producer {
    Producer::builder()
        .group(unique_name(group_prefix))
        .endpoint(endpoint())
        .start()
        .await
        .expect("gRPC producer starts")
}

/// A remoting producer (`.namesrv_addr(..)`) of the proxy's broker, group
/// `<group_prefix>_<unique>`.
///
/// # Panics
///
/// When it does not start.
pub async fn remoting_producer(group_prefix: &str) -> Producer {
    Producer::builder()
        .group(unique_name(group_prefix))
        .namesrv_addr(broker().await.namesrv_addr.clone())
        .start()
        .await
        .expect("remoting producer starts")
}

/// Message `i` with every field the transports must carry: body `"<body> <i>"`, tags
/// `tag<i>`, two keys, and the user properties `user-a` (per message) and `user-b`
/// (non-ASCII).
pub fn fielded_message(topic: &str, body: &str, i: usize) -> Message {
    Message::new(topic, format!("{body} {i}"))
        .with_tags(format!("tag{i}"))
        .with_keys([format!("key-{i}"), format!("other-{i}")])
        .with_property("user-a", format!("value {i}"))
        .with_property("user-b", "ünïcode ✓")
}

/// The user properties (`user-*`) of a property map: what a producer set, without what the
/// broker and the proxy add.
pub fn user_properties(props: &Properties) -> BTreeMap<String, String> {
    props
        .iter()
        .filter(|(k, _)| k.starts_with("user-"))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// A fresh topic (4 queues) of a 5.x message type: `NORMAL`, `FIFO`, `DELAY`; routed when this
/// returns.
///
/// # Panics
///
/// When the topic cannot be created or routed.
pub async fn typed_topic(prefix: &str, message_type: &str) -> String {
    let topic = unique_name(prefix);
    let b = broker().await;
    let inst = instance("grpc-topics").await;
    crate::admin::create_typed_topic(
        inst.remoting(),
        &b.namesrv_addr,
        &b.broker_addr,
        &topic,
        4,
        message_type,
    )
    .await
    .unwrap_or_else(|e| panic!("typed topic {topic} created and routed: {e}"));
    inst.release().await;
    topic
}

/// A fresh subscription group that consumes in order
/// (`consumeMessageOrderly`: the proxy then delivers a message group's
/// next message only after the previous one is acked).
///
/// # Panics
///
/// When the group cannot be created.
pub async fn orderly_group(prefix: &str) -> String {
    let group = unique_name(prefix);
    let b = broker().await;
    let inst = instance("grpc-groups").await;
    crate::admin::create_orderly_group(inst.remoting(), &b.broker_addr, &group)
        .await
        .unwrap_or_else(|e| panic!("subscription group {group} created: {e}"));
    inst.release().await;
    group
}

/// Receives (and acks) until every id of `ids` came, within `secs`;
/// answers them by id. Other messages are acked and ignored.
///
/// # Panics
///
/// When not every id came in time, or a receive or ack fails for good.
pub async fn receive_ids(
    consumer: &SimpleConsumer,
    ids: &[String],
    secs: u64,
) -> HashMap<String, ReceivedMessage> {
    let mut got = HashMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while got.len() < ids.len() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "received {} of {} within {secs} s",
            got.len(),
            ids.len()
        );
        let batch = match consumer.receive(32, INVISIBLE).await {
            Ok(b) => b,
            Err(e) if e.is_retryable() => continue,
            Err(e) => panic!("receive: {e:?}"),
        };
        for m in batch {
            consumer.ack(&m).await.expect("ack");
            if ids.contains(&m.msg_id) {
                got.insert(m.msg_id.clone(), m);
            }
        }
    }
    got
}
