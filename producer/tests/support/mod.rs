//! Shared helpers of the producer's end-to-end tests: the real broker, topic
//! creation, a producer per test, raw PULL_MESSAGE / GET_MAX_OFFSET.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use rmq_producer::{Message, Producer};
use rmq_protocol::header::{
    GetMaxOffsetRequestHeader, OffsetResponseHeader, PullMessageRequestHeader,
    PullMessageResponseHeader, pull_sys_flag,
};
use rmq_protocol::message::decode_messages;
use rmq_protocol::{MessageExt, RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{ClientOptions, RemotingClient};
use rmq_testkit::Broker;

/// Upper bound of one test (the first run may start the broker).
pub const TEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs `fut`, failing the test when it takes longer than `limit`.
pub use rmq_testkit::client::within_limit as within;

/// The test broker plus a raw remoting client for checks.
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
    /// A fresh topic with `queues` queues on the default broker.
    pub async fn topic(&self, prefix: &str, queues: i32) -> String {
        let topic = rmq_testkit::unique_name(prefix);
        self.topic_on(&topic, &self.broker.broker_addr, queues)
            .await;
        topic
    }

    /// Creates `topic` on the broker at `addr`.
    pub async fn topic_on(&self, topic: &str, addr: &str, queues: i32) {
        rmq_testkit::admin::create_topic(
            &self.remoting,
            &self.broker.namesrv_addr,
            addr,
            topic,
            queues,
        )
        .await
        .unwrap_or_else(|e| panic!("create topic {topic} on {addr}: {e}"));
    }

    /// A started producer with a fresh group on the test name server.
    pub async fn producer(&self) -> Producer {
        self.producer_with(|b| b).await
    }

    /// A started producer, its builder adjusted by `f`.
    pub async fn producer_with(
        &self,
        f: impl FnOnce(rmq_producer::ProducerBuilder) -> rmq_producer::ProducerBuilder,
    ) -> Producer {
        let builder = Producer::builder()
            .group(rmq_testkit::unique_name("pg"))
            .namesrv_addr(self.broker.namesrv_addr.clone());
        f(builder).start().await.expect("producer starts")
    }

    /// Pulls queue `queue_id` of `topic` from `addr`, from offset 0, until at
    /// least `want` messages arrived or `limit` passed.
    pub async fn pull_queue(
        &self,
        addr: &str,
        topic: &str,
        queue_id: i32,
        want: usize,
        limit: Duration,
    ) -> Vec<MessageExt> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut offset = 0i64;
        let mut out = Vec::new();
        loop {
            let header = PullMessageRequestHeader {
                consumer_group: "rmq_producer_test_reader".into(),
                topic: topic.into(),
                queue_id,
                queue_offset: offset,
                max_msg_nums: 32,
                sys_flag: pull_sys_flag::build(false, false, true, false, false),
                commit_offset: 0,
                suspend_timeout_millis: 0,
                subscription: Some("*".into()),
                sub_version: now_ms(),
                expression_type: Some("TAG".into()),
                max_msg_bytes: None,
                broker_name: None,
            };
            let request = RemotingCommand::request(RequestCode::PULL_MESSAGE, &header);
            let response = self
                .remoting
                .invoke(addr, request, Duration::from_secs(10))
                .await
                .expect("pull");
            let code = response.response_code();
            let head: PullMessageResponseHeader = response.decode_header().expect("pull header");
            if code == ResponseCode::SUCCESS {
                let body = response.body.clone();
                let msgs = decode_messages(&body).expect("decode pulled messages");
                out.extend(msgs);
                offset = head.next_begin_offset;
                continue;
            }
            if code == ResponseCode::PULL_OFFSET_MOVED
                || code == ResponseCode::PULL_RETRY_IMMEDIATELY
            {
                offset = head.next_begin_offset;
            }
            if out.len() >= want || tokio::time::Instant::now() >= deadline {
                return out;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Pulls queues `0..queues` of `topic` until `want` messages in total.
    pub async fn pull_topic(&self, topic: &str, queues: i32, want: usize) -> Vec<MessageExt> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut all = Vec::new();
            for q in 0..queues {
                let got = self
                    .pull_queue(&self.broker.broker_addr, topic, q, 0, Duration::ZERO)
                    .await;
                all.extend(got);
            }
            if all.len() >= want || tokio::time::Instant::now() >= deadline {
                return all;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The max offset of a queue (messages written so far).
    pub async fn max_offset(&self, addr: &str, topic: &str, queue_id: i32) -> i64 {
        let header = GetMaxOffsetRequestHeader {
            topic: topic.into(),
            queue_id,
            committed: Some(true),
            broker_name: None,
        };
        let request = RemotingCommand::request(RequestCode::GET_MAX_OFFSET, &header);
        let response = self
            .remoting
            .invoke_expect(
                addr,
                request,
                Duration::from_secs(10),
                &[ResponseCode::SUCCESS],
            )
            .await
            .expect("max offset");
        let head: OffsetResponseHeader = response.decode_header().expect("offset header");
        head.offset
    }
}

pub use rmq_client_core::now_ms;

/// A message of `topic` with `body` (helper for short tests).
pub fn msg(topic: &str, body: impl Into<bytes::Bytes>) -> Message {
    Message::new(topic, body)
}
