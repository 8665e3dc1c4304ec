//! [`TraceDispatcher`]: writes RocketMQ message trace records to the trace
//! topic in batches (Java `AsyncTraceDispatcher`), through the client
//! instance of the producer or consumer it serves (so the sends are signed
//! as theirs when ACL is on).
//!
//! Appending never waits: records go into a bounded queue (a full queue
//! drops the record and counts it, as Java's `traceContextQueue.offer`).
//! One task takes up to [`BATCH_RECORDS`] records at a time, joins them into
//! trace messages of at most [`MAX_BODY`] bytes whose keys are the message
//! ids and keys of their records (`mqadmin queryMsgTraceById` finds them by
//! these keys) and sends them one after another. [`TraceDispatcher::shutdown`]
//! sends what is queued, bounded by [`FLUSH_TIMEOUT`].

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::header::SendMessageRequestHeaderV2;
use rmq_protocol::message::{UniqIdGenerator, encode_properties, ms_since_month_start, property};
use rmq_protocol::trace::{TRACE_PRODUCER_GROUP_PREFIX, TRACE_TOPIC, TraceRecord};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::clock::now_ms;
use crate::error::Result;
use crate::instance::ClientInstance;

/// Records queued before new ones are dropped (Java `AsyncTraceDispatcher`
/// queue size 2048).
pub const QUEUE_CAPACITY: usize = 2048;
/// Records taken into one batch (Java `batchSize` 100).
pub const BATCH_RECORDS: usize = 100;
/// A trace message body is cut once it reaches this (Java: the trace
/// producer's max message size, 128 000 − 10 000).
pub const MAX_BODY: usize = 118_000;
/// How long a batch waits for more records after its first one.
const BATCH_WAIT: Duration = Duration::from_millis(20);
/// Timeout of one trace message send (Java: 5 s).
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`TraceDispatcher::shutdown`] waits for the queued records.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

enum Command {
    Record(Box<TraceRecord>),
    Flush(oneshot::Sender<()>),
}

struct Shared {
    topic: String,
    group: String,
    discarded: AtomicU64,
    sent: AtomicU64,
    failed: AtomicU64,
    ids: UniqIdGenerator,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// Writes trace records to the trace topic; cheap to clone (one task).
#[derive(Clone)]
pub struct TraceDispatcher {
    tx: mpsc::Sender<Command>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for TraceDispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceDispatcher")
            .field("topic", &self.shared.topic)
            .field("group", &self.shared.group)
            .field("discarded", &self.discarded())
            .finish_non_exhaustive()
    }
}

impl TraceDispatcher {
    /// Starts the dispatcher of the producer or consumer `group` on
    /// `instance`, writing to `topic` (default [`TRACE_TOPIC`]). Must be
    /// called within a tokio runtime.
    pub fn start(instance: ClientInstance, group: &str, topic: Option<&str>) -> TraceDispatcher {
        let topic = topic.filter(|t| !t.is_empty()).unwrap_or(TRACE_TOPIC);
        let ip = instance
            .config()
            .client_ip()
            .parse()
            .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let seed = i32::try_from(now_ms() & 0x7fff_ffff).unwrap_or_default();
        let shared = Arc::new(Shared {
            topic: topic.to_owned(),
            group: group.to_owned(),
            discarded: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            ids: UniqIdGenerator::new(ip, UniqIdGenerator::truncate_pid(std::process::id()), seed),
            worker: Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let worker = tokio::spawn(run(instance, shared.clone(), rx));
        if let Ok(mut w) = shared.worker.lock() {
            *w = Some(worker);
        }
        TraceDispatcher { tx, shared }
    }

    /// The trace topic; sends to it are not traced.
    pub fn topic(&self) -> &str {
        &self.shared.topic
    }

    /// Queues `record`; a full queue drops it (counted in
    /// [`discarded`](Self::discarded)). Never waits.
    pub fn append(&self, record: TraceRecord) {
        if self.tx.try_send(Command::Record(Box::new(record))).is_err() {
            let n = self.shared.discarded.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::debug!(
                topic = %self.shared.topic,
                discarded = n,
                "trace queue full or closed; record dropped"
            );
        }
    }

    /// A new unique id (the `UNIQ_KEY` shape): the request id shared by a
    /// `SubBefore` and its `SubAfter`.
    pub fn new_id(&self) -> String {
        self.shared.ids.next(ms_since_month_start(now_ms(), 0))
    }

    /// Records dropped because the queue was full.
    pub fn discarded(&self) -> u64 {
        self.shared.discarded.load(Ordering::Relaxed)
    }

    /// Trace messages sent so far, and sends that failed.
    pub fn sent_and_failed(&self) -> (u64, u64) {
        (
            self.shared.sent.load(Ordering::Relaxed),
            self.shared.failed.load(Ordering::Relaxed),
        )
    }

    /// Sends every record queued so far, waiting at most `timeout`.
    /// Returns whether they were all handled.
    pub async fn flush(&self, timeout: Duration) -> bool {
        let (done, wait) = oneshot::channel();
        let queued = tokio::time::timeout(timeout, self.tx.send(Command::Flush(done)));
        let Ok(Ok(())) = queued.await else {
            return false;
        };
        matches!(tokio::time::timeout(timeout, wait).await, Ok(Ok(())))
    }

    /// Flushes (bounded by [`FLUSH_TIMEOUT`]) and stops the task. Call
    /// before the client instance is released. Idempotent.
    pub async fn shutdown(&self) {
        if !self.flush(FLUSH_TIMEOUT).await {
            tracing::warn!(topic = %self.shared.topic, "trace records not flushed at shutdown");
        }
        let worker = self.shared.worker.lock().ok().and_then(|mut w| w.take());
        if let Some(worker) = worker {
            worker.abort();
            let _ = worker.await;
        }
    }
}

async fn run(instance: ClientInstance, shared: Arc<Shared>, mut rx: mpsc::Receiver<Command>) {
    let counter = AtomicUsize::new(0);
    let mut batch: Vec<TraceRecord> = Vec::with_capacity(BATCH_RECORDS);
    loop {
        let mut flushed: Option<oneshot::Sender<()>> = None;
        match rx.recv().await {
            None => return,
            Some(Command::Record(r)) => batch.push(*r),
            Some(Command::Flush(done)) => flushed = Some(done),
        }
        if flushed.is_none() {
            let until = tokio::time::Instant::now() + BATCH_WAIT;
            while batch.len() < BATCH_RECORDS {
                match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(Command::Record(r))) => batch.push(*r),
                    Ok(Some(Command::Flush(done))) => {
                        flushed = Some(done);
                        break;
                    }
                    Ok(None) | Err(_) => break,
                }
            }
        }
        if !batch.is_empty() {
            send_batch(&instance, &shared, &counter, &batch).await;
            batch.clear();
        }
        if let Some(done) = flushed {
            let _ = done.send(());
        }
    }
}

/// The trace messages of `records`: bodies of at most about [`MAX_BODY`]
/// bytes, each with the space-joined keys of its records (Java
/// `AsyncAppenderRequest.flushData`).
pub fn trace_messages(records: &[TraceRecord]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut body = String::with_capacity(1024);
    let mut keys: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for r in records {
        r.encode_into(&mut body);
        for k in r.index_keys() {
            if seen.insert(k) {
                keys.push(k);
            }
        }
        if body.len() >= MAX_BODY {
            out.push((std::mem::take(&mut body), keys.join(" ")));
            keys.clear();
            seen.clear();
        }
    }
    if !body.is_empty() {
        out.push((body, keys.join(" ")));
    }
    out
}

async fn send_batch(
    instance: &ClientInstance,
    shared: &Shared,
    counter: &AtomicUsize,
    records: &[TraceRecord],
) {
    for (body, keys) in trace_messages(records) {
        match send_one(instance, shared, counter, body, keys).await {
            Ok(()) => {
                shared.sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                shared.failed.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    topic = %shared.topic,
                    error = %rmq_protocol::ErrorChain(&e),
                    "cannot send a trace message; its records are lost"
                );
            }
        }
    }
}

async fn send_one(
    instance: &ClientInstance,
    shared: &Shared,
    counter: &AtomicUsize,
    body: String,
    keys: String,
) -> Result<()> {
    let route = instance.route(&shared.topic).await?;
    let queues = route.publish_queues();
    let pick = counter.fetch_add(1, Ordering::Relaxed) % queues.len().max(1);
    let Some(queue) = queues.get(pick) else {
        return Err(crate::Error::RouteNotFound {
            topic: shared.topic.clone(),
        });
    };
    let addr = instance.master_addr(queue).await?;
    let addr = instance.config().send_addr(&addr);
    let mut props = std::collections::HashMap::with_capacity(3);
    props.insert(property::KEYS.to_owned(), keys);
    props.insert(
        property::UNIQ_KEY.to_owned(),
        shared.ids.next(ms_since_month_start(now_ms(), 0)),
    );
    props.insert(property::WAIT.to_owned(), "true".to_owned());
    let header = SendMessageRequestHeaderV2 {
        producer_group: format!("{TRACE_PRODUCER_GROUP_PREFIX}{}", shared.group),
        topic: shared.topic.clone(),
        default_topic: "TBW102".to_owned(),
        default_topic_queue_nums: 4,
        queue_id: queue.queue_id,
        sys_flag: 0,
        born_timestamp: now_ms(),
        flag: 0,
        properties: Some(encode_properties(&props)),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: Some(queue.broker_name.clone()),
    };
    instance
        .send_message(
            &addr,
            &queue.broker_name,
            header,
            Bytes::from(body),
            SEND_TIMEOUT,
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::trace::{SubBeforeRecord, decode};

    fn before(i: usize) -> TraceRecord {
        TraceRecord::SubBefore(SubBeforeRecord {
            timestamp: 1,
            region_id: "DefaultRegion".into(),
            group: "G".into(),
            request_id: format!("R{i}"),
            msg_id: format!("M{i}"),
            retry_times: 0,
            keys: if i % 2 == 0 {
                "k".into()
            } else {
                "null".into()
            },
        })
    }

    #[test]
    fn messages_carry_ids_and_keys_once() {
        let records: Vec<TraceRecord> = (0..3).map(before).collect();
        let msgs = trace_messages(&records);
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0].1, "M0 k M1 M2");
        assert_eq!(decode(&msgs[0].0).unwrap(), records);
    }

    #[test]
    fn large_batches_are_cut() {
        let records: Vec<TraceRecord> = (0..3000).map(before).collect();
        let msgs = trace_messages(&records);
        assert!(msgs.len() > 1, "{}", msgs.len());
        let mut all = Vec::new();
        for (body, _) in &msgs {
            assert!(body.len() < MAX_BODY + 200);
            all.extend(decode(body).unwrap());
        }
        assert_eq!(all, records);
    }
}
