//! Auto-batching of concurrent sends (Java 5.x `DefaultMQProducer.autoBatch`,
//! `ProduceAccumulator`): [`Producer::send`](crate::Producer::send)s of one
//! topic arriving within the linger time are sent as one
//! SEND_BATCH_MESSAGE, and each caller gets its own [`SendResult`].
//!
//! A pending batch is flushed when it reaches `max_messages` or
//! `max_bytes`, when its linger time ends, or at shutdown. Messages the
//! batch encoding cannot carry (delay level, timer, transactional, retry
//! topic, a body that would be compressed) are sent alone. The bytes waiting
//! in batches are bounded by `max_pending_bytes`: a send beyond it waits for
//! room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_client_core::SendResult;
use rmq_protocol::Message;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::config::ProducerConfig;
use crate::error::{Error, Result};
use crate::validate::is_transactional;

/// Auto-batching settings for [`ProducerBuilder::batching`](crate::ProducerBuilder::batching).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Batching {
    /// How long the first message of a batch waits for others (Java
    /// `batchMaxDelayMs`, default 10 ms).
    pub linger: Duration,
    /// Most messages in one batch.
    pub max_messages: usize,
    /// Most body bytes in one batch (Java `batchMaxBytes`, 32 KiB); at most
    /// the producer's `max_message_size`.
    pub max_bytes: usize,
    /// Most body bytes waiting in batches of this producer (Java
    /// `totalBatchMaxBytes`, 32 MiB); a send beyond it waits for room.
    pub max_pending_bytes: usize,
}

impl Default for Batching {
    fn default() -> Self {
        Batching {
            linger: Duration::from_millis(10),
            max_messages: 256,
            max_bytes: 32 * 1024,
            max_pending_bytes: 32 * 1024 * 1024,
        }
    }
}

impl Batching {
    /// `linger`, `max_messages` and `max_bytes`; the pending bound stays at
    /// its default.
    pub fn new(linger: Duration, max_messages: usize, max_bytes: usize) -> Self {
        Batching {
            linger,
            max_messages,
            max_bytes,
            ..Batching::default()
        }
    }

    /// Sets [`max_pending_bytes`](Self::max_pending_bytes).
    pub fn with_max_pending_bytes(mut self, bytes: usize) -> Self {
        self.max_pending_bytes = bytes;
        self
    }

    pub(crate) fn validate(&self, max_message_size: usize) -> Result<()> {
        if self.max_messages == 0 || self.max_bytes == 0 {
            return Err(Error::Config(
                "batching needs max_messages and max_bytes above zero".into(),
            ));
        }
        if self.max_bytes > max_message_size {
            return Err(Error::Config(format!(
                "batching max_bytes {} is over the maximum message size {max_message_size}; \
                 lower it (a batch is one message to the broker)",
                self.max_bytes
            )));
        }
        if self.max_pending_bytes < self.max_bytes || u32::try_from(self.max_pending_bytes).is_err()
        {
            return Err(Error::Config(format!(
                "batching max_pending_bytes {} must be at least max_bytes {} and below 4 GiB",
                self.max_pending_bytes, self.max_bytes
            )));
        }
        Ok(())
    }
}

/// What answers one caller.
pub(crate) type Reply = oneshot::Sender<(Result<SendResult>, u32, Message)>;

/// One caller's message in a batch.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) msg: Message,
    pub(crate) reply: Reply,
    /// The caller's span: the batch's `send` span follows from it.
    pub(crate) caller: tracing::Span,
    /// Its share of the pending-bytes bound, released when answered.
    pub(crate) _permit: OwnedSemaphorePermit,
}

/// The messages of one key waiting to be sent.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub(crate) entries: Vec<Entry>,
    bytes: usize,
    /// Tells this batch from a later one of the same key, so a linger timer
    /// flushes only the batch it was started for.
    generation: u64,
}

/// Batches are per topic and `WAIT` value (a batch has one of each).
type Key = (String, bool);

/// The batches being filled.
#[derive(Debug)]
pub(crate) struct Accumulator {
    pub(crate) config: Batching,
    pending: Mutex<Batches>,
    room: Arc<Semaphore>,
    next_generation: std::sync::atomic::AtomicU64,
}

/// The pending batches, and whether the producer is shutting down (then
/// nothing more is added: [`Accumulator::take_all`] was the last flush).
#[derive(Debug, Default)]
struct Batches {
    by_key: HashMap<Key, Pending>,
    closed: bool,
}

/// What [`Accumulator::add`] asks the caller to do.
#[derive(Debug)]
pub(crate) enum Added {
    /// Start the linger timer of this batch generation.
    StartTimer(Key, u64),
    /// Send this full batch now.
    Flush(Vec<Entry>),
    /// Nothing: the batch's timer is already running.
    Queued,
}

impl Accumulator {
    pub(crate) fn new(config: Batching) -> Self {
        Accumulator {
            config,
            pending: Mutex::new(Batches::default()),
            room: Arc::new(Semaphore::new(config.max_pending_bytes)),
            next_generation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether `msg` can go into a batch (else it is sent alone).
    pub(crate) fn accepts(&self, msg: &Message, config: &ProducerConfig) -> bool {
        msg.body.len() < config.compress_over
            && msg.body.len() <= self.config.max_bytes
            && !rmq_protocol::names::is_retry_topic(&msg.topic)
            && msg.delay_level().is_none_or(|l| l <= 0)
            && !msg.is_timer()
            && !is_transactional(msg)
            && crate::validate::sent_alone(msg).is_none()
    }

    /// Waits for room for `bytes` pending bytes.
    pub(crate) async fn room(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        let n = u32::try_from(bytes.max(1)).ok()?;
        self.room.clone().acquire_many_owned(n).await.ok()
    }

    /// Adds a (validated, stamped) message; says what to do next. A full
    /// batch comes back to be flushed: either the one that has no room left
    /// for `entry` (then `entry` starts the next), or the one `entry` filled.
    /// After [`take_all`](Self::take_all) the entry comes back unadded.
    pub(crate) fn add(
        &self,
        entry: Entry,
    ) -> std::result::Result<(Added, Option<Vec<Entry>>), Box<Entry>> {
        let key = (entry.msg.topic.clone(), entry.msg.wait_store_msg_ok());
        let size = entry.msg.body.len();
        let mut state = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if state.closed {
            return Err(Box::new(entry));
        }
        let batch = state.by_key.entry(key.clone()).or_default();
        let mut earlier = None;
        if !batch.entries.is_empty() && batch.bytes + size > self.config.max_bytes {
            earlier = Some(std::mem::take(&mut batch.entries));
            batch.bytes = 0;
        }
        let first = batch.entries.is_empty();
        if first {
            batch.generation = self
                .next_generation
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        batch.entries.push(entry);
        batch.bytes += size;
        let added = if batch.entries.len() >= self.config.max_messages
            || batch.bytes >= self.config.max_bytes
        {
            batch.bytes = 0;
            Added::Flush(std::mem::take(&mut batch.entries))
        } else if first {
            Added::StartTimer(key, batch.generation)
        } else {
            Added::Queued
        };
        Ok((added, earlier))
    }

    /// The batch of `key` if it is still generation `generation` (its
    /// linger time is over).
    pub(crate) fn take(&self, key: &Key, generation: u64) -> Vec<Entry> {
        let mut state = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        match state.by_key.get_mut(key) {
            Some(b) if b.generation == generation && !b.entries.is_empty() => {
                b.bytes = 0;
                std::mem::take(&mut b.entries)
            }
            _ => Vec::new(),
        }
    }

    /// Every pending batch (at shutdown); later [`add`](Self::add)s are
    /// refused.
    pub(crate) fn take_all(&self) -> Vec<Vec<Entry>> {
        let mut state = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        state.closed = true;
        state
            .by_key
            .drain()
            .map(|(_, b)| b.entries)
            .filter(|e| !e.is_empty())
            .collect()
    }
}

/// Splits the result of a batch send into one result per message: its own
/// `UNIQ_KEY` (moved out of `ids`) and offset id, and queue offset = the
/// batch's + its index. The batch's joined id lists are not copied into each
/// result.
pub(crate) fn split_result(mut batch: SendResult, ids: Vec<String>) -> Vec<SendResult> {
    let joined_offsets = std::mem::take(&mut batch.offset_msg_id);
    batch.msg_id = String::new();
    let offset_ids: Vec<&str> = joined_offsets.split(',').collect();
    let per_message_offsets = offset_ids.len() == ids.len();
    let first_offset = batch.queue_offset;
    ids.into_iter()
        .enumerate()
        .map(|(i, id)| {
            let mut r = batch.clone();
            r.msg_id = id;
            if per_message_offsets {
                offset_ids
                    .get(i)
                    .copied()
                    .unwrap_or_default()
                    .clone_into(&mut r.offset_msg_id);
            }
            r.queue_offset = first_offset.saturating_add(i64::try_from(i).unwrap_or(i64::MAX));
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_client_core::SendStatus;
    use rmq_protocol::MessageQueue;

    fn entry(topic: &str, size: usize, room: &Arc<Semaphore>) -> (Entry, oneshot::Receiver<()>) {
        let (tx, _rx) = oneshot::channel();
        let (_t2, r2) = oneshot::channel::<()>();
        let permit = room.clone().try_acquire_owned().unwrap();
        (
            Entry {
                msg: Message::new(topic, vec![b'x'; size]),
                reply: tx,
                caller: tracing::Span::none(),
                _permit: permit,
            },
            r2,
        )
    }

    #[test]
    fn flushes_by_count_bytes_and_generation() {
        let acc = Accumulator::new(Batching::new(Duration::from_millis(5), 3, 100));
        let room = Arc::new(Semaphore::new(100));
        let (a, _) = entry("t", 10, &room);
        let (added, earlier) = acc.add(a).unwrap();
        assert!(earlier.is_none());
        let Added::StartTimer(key, generation) = added else {
            panic!("{added:?}")
        };
        let (b, _) = entry("t", 10, &room);
        assert!(matches!(acc.add(b).unwrap().0, Added::Queued));
        let (c, _) = entry("t", 10, &room);
        let Added::Flush(full) = acc.add(c).unwrap().0 else {
            panic!("third message fills the batch")
        };
        assert_eq!(full.len(), 3);
        // The timer of the flushed generation finds nothing.
        assert!(acc.take(&key, generation).is_empty());

        // Bytes: 60 + 60 > 100 flushes the first before the second joins.
        let (d, _) = entry("t", 60, &room);
        assert!(matches!(acc.add(d).unwrap().0, Added::StartTimer(..)));
        let (e, _) = entry("t", 60, &room);
        let (added, earlier) = acc.add(e).unwrap();
        assert_eq!(earlier.map(|v| v.len()), Some(1));
        assert!(matches!(added, Added::StartTimer(..)));
        assert_eq!(acc.take_all().len(), 1);
        // Shut down: nothing more is taken in.
        let (f, _) = entry("t", 10, &room);
        assert!(acc.add(f).is_err());
        assert!(acc.take_all().is_empty());
    }

    #[test]
    fn split_gives_each_caller_its_id_and_offset() {
        let batch = SendResult {
            status: SendStatus::SendOk,
            msg_id: "A,B".into(),
            offset_msg_id: "X,Y".into(),
            message_queue: MessageQueue::new("t", "b", 1),
            queue_offset: 7,
            transaction_id: None,
            region_id: String::new(),
            trace_on: true,
            recall_handle: None,
        };
        let r = split_result(batch, vec!["A".into(), "B".into()]);
        assert_eq!(
            r.iter()
                .map(|r| (r.msg_id.as_str(), r.offset_msg_id.as_str(), r.queue_offset))
                .collect::<Vec<_>>(),
            [("A", "X", 7), ("B", "Y", 8)]
        );
    }
}
