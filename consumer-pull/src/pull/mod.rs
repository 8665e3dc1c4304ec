//! [`PullConsumer`]: explicit pulls of a queue from an offset (Java
//! `DefaultMQPullConsumer`). The application decides which queue, which
//! offset and when; the consumer offers the calls and an offset store.

mod builder;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use rmq_client_core::api::PULL_TIMEOUT_OVERHEAD;
use rmq_client_core::{ClientConfig, ClientInstance, ConsumerHandle, PullStatus, now_ms};
use rmq_offset_store::{OffsetStore, PersistMode, ReadOffsetType, offset_store_for};
use rmq_protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel};
use rmq_protocol::header::ConsumerSendMsgBackRequestHeader;
use rmq_protocol::{MessageExt, MessageQueue};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, trace, warn};

pub use builder::{PullConsumerBuilder, PullConsumerConfig};

use crate::common::{
    self, Expression, HeartbeatGate, PullSpec, filter_by_tags, pull_addr, system_time_ms,
};
use crate::error::{Error, Result};

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
/// # async fn demo() -> Result<(), rmq_consumer_pull::Error> {
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
#[must_use = "dropping the last PullConsumer handle stops it without persisting offsets; call shutdown().await"]
pub struct PullConsumer {
    guard: Arc<DropGuard>,
}

impl fmt::Debug for PullConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.guard.inner;
        f.debug_struct("PullConsumer")
            .field("group", &inner.config.group)
            .field("client_id", &inner.instance.client_id())
            .field("model", &inner.config.message_model)
            .field("shut_down", &inner.closed.load(Ordering::Acquire))
            .finish()
    }
}

/// Stops the background task when the last handle goes away without
/// shutdown.
struct DropGuard {
    inner: Arc<Inner>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        inner.cancel.cancel();
        inner.tasks.close();
        warn!(group = %inner.config.group, "pull consumer dropped without shutdown; offsets not persisted");
        inner
            .instance
            .spawn_unregister_consumer_and_release(&inner.config.group);
    }
}

struct Inner {
    config: PullConsumerConfig,
    instance: ClientInstance,
    offset_store: Arc<dyn OffsetStore>,
    heartbeat: HeartbeatGate,
    /// Broker id each queue's last answer suggested (Java
    /// `pullFromWhichNodeTable`).
    suggested: Mutex<HashMap<MessageQueue, i64>>,
    cancel: CancellationToken,
    tasks: TaskTracker,
    closed: AtomicBool,
    shutdown_lock: tokio::sync::Mutex<bool>,
    started_at_ms: i64,
}

/// The consumer as the client instance sees it (heartbeat data).
struct Registration {
    group: String,
    inner: Weak<Inner>,
}

impl ConsumerHandle for Registration {
    fn consumer_data(&self) -> ConsumerData {
        let Some(inner) = self.inner.upgrade() else {
            return ConsumerData {
                group_name: self.group.clone(),
                consume_type: ConsumeType::ConsumeActively,
                ..ConsumerData::default()
            };
        };
        let version = inner.started_at_ms;
        ConsumerData {
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            consume_type: ConsumeType::ConsumeActively,
            group_name: self.group.clone(),
            message_model: inner.config.message_model,
            subscription_data_set: inner
                .config
                .register_topics
                .iter()
                .map(|t| Expression::all().to_subscription(t, version))
                .collect(),
            unit_mode: false,
        }
    }
}

impl PullConsumer {
    /// A builder with the Java client's defaults.
    pub fn builder() -> PullConsumerBuilder {
        PullConsumerBuilder::default()
    }

    pub(crate) async fn start(config: PullConsumerConfig, client: ClientConfig) -> Result<Self> {
        common::start_with_instance(config.message_model, client, |instance| {
            Self::start_on(config, instance)
        })
        .await
    }

    async fn start_on(config: PullConsumerConfig, instance: ClientInstance) -> Result<Self> {
        let group = config.group.clone();
        let offset_store = offset_store_for(
            config.message_model,
            &instance,
            &group,
            config.offset_store_dir.as_deref(),
        )?;
        offset_store.load().await?;
        for topic in &config.register_topics {
            if let Err(e) = instance.route(topic).await {
                warn!(group, topic, error = %e, "no route for a registered topic");
            }
        }
        let inner = Arc::new(Inner {
            config,
            instance: instance.clone(),
            offset_store,
            heartbeat: HeartbeatGate::default(),
            suggested: Mutex::new(HashMap::new()),
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            closed: AtomicBool::new(false),
            shutdown_lock: tokio::sync::Mutex::new(false),
            started_at_ms: now_ms(),
        });
        let registration = Arc::new(Registration {
            group: group.clone(),
            inner: Arc::downgrade(&inner),
        });
        instance.register_consumer(&group, registration).await?;
        spawn_persist_loop(&inner);
        info!(
            group,
            client_id = instance.client_id(),
            "pull consumer started"
        );
        Ok(PullConsumer {
            guard: Arc::new(DropGuard { inner }),
        })
    }

    fn inner(&self) -> &Inner {
        &self.guard.inner
    }

    fn check_running(&self) -> Result<&Inner> {
        let inner = self.inner();
        if inner.closed.load(Ordering::Acquire) {
            return Err(Error::Shutdown);
        }
        Ok(inner)
    }

    /// The consumer's settings.
    pub fn config(&self) -> &PullConsumerConfig {
        &self.inner().config
    }

    /// The consumer group.
    pub fn group(&self) -> &str {
        &self.inner().config.group
    }

    /// This client's id (`ip@instance`).
    pub fn client_id(&self) -> &str {
        self.inner().instance.client_id()
    }

    /// The client instance the consumer runs on.
    pub fn client_instance(&self) -> &ClientInstance {
        &self.inner().instance
    }

    /// Whether [`shutdown`](Self::shutdown) ran (or the consumer was
    /// dropped).
    pub fn is_shutdown(&self) -> bool {
        self.inner().closed.load(Ordering::Acquire)
    }

    /// The readable queues of `topic`, sorted, from a fresh route (Java
    /// `fetchSubscribeMessageQueues`).
    ///
    /// # Errors
    ///
    /// [`Error::Client`] when the topic has no route
    /// (`RouteNotFound`) or the name servers cannot be reached.
    pub async fn fetch_subscribe_queues(&self, topic: &str) -> Result<Vec<MessageQueue>> {
        let inner = self.check_running()?;
        let route = inner.instance.refresh_route(topic).await?;
        let mut queues = route.subscribe_queues().to_vec();
        queues.sort();
        Ok(queues)
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
    ) -> Result<PullResult> {
        let spec = PullSpec {
            offset,
            max: max_nums,
            hold: None,
            lite: false,
        };
        let timeout = self.inner().config.pull_timeout;
        self.pull_impl(queue, expression.into(), spec, timeout)
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
    ) -> Result<PullResult> {
        if timeout.is_zero() || timeout > MAX_HOLD {
            return Err(Error::InvalidArgument(format!(
                "pull_blocking timeout {timeout:?} must be positive and at most {MAX_HOLD:?}"
            )));
        }
        let spec = PullSpec {
            offset,
            max: max_nums,
            hold: Some(timeout),
            lite: false,
        };
        let call_timeout = timeout.saturating_add(PULL_TIMEOUT_OVERHEAD);
        self.pull_impl(queue, expression.into(), spec, call_timeout)
            .await
    }

    async fn pull_impl(
        &self,
        queue: &MessageQueue,
        expression: Expression,
        spec: PullSpec,
        call_timeout: Duration,
    ) -> Result<PullResult> {
        let inner = self.check_running()?;
        if spec.offset < 0 {
            return Err(Error::InvalidArgument(format!(
                "offset {} is negative",
                spec.offset
            )));
        }
        if spec.max < 1 {
            return Err(Error::InvalidArgument(format!(
                "max_nums {} must be at least 1",
                spec.max
            )));
        }
        expression
            .check(&queue.topic)
            .map_err(Error::InvalidArgument)?;
        let sub = expression.to_subscription(&queue.topic, now_ms());
        let broker_id = inner.suggested().get(queue).copied().unwrap_or(0);
        let (addr, _) = pull_addr(&inner.instance, queue, broker_id).await?;
        inner.heartbeat.ensure(&inner.instance, &addr).await;
        let header = common::pull_header(&inner.config.group, queue, &sub, spec);
        trace!(%queue, offset = spec.offset, addr, "pull");
        let result = inner
            .instance
            .pull_message(&addr, header, Some(call_timeout))
            .await?;
        inner
            .suggested()
            .insert(queue.clone(), result.suggest_which_broker_id);
        let mut messages = result.decode_messages(queue)?;
        filter_by_tags(&mut messages, &sub);
        Ok(PullResult {
            status: result.status,
            next_begin_offset: result.next_begin_offset,
            min_offset: result.min_offset,
            max_offset: result.max_offset,
            messages,
        })
    }

    /// The queue's min offset (GET_MIN_OFFSET at its master).
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`], [`Error::Client`].
    pub async fn min_offset(&self, queue: &MessageQueue) -> Result<i64> {
        let inner = self.check_running()?;
        common::min_offset(&inner.instance, queue).await
    }

    /// The queue's max offset: the offset the next message will get
    /// (GET_MAX_OFFSET at its master).
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`], [`Error::Client`].
    pub async fn max_offset(&self, queue: &MessageQueue) -> Result<i64> {
        let inner = self.check_running()?;
        common::max_offset(&inner.instance, queue).await
    }

    /// The offset of the first message of `queue` stored at or after
    /// `timestamp` (SEARCH_OFFSET_BY_TIMESTAMP, lower boundary).
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`], [`Error::Client`].
    pub async fn search_offset(&self, queue: &MessageQueue, timestamp: SystemTime) -> Result<i64> {
        let inner = self.check_running()?;
        common::search_offset(&inner.instance, queue, system_time_ms(timestamp)).await
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
    ) -> Result<Option<i64>> {
        let inner = self.check_running()?;
        inner.ensure_heartbeat_for(queue).await;
        let read = if from_store {
            ReadOffsetType::ReadFromStore
        } else {
            ReadOffsetType::MemoryFirstThenStore
        };
        Ok(inner.offset_store.read_offset(queue, read).await?)
    }

    /// Sets the group's consume offset of `queue` (the next offset to
    /// consume) in memory; it is persisted within 5 s, by
    /// [`persist`](Self::persist) and at [`shutdown`](Self::shutdown)
    /// (Java `updateConsumeOffset`). Moving backwards is allowed.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a negative offset; [`Error::Shutdown`].
    pub fn update_consume_offset(&self, queue: &MessageQueue, offset: i64) -> Result<()> {
        let inner = self.check_running()?;
        if offset < 0 {
            return Err(Error::InvalidArgument(format!(
                "offset {offset} is negative"
            )));
        }
        inner.offset_store.update_offset(queue, offset, false);
        Ok(())
    }

    /// Writes the in-memory consume offset of `queue` to the store now,
    /// waiting for the broker's answer (clustering) or the file write.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] when the write failed.
    pub async fn persist(&self, queue: &MessageQueue) -> Result<()> {
        let inner = self.check_running()?;
        inner.ensure_heartbeat_for(queue).await;
        Ok(inner.offset_store.persist(queue, PersistMode::Sync).await?)
    }

    /// Writes every in-memory consume offset to the store now, waiting for
    /// the answers (Java `persistConsumerOffset`).
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] naming the queues that failed (the others were
    /// stored).
    pub async fn persist_all(&self) -> Result<()> {
        let inner = self.check_running()?;
        inner.persist_all(PersistMode::Sync).await
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
    pub async fn send_back(&self, msg: &MessageExt, delay_level: i32) -> Result<()> {
        let inner = self.check_running()?;
        let queue = MessageQueue::new(msg.topic.clone(), msg.broker_name.clone(), msg.queue_id);
        let addr = if msg.broker_name.is_empty() {
            msg.store_host.to_string()
        } else {
            common::master_addr(&inner.instance, &queue).await?
        };
        inner.heartbeat.ensure(&inner.instance, &addr).await;
        let header = ConsumerSendMsgBackRequestHeader {
            offset: msg.commit_log_offset,
            group: inner.config.group.clone(),
            delay_level,
            origin_msg_id: Some(msg.msg_id.clone()),
            origin_topic: Some(msg.topic.clone()),
            unit_mode: Some(false),
            max_reconsume_times: Some(inner.config.max_reconsume_times),
            broker_name: (!msg.broker_name.is_empty()).then(|| msg.broker_name.clone()),
        };
        inner.instance.consumer_send_back(&addr, header).await?;
        debug!(group = %inner.config.group, msg_id = %msg.msg_id, delay_level, "message sent back");
        Ok(())
    }

    /// Stops the consumer: persists every in-memory consume offset
    /// (waiting for the broker), unregisters the group (UNREGISTER_CLIENT)
    /// and releases the client instance. Idempotent.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] when some offsets could not be persisted
    /// (everything else was still shut down).
    pub async fn shutdown(&self) -> Result<()> {
        let inner = self.inner();
        let mut done = inner.shutdown_lock.lock().await;
        if *done || inner.closed.swap(true, Ordering::AcqRel) {
            *done = true;
            return Ok(());
        }
        let group = inner.config.group.clone();
        inner.cancel.cancel();
        inner.tasks.close();
        inner.tasks.wait().await;
        let persisted = inner.persist_all(PersistMode::Sync).await;
        inner.instance.unregister_consumer(&group).await;
        inner.instance.release().await;
        *done = true;
        info!(group, "pull consumer shut down");
        persisted
    }
}

impl Inner {
    fn suggested(&self) -> std::sync::MutexGuard<'_, HashMap<MessageQueue, i64>> {
        self.suggested
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Before an offset call to the queue's broker: make sure the broker has
    /// seen the group (clustering only; the file store needs no broker).
    async fn ensure_heartbeat_for(&self, queue: &MessageQueue) {
        if self.config.message_model != MessageModel::Clustering {
            return;
        }
        match common::master_addr(&self.instance, queue).await {
            Ok(addr) => self.heartbeat.ensure(&self.instance, &addr).await,
            Err(e) => debug!(%queue, error = %e, "no broker address for the heartbeat check"),
        }
    }

    async fn persist_all(&self, mode: PersistMode) -> Result<()> {
        let mut mqs: Vec<MessageQueue> = self.offset_store.offset_table(None).into_keys().collect();
        if mqs.is_empty() {
            return Ok(());
        }
        mqs.sort();
        for mq in &mqs {
            self.ensure_heartbeat_for(mq).await;
        }
        Ok(self.offset_store.persist_all(&mqs, mode).await?)
    }
}

/// Every persist interval (client config, Java
/// `persistConsumerOffsetInterval`, 5 s), persists the in-memory offsets
/// (oneway, like Java's periodic persist).
fn spawn_persist_loop(inner: &Arc<Inner>) {
    let weak = Arc::downgrade(inner);
    let cancel = inner.cancel.clone();
    let every = inner.instance.config().persist_consumer_offset_interval();
    inner.tasks.spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = cancel.cancelled() => break,
            }
            let Some(inner) = weak.upgrade() else { break };
            if let Err(e) = inner.persist_all(PersistMode::Oneway).await {
                warn!(group = %inner.config.group, error = %e, "persisting offsets failed");
            }
        }
    });
}
