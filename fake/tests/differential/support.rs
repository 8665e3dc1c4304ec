//! The differential harness: a [`Target`] is the real broker (from
//! `rmq-testkit`) or a fake cluster configured like it; [`run`] runs one
//! scenario against both at once and compares what the client saw, line by
//! line ([`Obs`]).
//!
//! Scenarios use the same topic and group names on both sides (generated
//! once, before [`run`]), so stored sizes, routes and orders compare
//! exactly. What differs per run (ids, timestamps, ports, commit-log
//! positions) is normalized by [`Labels`] and [`describe`].

#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmq_client_core::{ClientConfig, ClientInstance, PullStatus};
use rmq_fake::{BrokerFlavor, FakeCluster};
use rmq_protocol::header::PullMessageRequestHeader;
use rmq_protocol::message::{parse_offset_msg_id, property};
use rmq_protocol::{MessageExt, MessageQueue, RemotingCommand};
use rmq_remoting::{ClientOptions, RemotingClient};

/// One call's time limit.
pub const CALL: Duration = Duration::from_secs(10);
/// One scenario's time limit (both sides).
pub const SCENARIO: Duration = Duration::from_secs(120);

/// Which side a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Real,
    Fake,
}

/// The broker under test, real or fake, and clients for it.
pub struct Target {
    pub side: Side,
    pub namesrv: String,
    /// broker-a's address.
    pub broker: String,
    pub broker_name: String,
    /// 4 or 5.
    pub major: u32,
    /// A raw client for protocol-level calls.
    pub client: RemotingClient,
    /// A client instance for typed calls (own instance name).
    pub admin: ClientInstance,
    pub fake: Option<FakeCluster>,
    pub started: SystemTime,
}

fn major_of_real() -> u32 {
    rmq_testkit::ensure_broker().major_version().unwrap_or(5)
}

/// The fake flavor matching the real broker's line.
pub fn flavor() -> BrokerFlavor {
    if major_of_real() == 4 {
        BrokerFlavor::V4_9
    } else {
        BrokerFlavor::V5
    }
}

impl Target {
    pub async fn real(tag: &str) -> Target {
        let broker = rmq_testkit::broker().await;
        Self::new(
            Side::Real,
            broker.namesrv_addr.clone(),
            broker.broker_addr.clone(),
            broker.broker_name.clone(),
            major_of_real(),
            None,
            tag,
        )
    }

    /// A fake cluster configured like the test broker
    /// (`scripts/rocketmq-local.sh`): eighteen 1 s delay levels, SQL92
    /// filtering on, auto-creation on, `broker-a` in `DefaultCluster`.
    pub async fn fake(tag: &str) -> Target {
        let _ = rmq_testkit::broker().await;
        let cluster = FakeCluster::builder()
            .flavor(flavor())
            .delay_levels(&["1s"; 18].join(" "))
            .start()
            .await
            .expect("the fake cluster starts");
        let b = cluster.first_broker().clone();
        Self::new(
            Side::Fake,
            cluster.namesrv_addr().to_owned(),
            b.addr(),
            b.name().to_owned(),
            major_of_real(),
            Some(cluster),
            tag,
        )
    }

    fn new(
        side: Side,
        namesrv: String,
        broker: String,
        broker_name: String,
        major: u32,
        fake: Option<FakeCluster>,
        tag: &str,
    ) -> Target {
        let config = ClientConfig::builder()
            .namesrv_addr(namesrv.clone())
            .instance_name(rmq_testkit::unique_name(tag))
            .build()
            .expect("admin config");
        let admin = ClientInstance::get_or_start(config).expect("admin instance");
        Target {
            side,
            namesrv,
            broker,
            broker_name,
            major,
            client: RemotingClient::new(ClientOptions::default()),
            admin,
            fake,
            started: SystemTime::now(),
        }
    }

    /// `topic` with `queues` queues on broker-a (UPDATE_AND_CREATE_TOPIC on
    /// both sides), routable when this returns.
    pub async fn topic(&self, topic: &str, queues: i32) {
        rmq_testkit::admin::create_topic(&self.client, &self.namesrv, &self.broker, topic, queues)
            .await
            .unwrap_or_else(|e| panic!("{:?}: create topic {topic}: {e}", self.side));
    }

    pub fn mq(&self, topic: &str, queue_id: i32) -> MessageQueue {
        MessageQueue::new(topic, &self.broker_name, queue_id)
    }

    /// `name` with this side's suffix.
    pub fn instance(&self, name: &str) -> String {
        match self.side {
            Side::Real => format!("{name}_r"),
            Side::Fake => format!("{name}_f"),
        }
    }

    /// A client id with this side's suffix removed (for observations).
    pub fn unsuffixed(&self, id: &str) -> String {
        id.strip_suffix("_r")
            .or_else(|| id.strip_suffix("_f"))
            .unwrap_or(id)
            .to_owned()
    }

    /// A raw request to broker-a.
    pub async fn call(&self, cmd: RemotingCommand) -> RemotingCommand {
        self.client
            .invoke(&self.broker, cmd, CALL)
            .await
            .unwrap_or_else(|e| panic!("{:?}: call: {e}", self.side))
    }

    /// A raw request to the name server.
    pub async fn call_ns(&self, cmd: RemotingCommand) -> RemotingCommand {
        self.client
            .invoke(&self.namesrv, cmd, CALL)
            .await
            .unwrap_or_else(|e| panic!("{:?}: name server call: {e}", self.side))
    }

    /// A client config on this side. Client instances are shared per
    /// client id in a process (as in Java), so the side is appended to the
    /// instance name (`_r` real, `_f` fake): both sides' ids sort alike.
    pub fn config(&self, instance: &str) -> ClientConfig {
        ClientConfig::builder()
            .namesrv_addr(self.namesrv.clone())
            .instance_name(self.instance(instance))
            .persist_consumer_offset_interval(Duration::from_secs(1))
            .build()
            .expect("client config")
    }

    /// A started producer of `group` on this side.
    pub async fn producer(&self, group: &str) -> rmq_producer::Producer {
        rmq_producer::Producer::builder()
            .group(group)
            .client_config(self.config(&format!("{group}_i")))
            .start()
            .await
            .unwrap_or_else(|e| panic!("{:?}: producer {group}: {e}", self.side))
    }

    /// Every message of a queue, pulled raw from offset 0 (SUBSCRIPTION
    /// `*`), as the client decodes them.
    pub async fn pull_all(&self, topic: &str, queue_id: i32) -> Vec<MessageExt> {
        let mq = self.mq(topic, queue_id);
        let mut out = Vec::new();
        let mut offset = 0;
        loop {
            let header = raw_pull_header(topic, queue_id, offset);
            let r = self
                .admin
                .pull_message(&self.broker, &header, Some(CALL))
                .await
                .unwrap_or_else(|e| panic!("{:?}: pull {mq} at {offset}: {e}", self.side));
            match r.status {
                PullStatus::Found => {
                    out.extend(r.decode_messages(&mq).expect("decodes"));
                    offset = r.next_begin_offset;
                }
                PullStatus::OffsetIllegal if r.next_begin_offset != offset => {
                    offset = r.next_begin_offset;
                }
                _ => return out,
            }
        }
    }

    /// Polls `pull_all` until it holds `n` messages (for what arrives later:
    /// delayed messages, retries, oneway sends), then returns one more
    /// `pull_all`, read with all of them stored.
    pub async fn pull_until(
        &self,
        topic: &str,
        queue_id: i32,
        n: usize,
        limit: Duration,
    ) -> Vec<MessageExt> {
        let deadline = Instant::now() + limit;
        loop {
            let route_ok = self.admin.refresh_route(topic).await.is_ok();
            if route_ok {
                let msgs = self.pull_all(topic, queue_id).await;
                if msgs.len() >= n {
                    // Read once more, now that all `n` are stored: a pass that raced a
                    // message's arrival pulled the earlier ones while the queue was shorter,
                    // and their MAX_OFFSET says so.
                    return self.pull_all(topic, queue_id).await;
                }
                assert!(
                    Instant::now() < deadline,
                    "{:?}: {topic}#{queue_id} holds {} of {n} messages after {limit:?}",
                    self.side,
                    msgs.len()
                );
            } else {
                assert!(
                    Instant::now() < deadline,
                    "{:?}: no route for {topic}",
                    self.side
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Pulls a queue raw (no route needed) until it answers FOUND or
    /// `limit` passes; returns the last code and the messages found.
    pub async fn raw_pull_until_found(
        &self,
        topic: &str,
        queue_id: i32,
        limit: Duration,
    ) -> (i32, Vec<MessageExt>) {
        let deadline = Instant::now() + limit;
        loop {
            let header = raw_pull_header(topic, queue_id, 0);
            let a = self
                .call(RemotingCommand::request(
                    rmq_protocol::RequestCode::PULL_MESSAGE,
                    &header,
                ))
                .await;
            if a.code == 0 || Instant::now() >= deadline {
                let msgs = if a.code == 0 {
                    rmq_protocol::message::decode_messages(&a.body).unwrap_or_default()
                } else {
                    Vec::new()
                };
                return (a.code, msgs);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the queue's max offset reaches `n`: the real broker
    /// dispatches stored messages to its consume queues a moment after the
    /// send answer.
    pub async fn wait_max_offset(&self, topic: &str, queue_id: i32, n: i64) {
        let deadline = Instant::now() + CALL;
        loop {
            let max = self
                .admin
                .get_max_offset(&self.broker, topic, queue_id, None)
                .await
                .unwrap_or_else(|e| {
                    panic!("{:?}: max offset of {topic}#{queue_id}: {e}", self.side)
                });
            if max >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{:?}: {topic}#{queue_id} max offset {max} < {n}",
                self.side
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn shutdown(self) {
        self.admin.shutdown().await;
        self.client.shutdown().await;
        if let Some(c) = self.fake {
            c.shutdown().await;
        }
    }
}

/// A pull of 32 messages from `offset`, subscription `*` in the request, no
/// hold, for a reader group of its own.
fn raw_pull_header(topic: &str, queue_id: i32, offset: i64) -> PullMessageRequestHeader {
    rmq_testkit::raw::pull_header("rmq_diff_raw_reader", topic, queue_id, offset, 32)
}

/// What a scenario observed: one line per fact, compared in order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Obs {
    pub lines: Vec<String>,
}

impl Obs {
    pub fn push(&mut self, line: impl Into<String>) {
        self.lines.push(line.into());
    }
}

/// `format!` into an [`Obs`].
#[macro_export]
macro_rules! obs {
    ($o:expr, $($t:tt)*) => { $o.push(format!($($t)*)) };
}

/// Runs `scenario` on the real broker and on the fake, concurrently, and
/// asserts both observed the same.
pub async fn run<F, Fut>(name: &str, scenario: F)
where
    F: Fn(Target) -> Fut,
    Fut: Future<Output = Obs>,
{
    let t0 = Instant::now();
    let real = async {
        let t = Instant::now();
        let o = scenario(Target::real(name).await).await;
        (o, t.elapsed())
    };
    let fake = async {
        let t = Instant::now();
        let o = scenario(Target::fake(name).await).await;
        (o, t.elapsed())
    };
    let ((real, real_t), (fake, fake_t)) =
        tokio::time::timeout(SCENARIO, async { tokio::join!(real, fake) })
            .await
            .unwrap_or_else(|_| panic!("{name}: not done within {SCENARIO:?}"));
    eprintln!(
        "differential {name}: real {real_t:?}, fake {fake_t:?}, total {:?}, {} facts",
        t0.elapsed(),
        real.lines.len()
    );
    if std::env::var_os("RMQ_DIFF_VERBOSE").is_some() {
        for line in &real.lines {
            eprintln!("  {name}: {line}");
        }
    }
    assert_same(name, &real, &fake);
}

/// Panics with the first difference and both observations.
pub fn assert_same(name: &str, real: &Obs, fake: &Obs) {
    if real == fake {
        return;
    }
    let mut report = format!("{name}: the fake differs from the real broker\n");
    let n = real.lines.len().max(fake.lines.len());
    for i in 0..n {
        let r = real.lines.get(i).map_or("<none>", String::as_str);
        let f = fake.lines.get(i).map_or("<none>", String::as_str);
        let mark = if r == f { "  " } else { "!!" };
        report.push_str(&format!("{mark} {i:3} real: {r}\n{mark}     fake: {f}\n"));
    }
    panic!("{report}");
}

/// Symbolic names for per-run ids (`UNIQ_KEY`s, offset message ids).
#[derive(Debug, Default)]
pub struct Labels {
    map: Mutex<HashMap<String, String>>,
}

impl Labels {
    pub fn add(&self, id: &str, label: impl Into<String>) {
        self.map
            .lock()
            .unwrap()
            .entry(id.to_owned())
            .or_insert_with(|| label.into());
    }

    /// The label of `id`, or a shape description for unknown ids.
    pub fn of(&self, id: &str) -> String {
        if let Some(l) = self.map.lock().unwrap().get(id) {
            return l.clone();
        }
        if (id.len() == 32 || id.len() == 56) && id.chars().all(|c| c.is_ascii_hexdigit()) {
            // An id this run did not assign (a broker-generated UNIQ_KEY): its
            // length depends on the host's address family.
            return "<hex>".to_owned();
        }
        if id.contains(',') {
            return id
                .split(',')
                .map(|i| self.of(i))
                .collect::<Vec<_>>()
                .join(",");
        }
        id.to_owned()
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A body as text when it is short UTF-8, else its length.
pub fn body(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) if s.len() <= 40 => format!("{s:?}"),
        _ => format!("<{} bytes>", b.len()),
    }
}

/// Properties, sorted, with ids labelled and per-delivery values dropped.
pub fn props(m: &MessageExt, labels: &Labels) -> String {
    let sorted: BTreeMap<&str, &str> = m.message.properties.iter().collect();
    let mut out = Vec::new();
    for (k, v) in sorted {
        let v = match k {
            property::CONSUME_START_TIME => continue,
            property::UNIQ_KEY | property::ORIGIN_MESSAGE_ID => labels.of(v),
            _ => v.to_owned(),
        };
        out.push(format!("{k}={v}"));
    }
    out.join(" ")
}

/// One stored message as the client sees it, normalized.
pub fn describe(m: &MessageExt, t: &Target, labels: &Labels) -> String {
    describe_at(m, &t.broker, t.started, labels)
}

fn describe_at(m: &MessageExt, broker: &str, started: SystemTime, labels: &Labels) -> String {
    let store_host = if m.store_host.to_string() == broker {
        "broker".to_owned()
    } else {
        m.store_host.to_string()
    };
    let window = |ts: i64| {
        let start = i64::try_from(
            started
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0),
        )
        .unwrap_or(0);
        if ts >= start - 2_000 && ts <= now_ms() + 2_000 {
            "now".to_owned()
        } else {
            ts.to_string()
        }
    };
    // A broker-generated UNIQ_KEY is as long as the broker host's address
    // (IPv4 or IPv6): count the record without it.
    let size = match m.message.property(property::UNIQ_KEY) {
        Some(id) if labels.of(id) == "<hex>" => {
            format!("{}+id", m.store_size - i32::try_from(id.len()).unwrap_or(0))
        }
        _ => m.store_size.to_string(),
    };
    let offset_id = match parse_offset_msg_id(&m.offset_msg_id) {
        Ok((host, offset)) if host == m.store_host && offset == m.commit_log_offset => "ok",
        _ => "BAD",
    };
    format!(
        "{} #{} @{} id={} offset-id={offset_id} flag={} sys={:#x} reconsume={} size={} born={}/{} \
         store={}/{} ptx={} crc={} body={} props[{}]",
        m.message.topic,
        m.queue_id,
        m.queue_offset,
        labels.of(&m.msg_id),
        m.message.flag,
        m.sys_flag,
        m.reconsume_times,
        size,
        ip(m.born_host),
        window(m.born_timestamp),
        store_host,
        window(m.store_timestamp),
        m.prepared_transaction_offset,
        m.body_crc,
        body(&m.message.body),
        props(m, labels)
    )
}

fn ip(a: SocketAddr) -> String {
    a.ip().to_string()
}

/// A raw answer: code, remark (its first line), the ext fields named.
pub fn answer(cmd: &RemotingCommand, fields: &[&str]) -> String {
    let remark = cmd
        .remark
        .as_deref()
        .map(|r| r.lines().next().unwrap_or("").to_owned())
        .unwrap_or_default();
    let fields: Vec<String> = fields
        .iter()
        .map(|f| format!("{f}={}", cmd.ext_field(f).unwrap_or("-")))
        .collect();
    format!("code={} remark={remark:?} {}", cmd.code, fields.join(" "))
}

/// The same, without the remark (where the texts differ by version only).
pub fn code_and(cmd: &RemotingCommand, fields: &[&str]) -> String {
    let fields: Vec<String> = fields
        .iter()
        .map(|f| format!("{f}={}", cmd.ext_field(f).unwrap_or("-")))
        .collect();
    format!("code={} {}", cmd.code, fields.join(" "))
}

/// What [`describe`] needs of a target, for use inside listeners (a
/// `Target` is not shared with them).
#[derive(Debug, Clone, Copy)]
pub struct DescribeCtx<'a> {
    pub broker: &'a str,
    pub started: SystemTime,
    pub side: Side,
}

impl DescribeCtx<'_> {
    /// A delivery without what depends on timing: which pull carried it
    /// (the MIN/MAX offsets) and, in the shared retry queue, the arrival
    /// order.
    pub fn delivery(
        &self,
        m: &MessageExt,
        queue_topic: &str,
        labels: &Labels,
        group: &str,
    ) -> String {
        let mut m = m.clone();
        m.message.remove_property(property::MIN_OFFSET);
        m.message.remove_property(property::MAX_OFFSET);
        if queue_topic.starts_with("%RETRY%") {
            m.queue_offset = -1;
        }
        let line = describe_at(&m, self.broker, self.started, labels);
        format!("via {queue_topic} {line}").replace(group, "<g>")
    }
}
