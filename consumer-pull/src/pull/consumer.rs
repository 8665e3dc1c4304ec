//! [`PullConsumer`]: explicit pulls of a queue from an offset (Java
//! `DefaultMQPullConsumer`). The application decides which queue, which
//! offset and when; the consumer offers the calls and an offset store.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmq_client_core::PullStatus;
use rmq_client_core::api::PULL_TIMEOUT_OVERHEAD;
use rmq_consumer_base::{DropGuard, Expression, offsets};
use rmq_offset_store::{PersistMode, ReadOffsetType};
use rmq_protocol::{MessageExt, MessageQueue};

use crate::error::{Error, Result, unify, unify_now};
use crate::pull::builder::PullConsumerBuilder;
use crate::pull::config::PullConsumerConfig;
use crate::pull::inner::{Inner, Pull};

/// Longest hold a [`PullConsumer::pull_blocking`] may ask for: the broker
/// side of a long poll is meant for seconds, and the call's own timeout is
/// the hold plus 15 s.
const MAX_HOLD: Duration = Duration::from_secs(3600);

/// What one pull returned (Java `PullResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullResult {
    /// What the broker found.
    pub status: PullStatus,
    /// Where the next pull of the queue starts.
    pub next_begin_offset: i64,
    /// The queue's min offset.
    pub min_offset: i64,
    /// The queue's max offset (one past the last message).
    pub max_offset: i64,
    /// The messages, after the client-side tag re-check (so possibly fewer
    /// than the broker sent, even none with [`PullStatus::Found`]).
    pub messages: Vec<MessageExt>,
}

/// A running explicit pull consumer: a cheap-to-clone handle.
///
/// Every call names its queue and offset; nothing is pulled in the
/// background. Consume offsets are kept in an offset store (the broker in
/// clustering mode, a local file in broadcasting mode) that the
/// application reads and updates with
/// [`fetch_consume_offset`](Self::fetch_consume_offset) /
/// [`update_consume_offset`](Self::update_consume_offset); updated offsets
/// are persisted every 5 s, by [`persist`](Self::persist) and at
/// [`shutdown`](Self::shutdown).
///
/// ```no_run
/// # async fn demo() -> rmq_error::Result<()> {
/// use rmq_consumer_pull::PullConsumer;
///
/// let pull = PullConsumer::builder().group("replay").start().await?;
/// for queue in pull.fetch_subscribe_queues("orders").await? {
///     let mut offset = pull.min_offset(&queue).await?;
///     loop {
///         let result = pull.pull(&queue, "*", offset, 32).await?;
///         for msg in &result.messages {
///             println!("{} {}", msg.queue_offset, msg.msg_id);
///         }
///         if result.next_begin_offset == offset {
///             break;
///         }
///         offset = result.next_begin_offset;
///     }
/// }
/// pull.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use = "dropping the last PullConsumer handle stops it (offsets persisted best effort); call shutdown().await"]
pub struct PullConsumer {
    guard: Arc<DropGuard<Inner>>,
}

impl fmt::Debug for PullConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PullConsumer")
            .field("group", &self.group())
            .field("client_id", &self.client_id())
            .field("model", &self.config().message_model())
            .field("shut_down", &self.is_shutdown())
            .finish()
    }
}

rmq_consumer_base::handle_getters!(PullConsumer, Inner, PullConsumerConfig);

impl PullConsumer {
    /// A builder with the Java client's defaults.
    pub fn builder() -> PullConsumerBuilder {
        PullConsumerBuilder::default()
    }

    fn check_running(&self) -> Result<&Inner> {
        let inner = self.inner();
        inner.core.check_open()?;
        Ok(inner)
    }

    /// The readable queues of `topic`, sorted, from a fresh route (Java
    /// `fetchSubscribeMessageQueues`).
    ///
    /// # Errors
    ///
    /// [`Error::Client`] when the topic has no route
    /// (`RouteNotFound`) or the name servers cannot be reached.
    pub async fn fetch_subscribe_queues(
        &self,
        topic: &str,
    ) -> rmq_error::Result<Vec<MessageQueue>> {
        unify(async {
            let inner = self.check_running()?;
            let ns = inner.core.namespace();
            let route = inner.core.instance().refresh_route(&ns.wrap(topic)).await?;
            let mut queues: Vec<MessageQueue> = route
                .subscribe_queues()
                .iter()
                .map(|q| ns.unwrap_queue(q))
                .collect();
            queues.sort();
            Ok(queues)
        })
        .await
    }

    /// Pulls up to `max_nums` messages of `queue` from `offset`, answering at
    /// once when there is nothing (Java `pull`). `expression` filters:
    /// `"*"`, tags (`"a || b"`) or [`Expression::sql`].
    ///
    /// The result's [`next_begin_offset`](PullResult::next_begin_offset)
    /// is where the next pull starts; for
    /// [`PullStatus::OffsetIllegal`] it is the corrected offset.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a negative offset or `max_nums` < 1;
    /// [`Error::BrokerNotFound`]; [`Error::Client`] when the call failed or
    /// the broker refused (e.g. no permission, bad SQL expression).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: nothing changes on the client until the answer arrives.
    pub async fn pull(
        &self,
        queue: &MessageQueue,
        expression: impl Into<Expression>,
        offset: i64,
        max_nums: i32,
    ) -> rmq_error::Result<PullResult> {
        unify(async {
            let inner = self.check_running()?;
            let pull = Pull {
                offset,
                max: max_nums,
                hold: None,
                call_timeout: inner.config.pull_timeout,
            };
            inner.pull(queue, expression.into(), pull).await
        })
        .await
    }

    /// Like [`pull`](Self::pull), but when there is no new message the
    /// broker holds the request (long polling) and answers as soon as one
    /// arrives, or with [`PullStatus::NoNewMsg`] after `timeout` (Java
    /// `pullBlockIfNotFound`, whose hold is 20 s).
    ///
    /// # Errors
    ///
    /// As [`pull`](Self::pull); also [`Error::InvalidArgument`] for a zero
    /// timeout or one above an hour.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe on the client; the broker may keep the abandoned request
    /// until its hold ends.
    pub async fn pull_blocking(
        &self,
        queue: &MessageQueue,
        expression: impl Into<Expression>,
        offset: i64,
        max_nums: i32,
        timeout: Duration,
    ) -> rmq_error::Result<PullResult> {
        unify(async {
            if timeout.is_zero() || timeout > MAX_HOLD {
                return Err(Error::InvalidArgument(format!(
                    "pull_blocking timeout {timeout:?} must be positive and at most {MAX_HOLD:?}"
                )));
            }
            let pull = Pull {
                offset,
                max: max_nums,
                hold: Some(timeout),
                call_timeout: timeout.saturating_add(PULL_TIMEOUT_OVERHEAD),
            };
            self.check_running()?
                .pull(queue, expression.into(), pull)
                .await
        })
        .await
    }

    /// The queue's min offset (GET_MIN_OFFSET at its master).
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`], [`Error::Client`].
    pub async fn min_offset(&self, queue: &MessageQueue) -> rmq_error::Result<i64> {
        unify(async {
            let inner = self.check_running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            offsets::min_offset(inner.core.instance(), queue).await
        })
        .await
    }

    /// The queue's max offset: the offset the next message will get
    /// (GET_MAX_OFFSET at its master).
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`], [`Error::Client`].
    pub async fn max_offset(&self, queue: &MessageQueue) -> rmq_error::Result<i64> {
        unify(async {
            let inner = self.check_running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            offsets::max_offset(inner.core.instance(), queue).await
        })
        .await
    }

    /// The offset of the first message of `queue` stored at or after
    /// `timestamp` (SEARCH_OFFSET_BY_TIMESTAMP, lower boundary).
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`], [`Error::Client`].
    pub async fn search_offset(
        &self,
        queue: &MessageQueue,
        timestamp: SystemTime,
    ) -> rmq_error::Result<i64> {
        unify(async {
            let inner = self.check_running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            offsets::search_offset(
                inner.core.instance(),
                queue,
                rmq_protocol::epoch_millis(timestamp),
            )
            .await
        })
        .await
    }

    /// The group's consume offset of `queue`: with `from_store` the one
    /// stored by the broker (clustering) or in the file (broadcasting),
    /// else the in-memory one if set, else the stored one (Java
    /// `fetchConsumeOffset`). `None` when there is none.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] when the store could not be asked.
    pub async fn fetch_consume_offset(
        &self,
        queue: &MessageQueue,
        from_store: bool,
    ) -> rmq_error::Result<Option<i64>> {
        unify(async {
            let inner = self.check_running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            inner.ensure_heartbeat_for(queue).await;
            let read = if from_store {
                ReadOffsetType::ReadFromStore
            } else {
                ReadOffsetType::MemoryFirstThenStore
            };
            Ok(inner.core.offset_store().read_offset(queue, read).await?)
        })
        .await
    }

    /// Sets the group's consume offset of `queue` (the next offset to
    /// consume) in memory; it is persisted within 5 s, by
    /// [`persist`](Self::persist) and at [`shutdown`](Self::shutdown)
    /// (Java `updateConsumeOffset`). Moving backwards is allowed.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a negative offset; [`Error::Shutdown`].
    pub fn update_consume_offset(
        &self,
        queue: &MessageQueue,
        offset: i64,
    ) -> rmq_error::Result<()> {
        unify_now(|| {
            let inner = self.check_running()?;
            if offset < 0 {
                return Err(Error::InvalidArgument(format!(
                    "offset {offset} is negative"
                )));
            }
            let queue = &inner.core.namespace().wrap_queue(queue);
            inner
                .core
                .offset_store()
                .update_offset(queue, offset, false);
            Ok(())
        })
    }

    /// Writes the in-memory consume offset of `queue` to the store now,
    /// waiting for the broker's answer (clustering) or the file write.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] when the write failed.
    pub async fn persist(&self, queue: &MessageQueue) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.check_running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            inner.ensure_heartbeat_for(queue).await;
            Ok(inner
                .core
                .offset_store()
                .persist(queue, PersistMode::Sync)
                .await?)
        })
        .await
    }

    /// Writes every in-memory consume offset to the store now, waiting for
    /// the answers (Java `persistConsumerOffset`).
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] naming the queues that failed (the others were
    /// stored).
    pub async fn persist_all(&self) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.check_running()?;
            inner.persist_all(PersistMode::Sync).await
        })
        .await
    }

    /// Hands a message that could not be processed back to the broker for
    /// a later redelivery through the group's retry topic
    /// (CONSUMER_SEND_MSG_BACK; Java `sendMessageBack`). `delay_level` 0
    /// lets the broker choose (3 + redeliveries so far); a negative level
    /// sends the message to the dead-letter queue at once. After
    /// [`max_reconsume_times`](PullConsumerBuilder::max_reconsume_times)
    /// redeliveries the broker moves it to `%DLQ%<group>`.
    ///
    /// Redeliveries arrive in `%RETRY%<group>`: pull that topic to see them.
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`] when the message's broker is unknown;
    /// [`Error::Client`] when the broker refused or the call failed (Java
    /// then re-sends the message itself through a producer; this consumer
    /// leaves that to the application).
    pub async fn send_back(&self, msg: &MessageExt, delay_level: i32) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.check_running()?;
            inner.send_back(msg, delay_level).await
        })
        .await
    }

    /// Stops the consumer: persists every in-memory consume offset
    /// (waiting for the broker), unregisters the group (UNREGISTER_CLIENT)
    /// and releases the client instance. Idempotent.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] when some offsets could not be persisted
    /// (everything else was still shut down).
    pub async fn shutdown(&self) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.inner();
            inner.core.shutdown(inner.stop()).await
        })
        .await
    }
}
