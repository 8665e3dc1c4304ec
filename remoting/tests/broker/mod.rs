//! Shared helpers for the real-broker tests: raw send / pull built from the
//! typed headers, and broker discovery through the name server.

#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use rmq_protocol::header::{
    PullMessageRequestHeader, PullMessageResponseHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader, pull_sys_flag,
};
use rmq_protocol::message::encode_properties;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{ClientOptions, RemotingClient};

pub const CALL: Duration = Duration::from_secs(10);

pub struct Env {
    pub client: RemotingClient,
    pub namesrv: String,
    pub broker: String,
    pub broker_name: String,
}

/// Connects to the test broker (started once per process by the test kit):
/// broker-a, even when the cluster has a second broker.
pub async fn env() -> Env {
    let broker = rmq_testkit::broker().await;
    let namesrv = broker.namesrv_addr.clone();
    let client = RemotingClient::new(ClientOptions::default());
    rmq_testkit::admin::wait_for_route(&client, &namesrv, "TBW102", CALL)
        .await
        .expect("the name server routes TBW102 once a broker registered");
    Env {
        client,
        namesrv,
        broker: broker.broker_addr.clone(),
        broker_name: broker.broker_name.clone(),
    }
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// What a raw send puts on the wire.
pub struct RawSend<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub sys_flag: i32,
    pub flag: i32,
    pub born_timestamp: i64,
    pub properties: HashMap<String, String>,
    pub body: Bytes,
}

pub fn send_request(s: &RawSend<'_>) -> RemotingCommand {
    let header = SendMessageRequestHeaderV2 {
        producer_group: "rmq_raw_producer".into(),
        topic: s.topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: s.queue_id,
        sys_flag: s.sys_flag,
        born_timestamp: s.born_timestamp,
        flag: s.flag,
        properties: Some(encode_properties(&s.properties)),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, &header).with_body(s.body.clone())
}

pub async fn raw_send(env: &Env, s: &RawSend<'_>) -> SendMessageResponseHeader {
    let response = env
        .client
        .invoke_expect(&env.broker, send_request(s), CALL, &[ResponseCode::SUCCESS])
        .await
        .expect("the broker stores the message");
    response.decode_header().expect("send response header")
}

pub fn pull_request(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max: i32,
    suspend_ms: i64,
) -> RemotingCommand {
    let header = PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: max,
        sys_flag: pull_sys_flag::SUBSCRIPTION
            | if suspend_ms > 0 {
                pull_sys_flag::SUSPEND
            } else {
                0
            },
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::PULL_MESSAGE, &header)
}

/// One raw pull (no long polling): the response code, header and body.
pub async fn raw_pull(
    env: &Env,
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max: i32,
) -> (ResponseCode, PullMessageResponseHeader, Bytes) {
    let response = env
        .client
        .invoke(
            &env.broker,
            pull_request(group, topic, queue_id, offset, max, 0),
            CALL,
        )
        .await
        .expect("pull answered");
    let header = response.decode_header().expect("pull response header");
    (response.response_code(), header, response.body)
}
