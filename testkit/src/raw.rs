//! Raw broker calls for the transport's own tests: sends and pulls built from the typed headers
//! and put on the wire through a bare [`RemotingClient`], no client instance in between.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use rmq_protocol::header::{
    GetMaxOffsetRequestHeader, OffsetResponseHeader, PullMessageRequestHeader,
    PullMessageResponseHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
    pull_sys_flag,
};
use rmq_protocol::message::encode_properties;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{ClientOptions, RemotingClient};

/// Bound of one raw call.
pub const CALL: Duration = Duration::from_secs(10);

/// A bare remoting client and the addresses of the test broker.
#[derive(Debug)]
pub struct RawEnv {
    /// The client every raw call goes through.
    pub client: RemotingClient,
    /// Name server address, `host:port`.
    pub namesrv: String,
    /// The test broker's address (broker-a, even when the cluster has a second broker).
    pub broker: String,
    /// The test broker's name.
    pub broker_name: String,
}

impl RawEnv {
    /// Connects to the test broker (started once per process) and waits until the name server
    /// routes `TBW102`, i.e. a broker registered.
    ///
    /// # Panics
    ///
    /// When there is no broker or no route within [`CALL`].
    pub async fn new() -> RawEnv {
        let broker = crate::broker().await;
        let namesrv = broker.namesrv_addr.clone();
        let client = RemotingClient::new(ClientOptions::default());
        crate::admin::wait_for_route(&client, &namesrv, "TBW102", CALL)
            .await
            .expect("the name server routes TBW102 once a broker registered");
        RawEnv {
            client,
            namesrv,
            broker: broker.broker_addr.clone(),
            broker_name: broker.broker_name.clone(),
        }
    }
}

impl RawEnv {
    /// A fresh topic with `queues` queues on the test broker, routed when this returns.
    ///
    /// # Panics
    ///
    /// When the topic cannot be created.
    pub async fn topic(&self, prefix: &str, queues: i32) -> String {
        let topic = crate::unique_name(prefix);
        crate::admin::create_topic(&self.client, &self.namesrv, &self.broker, &topic, queues)
            .await
            .unwrap_or_else(|e| panic!("create topic {topic}: {e}"));
        topic
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// What a raw send puts on the wire.
#[derive(Debug)]
pub struct RawSend<'a> {
    /// Topic.
    pub topic: &'a str,
    /// Queue id.
    pub queue_id: i32,
    /// Message system flags (compression, transaction type).
    pub sys_flag: i32,
    /// The user flag.
    pub flag: i32,
    /// Born timestamp, ms.
    pub born_timestamp: i64,
    /// Message properties.
    pub properties: HashMap<String, String>,
    /// Body.
    pub body: Bytes,
}

/// A SEND_MESSAGE_V2 request for `s` (producer group `rmq_raw_producer`).
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

/// Sends `s` to the test broker.
///
/// # Panics
///
/// When the broker does not store it.
pub async fn raw_send(env: &RawEnv, s: &RawSend<'_>) -> SendMessageResponseHeader {
    let response = env
        .client
        .invoke_expect(&env.broker, send_request(s), CALL, &[ResponseCode::SUCCESS])
        .await
        .expect("the broker stores the message");
    response.decode_header().expect("send response header")
}

/// The header of a plain pull of `max` messages of queue `queue_id` of `topic` from `offset`:
/// subscription `*` (TAG) sent along, no long polling, no offset commit, no broker name. Callers
/// change what they need with struct update syntax.
pub fn pull_header(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max: i32,
) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: max,
        sys_flag: pull_sys_flag::SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: None,
    }
}

/// A PULL_MESSAGE request of `max` messages from `offset`, long-polling `suspend_ms` when > 0.
pub fn pull_request(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max: i32,
    suspend_ms: i64,
) -> RemotingCommand {
    let header = PullMessageRequestHeader {
        sys_flag: pull_sys_flag::SUBSCRIPTION
            | if suspend_ms > 0 {
                pull_sys_flag::SUSPEND
            } else {
                0
            },
        suspend_timeout_millis: suspend_ms,
        ..pull_header(group, topic, queue_id, offset, max)
    };
    RemotingCommand::request(RequestCode::PULL_MESSAGE, &header)
}

/// One raw pull from the test broker (no long polling): the response code, header and body.
///
/// # Panics
///
/// When the pull is not answered or its header does not decode.
pub async fn raw_pull(
    env: &RawEnv,
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

/// The committed max offset of queue `queue_id` of `topic` on the broker at `addr` (raw
/// GET_MAX_OFFSET without a broker name: messages written so far).
///
/// # Panics
///
/// When the query fails.
pub async fn max_offset(client: &RemotingClient, addr: &str, topic: &str, queue_id: i32) -> i64 {
    let header = GetMaxOffsetRequestHeader {
        topic: topic.into(),
        queue_id,
        committed: Some(true),
        broker_name: None,
    };
    let request = RemotingCommand::request(RequestCode::GET_MAX_OFFSET, &header);
    let response = client
        .invoke_expect(addr, request, CALL, &[ResponseCode::SUCCESS])
        .await
        .expect("max offset");
    let head: OffsetResponseHeader = response.decode_header().expect("offset header");
    head.offset
}
