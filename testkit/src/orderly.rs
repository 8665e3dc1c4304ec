//! What the orderly-consumption tests share: ordered sends by key, an orderly push consumer
//! builder with the tests' defaults, and a recorder of listener calls.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmq_client_core::ClientConfig;
use rmq_consumer_push::{
    ConsumeFrom, MessageExt, OrderlyContext, OrderlyListener, OrderlyResult, PushConsumer,
    PushConsumerBuilder, async_trait,
};
use rmq_producer::{Message, Producer, select_by_hash};

/// How often the tests' consumers persist offsets (default 5 s).
pub const PERSIST_INTERVAL: Duration = Duration::from_secs(1);

/// Body of message `seq` of `key`: `<key>:<seq>`.
pub fn body(key: &str, seq: usize) -> String {
    format!("{key}:{seq}")
}

/// Parses a body made by [`body`].
pub fn parse(msg: &MessageExt) -> (String, usize) {
    let text = String::from_utf8_lossy(&msg.body).into_owned();
    let (key, seq) = text.rsplit_once(':').expect("body is <key>:<seq>");
    (key.to_owned(), seq.parse().expect("sequence number"))
}

/// The `i`-th key of a test.
pub fn key(i: usize) -> String {
    format!("k{i}")
}

/// Sends messages `seqs` of each key, in sequence order per key, with
/// `send_with_selector(select_by_hash(key))`; `parallel` keys are sent at
/// once (each key's messages strictly one after the other). Returns the
/// queue id of each key.
pub async fn send_ordered(
    producer: &Producer,
    topic: &str,
    keys: &[String],
    seqs: std::ops::Range<usize>,
    parallel: usize,
) -> HashMap<String, i32> {
    let parallel = parallel.max(1);
    let lanes: Vec<Vec<String>> = (0..parallel)
        .map(|lane| keys.iter().skip(lane).step_by(parallel).cloned().collect())
        .collect();
    let mut tasks = FuturesUnordered::new();
    for lane in lanes {
        let seqs = seqs.clone();
        tasks.push(async move {
            let mut queues = HashMap::new();
            for seq in seqs.clone() {
                for key in &lane {
                    let msg = Message::new(topic, body(key, seq)).with_keys([key.as_str()]);
                    let sent = producer
                        .send_with_selector(msg, select_by_hash(key.clone()))
                        .await
                        .unwrap_or_else(|e| panic!("ordered send of {key}:{seq}: {e}"));
                    queues.insert(key.clone(), sent.message_queue.queue_id);
                }
            }
            queues
        });
    }
    let mut all = HashMap::new();
    while let Some(q) = tasks.next().await {
        all.extend(q);
    }
    all
}

/// An orderly consumer of `topic` for the tests: own client instance, offsets
/// persisted every second, starting at the first offset.
pub fn builder(namesrv: &str, group: &str, topic: &str) -> PushConsumerBuilder {
    builder_with(
        ClientConfig::builder()
            .namesrv_addr(namesrv)
            .instance_name(crate::unique_name("ord_c"))
            .persist_consumer_offset_interval(PERSIST_INTERVAL)
            .build()
            .expect("client config"),
        group,
        topic,
    )
}

/// [`builder`] with a given client configuration.
pub fn builder_with(client: ClientConfig, group: &str, topic: &str) -> PushConsumerBuilder {
    PushConsumer::builder()
        .group(group.to_owned())
        .client_config(client)
        .consume_from(ConsumeFrom::FirstOffset)
        .subscribe(topic.to_owned(), "*")
}

/// One listener call.
#[derive(Debug, Clone)]
pub struct Call {
    /// The test's label of the consumer.
    pub consumer: usize,
    /// The queue id.
    pub queue_id: i32,
    /// `(key, seq, queue offset, reconsume times)` of each message.
    pub msgs: Vec<(String, usize, i64, i32)>,
    /// When the call started and ended.
    pub start: Instant,
    /// End of the call.
    pub end: Instant,
    /// What the listener answered.
    pub result: OrderlyResult,
}

/// Every listener call of a test, in start order.
#[derive(Debug, Default)]
pub struct Calls {
    calls: Mutex<Vec<Call>>,
}

impl Calls {
    fn lock(&self) -> MutexGuard<'_, Vec<Call>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the calls so far.
    pub fn snapshot(&self) -> Vec<Call> {
        self.lock().clone()
    }

    /// Messages delivered (counting every delivery).
    pub fn deliveries(&self) -> usize {
        self.lock().iter().map(|c| c.msgs.len()).sum()
    }

    /// Distinct messages accepted (delivered in a call answered `Success`).
    pub fn accepted(&self) -> usize {
        accepted(&self.lock())
    }

    /// Waits until `pred` holds for the calls, polling every 20 ms; panics after `limit`.
    pub async fn wait_for(&self, limit: Duration, what: &str, pred: impl Fn(&[Call]) -> bool) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if pred(&self.lock()) {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                let n = self.lock().len();
                panic!("{what}: not reached within {limit:?} ({n} calls so far)");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `n` distinct messages were accepted.
    pub async fn wait_accepted(&self, n: usize, limit: Duration) {
        self.wait_for(limit, &format!("{n} messages accepted"), |calls| {
            accepted(calls) >= n
        })
        .await;
    }
}

/// Distinct messages accepted (delivered in a call answered `Success`).
pub fn accepted(calls: &[Call]) -> usize {
    let mut seen = std::collections::HashSet::new();
    for c in calls.iter().filter(|c| c.result == OrderlyResult::Success) {
        for (k, s, _, _) in &c.msgs {
            seen.insert((k.clone(), *s));
        }
    }
    seen.len()
}

/// What a test listener answers for one call.
pub type Decide = dyn Fn(&[MessageExt]) -> OrderlyResult + Send + Sync;

/// A listener recording every call into `calls` as consumer `label`, answering with `decide`,
/// after sleeping `delay` (to widen the call's interval).
pub struct Recording {
    /// The test's label of the consumer.
    pub label: usize,
    /// Where the calls are recorded.
    pub calls: Arc<Calls>,
    /// How long each call sleeps before it answers.
    pub delay: Duration,
    /// What each call answers.
    pub decide: Box<Decide>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("label", &self.label)
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// Always `Success`.
    pub fn accepting(label: usize, calls: Arc<Calls>) -> Recording {
        Recording {
            label,
            calls,
            delay: Duration::ZERO,
            decide: Box::new(|_| OrderlyResult::Success),
        }
    }
}

impl Recording {
    /// Records a call that started at `start` and ends now.
    pub fn record(
        &self,
        start: Instant,
        msgs: &[MessageExt],
        ctx: &OrderlyContext,
        result: OrderlyResult,
    ) {
        let call = Call {
            consumer: self.label,
            queue_id: ctx.queue().queue_id,
            msgs: msgs
                .iter()
                .map(|m| {
                    let (k, s) = parse(m);
                    (k, s, m.queue_offset, m.reconsume_times)
                })
                .collect(),
            start,
            end: Instant::now(),
            result,
        };
        self.calls.lock().push(call);
    }
}

#[async_trait]
impl OrderlyListener for Recording {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut OrderlyContext) -> OrderlyResult {
        let start = Instant::now();
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let result = (self.decide)(msgs);
        self.record(start, msgs, ctx, result);
        result
    }
}

/// Per key, the sequence numbers in delivery order (every delivery).
pub fn per_key(calls: &[Call]) -> BTreeMap<String, Vec<usize>> {
    let mut map: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for c in calls {
        for (k, s, _, _) in &c.msgs {
            map.entry(k.clone()).or_default().push(*s);
        }
    }
    map
}

/// Per key, the first delivery of each sequence number, in delivery order.
pub fn first_deliveries(seqs: &[usize]) -> Vec<usize> {
    let mut seen = std::collections::HashSet::new();
    seqs.iter().copied().filter(|s| seen.insert(*s)).collect()
}

/// Checks that no two calls of the same queue overlap in time; returns how many calls were
/// checked. Panics naming the first overlap.
pub fn assert_no_overlap(calls: &[Call]) -> usize {
    let mut by_queue: BTreeMap<i32, Vec<&Call>> = BTreeMap::new();
    for c in calls {
        by_queue.entry(c.queue_id).or_default().push(c);
    }
    for (q, mut cs) in by_queue {
        cs.sort_by_key(|c| c.start);
        for pair in cs.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert!(
                b.start >= a.end,
                "queue {q}: consumer {} started a call {:?} before consumer {}'s call ended \
                 (first messages {:?} / {:?})",
                b.consumer,
                a.end - b.start,
                a.consumer,
                a.msgs.first(),
                b.msgs.first()
            );
        }
    }
    calls.len()
}

/// Starts an orderly consumer, panicking on failure.
pub async fn start(b: PushConsumerBuilder, listener: Recording) -> PushConsumer {
    b.start_orderly(listener)
        .await
        .expect("orderly consumer starts")
}
