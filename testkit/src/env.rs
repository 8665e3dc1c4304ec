//! [`Env`]: the test broker, an admin client instance for broker-side checks, topics, producers,
//! sends and raw reads of what the broker stored.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmq_client_core::{ClientInstance, PullStatus, now_ms};
use rmq_producer::{Message, Producer, ProducerBuilder};
use rmq_protocol::header::{
    PullMessageRequestHeader, PullMessageResponseHeader, QueryConsumerOffsetRequestHeader,
};
use rmq_protocol::message::decode_messages;
use rmq_protocol::{MessageExt, MessageQueue, RemotingCommand, RequestCode, ResponseCode};

use crate::Broker;

/// Most messages one batch send carries in [`Env::send_spread`] and [`send_batches`].
const BATCH: usize = 100;
/// [`Env::send_spread`] uses at least this many batches when it can, so that small sends still
/// reach every queue of a topic.
const MIN_BATCHES: usize = 16;
/// Batch sends in flight at once in [`Env::send_spread`].
const IN_FLIGHT: usize = 4;
use crate::raw::{CALL, pull_header};

/// One message a test sent: its index in the test's sequence and where the broker stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Index given to the message builder.
    pub index: usize,
    /// `UNIQ_KEY` (what the consumer sees as `msg_id`).
    pub msg_id: String,
    /// Queue it was stored in.
    pub queue: MessageQueue,
    /// Its offset in that queue.
    pub queue_offset: i64,
}

/// The max offset (next offset to be written) of each queue `0..queues` once `sent` are stored:
/// one past the highest offset sent to it, 0 for a queue none went to. Exact as soon as the sends
/// are acknowledged, where the broker's GET_MAX_OFFSET ([`Env::max_offsets`]) may still lag behind
/// (4.9.x answers from the consume queue, which its dispatch fills a little after the send).
pub fn ends_after(sent: &[Sent], queues: i32) -> Vec<i64> {
    let mut ends = vec![0; usize::try_from(queues).unwrap_or(0)];
    for s in sent {
        if let Some(end) = usize::try_from(s.queue.queue_id)
            .ok()
            .and_then(|q| ends.get_mut(q))
        {
            *end = (*end).max(s.queue_offset + 1);
        }
    }
    ends
}

/// The test broker plus an admin client instance (own instance name) for checks.
#[derive(Debug)]
pub struct Env {
    /// The broker `rmq-testkit` started (or found at `NAMESRV_ADDR`).
    pub broker: &'static Broker,
    /// A client instance of its own, used only to create topics, read broker state and pull raw.
    pub admin: ClientInstance,
}

impl Env {
    /// Starts (once per process) or finds the broker and an admin client instance.
    ///
    /// # Panics
    ///
    /// When there is no broker or the instance does not start.
    pub async fn new() -> Env {
        let broker = crate::broker().await;
        let admin = crate::client::instance("it_admin").await;
        Env { broker, admin }
    }

    /// The test name server address.
    pub fn namesrv(&self) -> &str {
        &self.broker.namesrv_addr
    }

    /// Stops the admin client instance.
    pub async fn shutdown(&self) {
        self.admin.shutdown().await;
    }

    /// A fresh topic with `queues` read/write queues on the test broker, routable when this returns.
    ///
    /// # Panics
    ///
    /// When the topic cannot be created.
    pub async fn topic(&self, prefix: &str, queues: i32) -> String {
        let topic = crate::unique_name(prefix);
        self.topic_on(&topic, &self.broker.broker_addr, queues)
            .await;
        topic
    }

    /// Creates `topic` with `queues` queues on the broker at `addr` and waits for its route.
    ///
    /// # Panics
    ///
    /// When the topic cannot be created.
    pub async fn topic_on(&self, topic: &str, addr: &str, queues: i32) {
        crate::admin::create_topic(
            self.admin.remoting(),
            &self.broker.namesrv_addr,
            addr,
            topic,
            queues,
        )
        .await
        .unwrap_or_else(|e| panic!("create topic {topic} on {addr}: {e}"));
    }

    /// Queue `queue_id` of `topic` on the test broker.
    pub fn mq(&self, topic: &str, queue_id: i32) -> MessageQueue {
        MessageQueue::new(topic, &self.broker.broker_name, queue_id)
    }

    /// Queues `0..queues` of `topic` on the test broker, in order.
    pub fn queues(&self, topic: &str, queues: i32) -> Vec<MessageQueue> {
        (0..queues).map(|q| self.mq(topic, q)).collect()
    }

    /// A started producer with a fresh group on the test name server.
    ///
    /// # Panics
    ///
    /// When the producer does not start.
    pub async fn producer(&self) -> Producer {
        self.producer_with(|b| b).await
    }

    /// A started producer with a fresh group on the test name server, its builder adjusted by `f`.
    ///
    /// # Panics
    ///
    /// When the producer does not start.
    pub async fn producer_with(
        &self,
        f: impl FnOnce(ProducerBuilder) -> ProducerBuilder,
    ) -> Producer {
        let builder = Producer::builder()
            .group(crate::unique_name("pg"))
            .namesrv_addr(self.broker.namesrv_addr.clone());
        f(builder).start().await.expect("producer starts")
    }

    /// Sends `n` messages of `topic` with bodies `body(index)` one after the other, through a
    /// producer of its own that is shut down afterwards.
    ///
    /// # Panics
    ///
    /// When the producer does not start, a send fails or the shutdown fails.
    pub async fn produce(&self, topic: &str, n: usize, body: impl Fn(usize) -> String) {
        let producer = self.producer().await;
        for i in 0..n {
            producer
                .send(Message::new(topic, body(i)))
                .await
                .unwrap_or_else(|e| panic!("send {i} of {n} to {topic}: {e}"));
        }
        producer.shutdown().await.expect("producer shutdown");
    }

    /// Sends `n` messages built by `build(index)` (all of one topic, no delay level) in batches of
    /// at most 100 (at least 16 batches when `n` allows), four batches in flight; the producer
    /// spreads the batches over the topic's queues.
    /// Returns them in index order.
    ///
    /// # Panics
    ///
    /// When a send fails.
    pub async fn send_spread(
        &self,
        producer: &Producer,
        n: usize,
        build: impl Fn(usize) -> Message,
    ) -> Vec<Sent> {
        let mut out = Vec::with_capacity(n);
        let mut pending = FuturesUnordered::new();
        let mut next = 0;
        let batch = (n / MIN_BATCHES).clamp(1, BATCH);
        loop {
            while pending.len() < IN_FLIGHT && next < n {
                let end = (next + batch).min(n);
                let msgs: Vec<Message> = (next..end).map(&build).collect();
                let first = next;
                next = end;
                pending.push(async move {
                    let r = producer.send_batch(msgs).await;
                    (first, r)
                });
            }
            let Some((first, r)) = pending.next().await else {
                break;
            };
            let r = r.unwrap_or_else(|e| panic!("batch send from index {first}: {e}"));
            for (i, id) in r.msg_id.split(',').enumerate() {
                out.push(Sent {
                    index: first + i,
                    msg_id: id.to_owned(),
                    queue: r.message_queue.clone(),
                    queue_offset: r.queue_offset + i64::try_from(i).expect("small"),
                });
            }
        }
        out.sort_by_key(|s| s.index);
        assert_eq!(out.len(), n, "every batch reported its message ids");
        out
    }

    /// Sends one message to queue `queue_id` of its topic.
    ///
    /// # Panics
    ///
    /// When the send fails.
    pub async fn send_to_queue(&self, producer: &Producer, msg: Message, queue_id: i32) -> Sent {
        let queue = self.mq(&msg.topic, queue_id);
        let r = producer
            .send_to_queue(msg, &queue)
            .await
            .unwrap_or_else(|e| panic!("send to {queue}: {e}"));
        Sent {
            index: 0,
            msg_id: r.msg_id,
            queue: r.message_queue,
            queue_offset: r.queue_offset,
        }
    }

    /// The group's committed offset of a queue on the test broker (QUERY_CONSUMER_OFFSET);
    /// `None` when the broker has none.
    ///
    /// # Panics
    ///
    /// When the query fails.
    pub async fn committed_offset(&self, group: &str, mq: &MessageQueue) -> Option<i64> {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            set_zero_if_not_found: None,
            broker_name: Some(mq.broker_name.clone()),
        };
        self.admin
            .query_consumer_offset(&self.broker.broker_addr, header)
            .await
            .unwrap_or_else(|e| panic!("query consumer offset of {group} on {mq}: {e}"))
    }

    /// Committed offsets of queues `0..queues` of `topic`.
    pub async fn committed_offsets(
        &self,
        group: &str,
        topic: &str,
        queues: i32,
    ) -> Vec<Option<i64>> {
        let mut out = Vec::new();
        for q in 0..queues {
            out.push(self.committed_offset(group, &self.mq(topic, q)).await);
        }
        out
    }

    /// Waits (bounded polling, `limit`) until the group's committed offsets of queues
    /// `0..queues` of `topic` equal their max offsets; returns how long that took.
    ///
    /// # Panics
    ///
    /// When they are not equal within `limit` (the message names both).
    pub async fn wait_committed_at_max(
        &self,
        group: &str,
        topic: &str,
        queues: i32,
        limit: Duration,
    ) -> Duration {
        let start = tokio::time::Instant::now();
        let max = self.max_offsets(topic, queues).await;
        crate::wait::poll_until(
            limit,
            Duration::from_millis(50),
            "committed offsets == max offsets",
            || {
                let max = &max;
                async move {
                    let committed = self.committed_offsets(group, topic, queues).await;
                    // An empty queue may have no committed offset.
                    let at_max = committed
                        .iter()
                        .zip(max)
                        .all(|(c, m)| *c == Some(*m) || (c.is_none() && *m == 0));
                    if at_max {
                        Ok(())
                    } else {
                        Err(format!("committed {committed:?}, max {max:?}"))
                    }
                }
            },
        )
        .await;
        start.elapsed()
    }

    /// The max offset (next offset to be written) of a queue on the test broker.
    ///
    /// # Panics
    ///
    /// When the query fails.
    pub async fn max_offset(&self, mq: &MessageQueue) -> i64 {
        self.admin
            .get_max_offset(
                &self.broker.broker_addr,
                &mq.topic,
                mq.queue_id,
                Some(&mq.broker_name),
            )
            .await
            .unwrap_or_else(|e| panic!("max offset of {mq}: {e}"))
    }

    /// Max offsets of queues `0..queues` of `topic`.
    pub async fn max_offsets(&self, topic: &str, queues: i32) -> Vec<i64> {
        let mut out = Vec::new();
        for q in 0..queues {
            out.push(self.max_offset(&self.mq(topic, q)).await);
        }
        out
    }

    /// The committed max offset of queue `queue_id` of `topic` on the broker at `addr` (raw
    /// GET_MAX_OFFSET without a broker name: messages written so far).
    ///
    /// # Panics
    ///
    /// When the query fails.
    pub async fn max_offset_at(&self, addr: &str, topic: &str, queue_id: i32) -> i64 {
        crate::raw::max_offset(self.admin.remoting(), addr, topic, queue_id).await
    }

    /// The client ids the test broker lists for `group` (GET_CONSUMER_LIST_BY_GROUP).
    ///
    /// # Panics
    ///
    /// When the query fails.
    pub async fn consumer_ids(&self, group: &str) -> Vec<String> {
        self.admin
            .get_consumer_id_list(&self.broker.broker_addr, group)
            .await
            .unwrap_or_else(|e| panic!("consumer list of {group}: {e}"))
    }

    /// Pulls queue `queue_id` of `topic` from the broker at `addr` raw, from offset 0, until at
    /// least `want` messages arrived or `limit` passed.
    ///
    /// # Panics
    ///
    /// When a pull fails or its answer does not decode.
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
                sub_version: now_ms(),
                ..pull_header("rmq_producer_test_reader", topic, queue_id, offset, 32)
            };
            let request = RemotingCommand::request(RequestCode::PULL_MESSAGE, &header);
            let response = self
                .admin
                .remoting()
                .invoke(addr, request, CALL)
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

    /// Pulls queues `0..queues` of `topic` on the test broker until `want` messages in total
    /// (or 30 s passed; then what there is).
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

    /// Every message of queue `queue_id` of `topic` (any broker the route names, e.g. a DLQ topic
    /// the broker created on send-back), pulled raw from offset 0 until the queue is exhausted.
    ///
    /// # Panics
    ///
    /// When the route or a pull fails.
    pub async fn pull_all(&self, topic: &str, queue_id: i32) -> Vec<MessageExt> {
        let route = self
            .admin
            .refresh_route(topic)
            .await
            .unwrap_or_else(|e| panic!("route of {topic}: {e}"));
        let mut out = Vec::new();
        for qd in &route.route_data().queue_datas {
            if queue_id >= qd.read_queue_nums.max(qd.write_queue_nums) {
                continue;
            }
            let Some(addr) = route
                .route_data()
                .broker(&qd.broker_name)
                .and_then(|b| b.master_addr())
            else {
                continue;
            };
            let mq = MessageQueue::new(topic, &qd.broker_name, queue_id);
            let mut offset = 0;
            loop {
                let header = PullMessageRequestHeader {
                    sub_version: now_ms(),
                    broker_name: Some(qd.broker_name.clone()),
                    ..pull_header("rmq_it_raw_reader", topic, queue_id, offset, 32)
                };
                let r = self
                    .admin
                    .pull_message(addr, &header, Some(CALL))
                    .await
                    .unwrap_or_else(|e| panic!("raw pull of {mq} at {offset}: {e}"));
                match r.status {
                    PullStatus::Found => {
                        out.extend(r.decode_messages(&mq).expect("decode pulled messages"));
                        offset = r.next_begin_offset;
                    }
                    PullStatus::OffsetIllegal if r.next_begin_offset != offset => {
                        offset = r.next_begin_offset;
                    }
                    _ => break,
                }
            }
        }
        out
    }
}

/// Sends `count` messages with bodies `"{prefix}-{i}"` in batches of up to 100 (spread over the
/// queues by the producer); returns the bodies.
///
/// # Panics
///
/// When a send fails.
pub async fn send_batches(
    producer: &Producer,
    topic: &str,
    prefix: &str,
    count: usize,
) -> Vec<String> {
    let bodies: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    for chunk in bodies.chunks(BATCH) {
        let msgs = chunk
            .iter()
            .map(|b| Message::new(topic, b.clone()))
            .collect();
        producer.send_batch(msgs).await.expect("send batch");
    }
    bodies
}

/// Sends `count` messages with bodies `"{prefix}-{i}"` to one queue, one after the other;
/// returns the bodies.
///
/// # Panics
///
/// When a send fails.
pub async fn send_to(
    producer: &Producer,
    queue: &MessageQueue,
    prefix: &str,
    count: usize,
) -> Vec<String> {
    let bodies: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    for b in &bodies {
        producer
            .send_to_queue(Message::new(queue.topic.as_str(), b.clone()), queue)
            .await
            .expect("send to queue");
    }
    bodies
}

/// The body of a message as text.
pub fn body(m: &MessageExt) -> String {
    String::from_utf8_lossy(&m.body).into_owned()
}

/// How often each body occurs in `received`.
pub fn count_once(received: &[String]) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for b in received {
        *counts.entry(b.clone()).or_default() += 1;
    }
    counts
}
