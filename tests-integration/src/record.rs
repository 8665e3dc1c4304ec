//! [`Recorder`]: every delivery a listener saw, and awaitable conditions on them.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_protocol::{MessageExt, MessageQueue};
use tokio::sync::watch;
use tokio::time::Instant;

/// One message handed to a listener.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Which consumer of the test got it (the test's own label).
    pub consumer: usize,
    /// The message as the listener saw it.
    pub msg: MessageExt,
    /// The queue the consumer pulled it from (the context's queue: `%RETRY%<group>` for retries).
    pub queue: MessageQueue,
    /// When it was recorded.
    pub at: Instant,
}

/// What the recorder has seen so far.
#[derive(Debug, Default)]
pub struct Seen {
    /// Every delivery, in recording order.
    pub deliveries: Vec<Delivery>,
    /// Deliveries per `msg_id`.
    pub counts: HashMap<String, usize>,
}

impl Seen {
    /// How many distinct message ids were delivered.
    pub fn distinct(&self) -> usize {
        self.counts.len()
    }

    /// Deliveries beyond the first of each message.
    pub fn duplicates(&self) -> usize {
        self.deliveries.len() - self.counts.len()
    }

    /// The deliveries of `msg_id`, in order.
    pub fn of(&self, msg_id: &str) -> Vec<&Delivery> {
        self.deliveries
            .iter()
            .filter(|d| d.msg.msg_id == msg_id)
            .collect()
    }

    /// Ids of `expected` that were never delivered.
    pub fn missing<'a>(&self, expected: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        expected
            .into_iter()
            .filter(|id| !self.counts.contains_key(*id))
            .map(str::to_owned)
            .collect()
    }

    /// Delivered ids not in `expected`.
    pub fn unexpected(&self, expected: &HashSet<String>) -> Vec<String> {
        self.counts
            .keys()
            .filter(|id| !expected.contains(*id))
            .cloned()
            .collect()
    }
}

/// Records deliveries from any number of listeners (thread-safe); waiters wake on every change.
#[derive(Debug)]
pub struct Recorder {
    seen: Mutex<Seen>,
    changed: watch::Sender<u64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            seen: Mutex::new(Seen::default()),
            changed: watch::Sender::new(0),
        }
    }
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder::default()
    }

    fn lock(&self) -> MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the messages of one listener call by consumer `consumer`, pulled from `queue`.
    pub fn record(&self, consumer: usize, queue: &MessageQueue, msgs: &[MessageExt]) {
        {
            let mut seen = self.lock();
            let at = Instant::now();
            for msg in msgs {
                *seen.counts.entry(msg.msg_id.clone()).or_insert(0) += 1;
                seen.deliveries.push(Delivery {
                    consumer,
                    msg: msg.clone(),
                    queue: queue.clone(),
                    at,
                });
            }
        }
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Runs `f` on what was seen so far.
    pub fn with<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.lock())
    }

    /// Number of deliveries so far.
    pub fn len(&self) -> usize {
        self.lock().deliveries.len()
    }

    /// Whether nothing was delivered yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of distinct message ids delivered so far.
    pub fn distinct(&self) -> usize {
        self.lock().distinct()
    }

    /// Waits until `pred` holds (checked now and after every recorded call); panics with `what`
    /// and a summary when `limit` passes.
    pub async fn wait_for(&self, limit: Duration, what: &str, mut pred: impl FnMut(&Seen) -> bool) {
        let deadline = Instant::now() + limit;
        let mut rx = self.changed.subscribe();
        loop {
            rx.mark_unchanged();
            if pred(&self.lock()) {
                return;
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                let (total, distinct) = self.with(|s| (s.deliveries.len(), s.distinct()));
                if pred(&self.lock()) {
                    return;
                }
                panic!(
                    "{what}: not reached within {limit:?} ({total} deliveries, {distinct} distinct)"
                );
            }
        }
    }

    /// Waits until at least `n` distinct messages were delivered.
    pub async fn wait_distinct(&self, n: usize, limit: Duration) {
        self.wait_for(limit, &format!("{n} distinct messages delivered"), |s| {
            s.distinct() >= n
        })
        .await;
    }
}
