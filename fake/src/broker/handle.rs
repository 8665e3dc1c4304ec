//! [`FakeBroker`], the handle tests use on one broker.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use rmq_protocol::body::perm;
use rmq_protocol::message::decode_message;
use rmq_protocol::{MessageExt, MessageQueue};

use super::state::BrokerShared;
use super::store::{MessageMeta, NewMessage, StoredMsg};
use super::topics::{self, TopicConfig};
use crate::error::{FakeError, Result};

/// A handle on one broker of a [`FakeCluster`](crate::FakeCluster): its
/// address, what it stores, and its lifecycle (kill, crash, restart).
///
/// Cheap to clone; every clone controls the same broker.
#[derive(Debug, Clone)]
pub struct FakeBroker {
    pub(crate) inner: Arc<BrokerShared>,
}

fn to_message_ext(m: &StoredMsg, broker: &str) -> Option<MessageExt> {
    let mut ext = decode_message(&m.record).ok()?;
    ext.broker_name = broker.to_owned();
    Some(ext)
}

impl FakeBroker {
    /// The broker's name (`broker-a`, ...).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its address, `host:port` (the same after a restart).
    pub fn addr(&self) -> String {
        self.inner.addr().to_string()
    }

    /// Whether it is running (not killed or crashed).
    pub async fn is_running(&self) -> bool {
        self.inner.is_running().await
    }

    /// Kills the broker as `kill -9` would: the listener and every
    /// connection close, held pulls are dropped, the name server stops
    /// routing to it at once. What it stored is kept (the OS had it), but
    /// what lives only in the broker's memory is gone: consumer and producer
    /// registrations and queue locks.
    ///
    /// # Errors
    ///
    /// [`FakeError::BrokerStopped`] if it is not running.
    pub async fn kill(&self) -> Result<()> {
        self.inner.stop(false).await
    }

    /// Like [`kill`](Self::kill), and the machine goes down too: messages
    /// stored and offsets committed since the last flush are lost (see
    /// [`FlushPolicy`](crate::FlushPolicy) and [`flush`](Self::flush)).
    ///
    /// # Errors
    ///
    /// [`FakeError::BrokerStopped`] if it is not running.
    pub async fn crash(&self) -> Result<()> {
        self.inner.stop(true).await
    }

    /// Starts a killed or crashed broker again on the same address; it
    /// registers with the name server before this returns.
    ///
    /// # Errors
    ///
    /// [`FakeError::BrokerRunning`] if it is running, [`FakeError::Bind`] if
    /// its port was taken meanwhile.
    pub async fn restart(&self) -> Result<()> {
        self.inner.start().await
    }

    /// Marks everything stored and committed so far as flushed (survives a
    /// [`crash`](Self::crash)).
    pub fn flush(&self) {
        self.inner.flush();
    }

    /// Creates (or updates) `topic` with `queues` read and write queues on
    /// this broker; routable when this returns.
    ///
    /// # Errors
    ///
    /// [`FakeError::InvalidTopic`] for a name the broker refuses.
    pub fn create_topic(&self, topic: &str, queues: i32) -> Result<()> {
        topics::validate_topic(topic).map_err(|reason| FakeError::InvalidTopic {
            topic: topic.to_owned(),
            reason,
        })?;
        let mut st = self.inner.state();
        self.inner.put_topic(
            &mut st,
            topic,
            TopicConfig::new(queues, perm::READ | perm::WRITE),
        );
        Ok(())
    }

    /// The topics it has (including `TBW102` and retry / dead-letter topics).
    pub fn topics(&self) -> Vec<String> {
        self.inner
            .state()
            .topics
            .iter()
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// The read-queue count of `topic`, if it exists here.
    pub fn queue_count(&self, topic: &str) -> Option<i32> {
        self.inner
            .state()
            .topics
            .get(topic)
            .map(|t| t.read_queue_nums)
    }

    /// Every message stored in `topic` here, queue by queue in offset order,
    /// decoded as a consumer would see them (bodies decompressed). A
    /// dead-letter queue is `%DLQ%<group>`, a retry topic `%RETRY%<group>`;
    /// delayed messages not yet due are in `SCHEDULE_TOPIC_XXXX`.
    pub fn messages(&self, topic: &str) -> Vec<MessageExt> {
        let stored = self.inner.state().store.topic_messages(topic);
        stored
            .iter()
            .filter_map(|m| to_message_ext(m, &self.inner.name))
            .collect()
    }

    /// The max offset (next offset to be written) of a queue.
    pub fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.state().store.max_offset(topic, queue_id)
    }

    /// The offset `group` committed for a queue of this broker.
    pub fn committed_offset(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.inner
            .state()
            .offsets
            .get(&(group.to_owned(), topic.to_owned(), queue_id))
            .copied()
    }

    /// The client ids registered in `group` here.
    pub fn consumer_ids(&self, group: &str) -> Vec<String> {
        let mut ids = self
            .inner
            .state()
            .clients
            .consumers
            .get(group)
            .map(|g| g.client_ids())
            .unwrap_or_default();
        ids.sort();
        ids
    }

    /// Which client holds the (unexpired) lock of a queue for `group`.
    pub fn lock_holder(&self, group: &str, queue: &MessageQueue) -> Option<String> {
        let now = self.inner.now_ms();
        self.inner
            .state()
            .locks
            .holder(group, queue, now, self.inner.lease_ms())
    }

    /// How many delayed messages (delay levels, retries) wait for their time.
    pub fn scheduled(&self) -> usize {
        self.inner.state().schedule.len()
    }

    /// Delivers every delayed message now, due or not, without moving the
    /// clock (so leases and client expiry are not affected); returns how
    /// many. [`FakeClock::advance`](crate::FakeClock::advance) is the
    /// time-faithful alternative.
    pub fn deliver_delayed_now(&self) -> usize {
        self.inner.deliver_due(true)
    }

    /// How many pulls are held (long polling).
    pub fn held_pulls(&self) -> usize {
        self.inner.state().holds.len()
    }

    /// The queues of `topic` that hold messages here.
    pub fn queues_with_messages(&self, topic: &str) -> BTreeSet<i32> {
        self.inner
            .state()
            .store
            .queue_ids(topic)
            .into_iter()
            .collect()
    }

    /// Stores a message directly, as if a producer had sent it to `queue_id`
    /// (no fault rules apply); returns its queue offset.
    ///
    /// # Errors
    ///
    /// [`FakeError::BrokerStopped`] when the broker is not running,
    /// [`FakeError::Config`] when the message cannot be stored (too large,
    /// bad properties).
    pub fn inject(
        &self,
        topic: &str,
        queue_id: i32,
        body: impl Into<Bytes>,
        properties: HashMap<String, String>,
    ) -> Result<i64> {
        let mut st = self.inner.state();
        if !st.running {
            return Err(FakeError::BrokerStopped(self.inner.name.clone()));
        }
        let addr = self.inner.addr();
        let meta = MessageMeta {
            sys_flag: 0,
            flag: 0,
            born_timestamp: self.inner.now_ms(),
            born_host: addr,
            store_host: addr,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        let msg = NewMessage::new(topic.to_owned(), queue_id, meta, body.into(), properties);
        let stored = self
            .inner
            .put_message(&mut st, msg)
            .map_err(|e| FakeError::Config(format!("the message cannot be stored: {e:?}")))?;
        Ok(stored.queue_offset)
    }
}
