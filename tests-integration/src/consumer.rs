//! Push consumers for the tests: a spec with the tests' defaults, recording listeners, and
//! shortcuts into the inspection API.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmq_client_core::ClientConfig;
use rmq_consumer_push::{
    ConsumeContext, ConsumeFrom, ConsumeResult, MaxReconsume, MessageListener, MessageModel,
    PushConsumer, PushConsumerBuilder, QueueSnapshot, async_trait,
};
use rmq_protocol::{MessageExt, MessageQueue};

use crate::Recorder;

/// How often the tests' consumers persist offsets to the broker (default 5 s; shorter keeps the
/// tests that read committed offsets on the broker fast).
pub const PERSIST_INTERVAL: Duration = Duration::from_secs(1);

/// A subscription expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// Tags: `*`, `a || b`.
    Tags(String),
    /// SQL92 on properties.
    Sql(String),
}

/// A consumer for one topic, with the tests' defaults: clustering, from the first offset, a
/// unique instance name (own client instance), offsets persisted every [`PERSIST_INTERVAL`].
#[derive(Debug, Clone)]
pub struct ConsumerSpec {
    namesrv: String,
    group: String,
    topic: String,
    filter: Filter,
    instance: String,
    broadcasting: bool,
    max_reconsume_times: Option<i32>,
    consume_concurrency: Option<usize>,
    pull_batch_size: Option<usize>,
    pull_threshold_for_queue: Option<usize>,
    pull_threshold_size_mib: Option<usize>,
    max_span: Option<i64>,
    local_retry_delay: Option<Duration>,
    suspend_timeout: Option<Duration>,
    offset_dir: Option<PathBuf>,
    pop_invisible: Option<Duration>,
}

impl ConsumerSpec {
    /// Subscribes `group` to all of `topic` through the name server at `namesrv`.
    pub fn new(namesrv: &str, group: &str, topic: &str) -> ConsumerSpec {
        ConsumerSpec {
            namesrv: namesrv.to_owned(),
            group: group.to_owned(),
            topic: topic.to_owned(),
            filter: Filter::Tags("*".to_owned()),
            instance: rmq_testkit::unique_name("it_consumer"),
            broadcasting: false,
            max_reconsume_times: None,
            consume_concurrency: None,
            pull_batch_size: None,
            pull_threshold_for_queue: None,
            pull_threshold_size_mib: None,
            max_span: None,
            local_retry_delay: None,
            suspend_timeout: None,
            offset_dir: None,
            pop_invisible: None,
        }
    }

    /// The subscription expression (default `*`).
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// The client's instance name (default: unique), which fixes its client id.
    pub fn instance(mut self, name: impl Into<String>) -> Self {
        self.instance = name.into();
        self
    }

    /// Broadcasting instead of clustering.
    pub fn broadcasting(mut self) -> Self {
        self.broadcasting = true;
        self
    }

    /// Max reconsume times.
    pub fn max_reconsume_times(mut self, n: i32) -> Self {
        self.max_reconsume_times = Some(n);
        self
    }

    /// Listener calls in flight at once.
    pub fn consume_concurrency(mut self, n: usize) -> Self {
        self.consume_concurrency = Some(n);
        self
    }

    /// Messages per pull.
    pub fn pull_batch_size(mut self, n: usize) -> Self {
        self.pull_batch_size = Some(n);
        self
    }

    /// Flow-control threshold: messages held per queue.
    pub fn pull_threshold_for_queue(mut self, n: usize) -> Self {
        self.pull_threshold_for_queue = Some(n);
        self
    }

    /// Flow-control threshold: MiB of bodies held per queue.
    pub fn pull_threshold_size_for_queue_mib(mut self, mib: usize) -> Self {
        self.pull_threshold_size_mib = Some(mib);
        self
    }

    /// Flow-control threshold: span of the offsets held per queue.
    pub fn consume_concurrently_max_span(mut self, span: i64) -> Self {
        self.max_span = Some(span);
        self
    }

    /// Pause before a message whose send-back failed is consumed again locally (default 5 s).
    pub fn local_retry_delay(mut self, delay: Duration) -> Self {
        self.local_retry_delay = Some(delay);
        self
    }

    /// How long the broker may hold a pull that finds nothing (default 15 s).
    pub fn suspend_timeout(mut self, hold: Duration) -> Self {
        self.suspend_timeout = Some(hold);
        self
    }

    /// Root directory of the broadcasting offset files.
    pub fn offset_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.offset_dir = Some(dir.into());
        self
    }

    /// The client configuration: name server, instance name, persist interval.
    pub fn client_config(&self) -> ClientConfig {
        ClientConfig::builder()
            .namesrv_addr(self.namesrv.clone())
            .instance_name(self.instance.clone())
            .persist_consumer_offset_interval(PERSIST_INTERVAL)
            .build()
            .expect("consumer client config")
    }

    /// Pop mode (RocketMQ 5) with this pop invisible time.
    pub fn pop(mut self, invisible: Duration) -> Self {
        self.pop_invisible = Some(invisible);
        self
    }

    /// The consumer builder this spec describes.
    pub fn builder(&self) -> PushConsumerBuilder {
        let mut b = PushConsumer::builder()
            .group(self.group.clone())
            .client_config(self.client_config())
            .consume_from(ConsumeFrom::FirstOffset);
        b = match &self.filter {
            Filter::Tags(tags) => b.subscribe(self.topic.clone(), tags.clone()),
            Filter::Sql(sql) => b.subscribe_sql(self.topic.clone(), sql.clone()),
        };
        if self.broadcasting {
            b = b.message_model(MessageModel::Broadcasting);
        }
        if let Some(n) = self.max_reconsume_times {
            b = b.max_reconsume(MaxReconsume::from_java(n));
        }
        if let Some(n) = self.consume_concurrency {
            b = b.consume_concurrency(n);
        }
        if let Some(n) = self.pull_batch_size {
            b = b.pull_batch_size(n);
        }
        if let Some(n) = self.pull_threshold_for_queue {
            b = b.pull_threshold_for_queue(n);
        }
        if let Some(n) = self.pull_threshold_size_mib {
            b = b.pull_threshold_size_for_queue_mib(n);
        }
        if let Some(n) = self.max_span {
            b = b.consume_concurrently_max_span(n);
        }
        if let Some(d) = self.local_retry_delay {
            b = b.reconsume_delay_when_send_back_failed(d);
        }
        if let Some(d) = self.suspend_timeout {
            b = b.suspend_timeout(d);
        }
        if let Some(dir) = &self.offset_dir {
            b = b.offset_store_dir(dir.clone());
        }
        if let Some(invisible) = self.pop_invisible {
            b = b.pop_mode(true).pop_invisible_time(invisible);
        }
        b
    }
}

/// Starts the consumer `spec` describes; panics when it does not start.
pub async fn start(spec: ConsumerSpec, listener: impl MessageListener) -> PushConsumer {
    spec.builder()
        .start(listener)
        .await
        .unwrap_or_else(|e| panic!("push consumer {} starts: {e}", spec.group))
}

/// Decides whether a delivery fails: the message and the queue it was pulled from.
type FailWhen = dyn Fn(&MessageExt, &MessageQueue) -> bool + Send + Sync;

/// How long the listener takes for a message.
type DelayFor = dyn Fn(&MessageExt) -> Duration + Send + Sync;

/// A listener that waits (per message, as told), records every delivery, then answers
/// `ReconsumeLater` for the messages `fail` picks (per call: any failing message fails the call)
/// and `Success` otherwise.
#[derive(Clone)]
pub struct Recording {
    rec: Arc<Recorder>,
    label: usize,
    fail: Arc<FailWhen>,
    delay: Arc<DelayFor>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl MessageListener for Recording {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult {
        let delay: Duration = msgs.iter().map(|m| (self.delay)(m)).sum();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        self.rec.record(self.label, ctx.queue(), msgs);
        if msgs.iter().any(|m| (self.fail)(m, ctx.queue())) {
            ConsumeResult::ReconsumeLater
        } else {
            ConsumeResult::Success
        }
    }
}

/// A [`Recording`] listener labelled `label` that fails what `fail` picks.
pub fn recording(
    rec: Arc<Recorder>,
    label: usize,
    fail: impl Fn(&MessageExt, &MessageQueue) -> bool + Send + Sync + 'static,
) -> Recording {
    Recording {
        rec,
        label,
        fail: Arc::new(fail),
        delay: Arc::new(|_| Duration::ZERO),
    }
}

/// A [`Recording`] listener that succeeds after waiting `delay` per message.
pub fn recording_slow(rec: Arc<Recorder>, label: usize, delay: Duration) -> Recording {
    recording_delayed(rec, label, move |_| delay)
}

/// A [`Recording`] listener that succeeds after waiting `delay(msg)` per message.
pub fn recording_delayed(
    rec: Arc<Recorder>,
    label: usize,
    delay: impl Fn(&MessageExt) -> Duration + Send + Sync + 'static,
) -> Recording {
    Recording {
        rec,
        label,
        fail: Arc::new(|_, _| false),
        delay: Arc::new(delay),
    }
}

/// The consumer's client id.
pub fn client_id(c: &PushConsumer) -> String {
    c.client_id().to_owned()
}

/// Queue ids of `topic` the consumer holds and has not dropped.
pub fn owned_queues(c: &PushConsumer, topic: &str) -> BTreeSet<i32> {
    c.inspect()
        .into_iter()
        .filter(|q| q.queue.topic == topic && !q.dropped)
        .map(|q| q.queue.queue_id)
        .collect()
}

/// The inspection snapshots of `topic`'s queues.
pub fn queue_stats(c: &PushConsumer, topic: &str) -> Vec<QueueSnapshot> {
    c.inspect()
        .into_iter()
        .filter(|q| q.queue.topic == topic)
        .collect()
}

/// The snapshot of `mq`, if the consumer holds it.
pub fn snapshot(c: &PushConsumer, mq: &MessageQueue) -> Option<QueueSnapshot> {
    c.inspect().into_iter().find(|q| &q.queue == mq)
}

/// The consumer's committed (in-memory) offset of `mq`.
pub fn committed_offset(c: &PushConsumer, mq: &MessageQueue) -> Option<i64> {
    snapshot(c, mq).and_then(|q| q.committed_offset)
}

/// Waits (polling the inspection API every 20 ms, at most `limit`) until the consumer's
/// in-memory committed offsets of `topic`'s queues equal `max` (by queue id; an empty queue
/// may have none).
pub async fn wait_local_committed(c: &PushConsumer, topic: &str, max: &[i64], limit: Duration) {
    crate::poll_until(
        limit,
        Duration::from_millis(20),
        "the consumer's committed offsets at the ends of the queues",
        || async move {
            let have: Vec<Option<i64>> = (0..max.len())
                .map(|q| {
                    queue_stats(c, topic)
                        .into_iter()
                        .find(|s| usize::try_from(s.queue.queue_id).ok() == Some(q))
                        .and_then(|s| s.committed_offset)
                })
                .collect();
            let done = have
                .iter()
                .zip(max)
                .all(|(h, m)| *h == Some(*m) || (h.is_none() && *m == 0));
            if done { Ok(()) } else { Err(have) }
        },
    )
    .await;
}

/// The acks a push consumer over the brokers sent in pop mode so far, from its running info
/// (`rmq.ackedMessages`, `rmq.ackFailures`): (taken by the broker, failed).
///
/// # Panics
///
/// When the consumer is not registered in its client instance (shut down) or its running info
/// lacks the properties.
pub fn pop_acks(c: &PushConsumer) -> (u64, u64) {
    let info = c
        .client_instance()
        .and_then(|i| i.consumer(c.group()))
        .unwrap_or_else(|| panic!("consumer {} registered", c.group()))
        .running_info();
    let read = |name: &str| -> u64 {
        info.properties
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("running info property {name}: {:?}", info.properties))
    };
    (read("rmq.ackedMessages"), read("rmq.ackFailures"))
}
