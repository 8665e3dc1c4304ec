//! What the gRPC (proxy) tests share: the endpoint, typed topics, a FIFO
//! (orderly) subscription group, and receiving a known set of messages.
#![allow(dead_code)]

use std::collections::HashMap;
use std::time::Duration;

use rmq_consumer_pull::{ReceivedMessage, SimpleConsumer};
use rmq_protocol::header::CreateTopicRequestHeader;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_testkit::client::instance;
use rmq_testkit::{broker, unique_name};

pub(crate) const IGNORED: &str =
    "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x";

/// The smallest invisible time the proxy accepts for a receive (its
/// `minInvisibleTimeMillsForRecv`).
pub(crate) const INVISIBLE: Duration = Duration::from_secs(10);

pub(crate) fn endpoint() -> String {
    std::env::var("RMQ_PROXY_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "RMQ_PROXY_ENDPOINT is not set: {IGNORED}; locally: \
             eval \"$(RMQ_PROXY=1 scripts/rocketmq-local.sh start)\""
        )
    })
}

/// A fresh topic (4 queues) of a 5.x message type: `NORMAL`, `FIFO`, `DELAY`.
pub(crate) async fn typed_topic(prefix: &str, message_type: &str) -> String {
    let topic = unique_name(prefix);
    let b = broker().await;
    let inst = instance("grpc-topics").await;
    let mut header = CreateTopicRequestHeader::new(topic.as_str(), 4);
    header.attributes = Some(format!("+message.type={message_type}"));
    let request = RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, &header);
    inst.remoting()
        .invoke_expect(
            &b.broker_addr,
            request,
            Duration::from_secs(5),
            &[ResponseCode::SUCCESS],
        )
        .await
        .expect("topic created");
    rmq_testkit::admin::wait_for_route(
        inst.remoting(),
        &b.namesrv_addr,
        &topic,
        Duration::from_secs(15),
    )
    .await
    .expect("topic routed");
    inst.release().await;
    topic
}

/// A fresh subscription group that consumes in order
/// (`consumeMessageOrderly`: the proxy then delivers a message group's
/// next message only after the previous one is acked).
pub(crate) async fn orderly_group(prefix: &str) -> String {
    let group = unique_name(prefix);
    let b = broker().await;
    let inst = instance("grpc-groups").await;
    // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), body: Java SubscriptionGroupConfig.
    let body = serde_json::json!({
        "groupName": group,
        "consumeEnable": true,
        "consumeFromMinEnable": true,
        "consumeBroadcastEnable": true,
        "consumeMessageOrderly": true,
        "retryQueueNums": 1,
        "retryMaxTimes": 16,
        "brokerId": 0,
        "whichBrokerWhenConsumeSlowly": 1,
        "notifyConsumerIdsChangedEnable": true,
    });
    let request = RemotingCommand::new_request(RequestCode(200)).with_body(body.to_string());
    inst.remoting()
        .invoke_expect(
            &b.broker_addr,
            request,
            Duration::from_secs(5),
            &[ResponseCode::SUCCESS],
        )
        .await
        .expect("subscription group created");
    inst.release().await;
    group
}

/// Receives (and acks) until every id of `ids` came, within `secs`;
/// answers them by id. Other messages are acked and ignored.
pub(crate) async fn receive_ids(
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
