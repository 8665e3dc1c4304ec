//! [`PushConsumer`]: the running consumer's handle, its shared state
//! ([`Inner`]), the start sequence and shutdown.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rmq_client_core::{ClientConfig, ClientInstance, now_ms};
use rmq_offset_store::{OffsetStore, PersistMode, ReadOffsetType, offset_store_for};
use rmq_protocol::MessageQueue;
use rmq_protocol::body::MessageModel;
use rmq_rebalance::{QueueLocks, RebalanceTrigger};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::builder::PushConsumerBuilder;
use crate::config::{PushConsumerConfig, retry_topic};
use crate::error::{Error, Result};
use crate::handle::Registration;
use crate::inspect::QueueSnapshot;
use crate::listener::MessageListener;
use crate::listener_orderly::OrderlyListener;
use crate::process_queue::ProcessQueue;
use crate::subscriptions::Subscriptions;
use crate::{consume_orderly, rebalance_driver};

/// After the shutdown await timeout, how long abandoned tasks get to stop.
const ABORT_GRACE: Duration = Duration::from_secs(5);

/// A running push consumer: a cheap-to-clone handle.
///
/// Created by [`PushConsumerBuilder::start`]. Background work (rebalance,
/// one pull loop per assigned queue, listener calls, offset persistence)
/// runs on the tokio runtime until [`shutdown`](PushConsumer::shutdown).
///
/// Dropping the last handle without `shutdown` cancels every task at once
/// (best effort: listener calls in flight are dropped, offsets are not
/// persisted — consumed messages since the last persist, at most 5 s, are
/// delivered again to the next consumer) and unregisters the consumer in a
/// last background task.
#[derive(Clone)]
#[must_use = "dropping the last PushConsumer handle stops consuming; call shutdown().await"]
pub struct PushConsumer {
    guard: Arc<DropGuard>,
}

impl fmt::Debug for PushConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.guard.inner;
        f.debug_struct("PushConsumer")
            .field("group", &inner.config.group)
            .field("client_id", &inner.instance.client_id())
            .field("queues", &inner.held_count())
            .field("shut_down", &inner.closed.load(Ordering::Acquire))
            .finish()
    }
}

/// Cancels everything when the last handle goes away without shutdown.
struct DropGuard {
    inner: Arc<Inner>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        inner.abort.cancel();
        inner.tasks.close();
        warn!(group = %inner.config.group, "push consumer dropped without shutdown; offsets not persisted");
        // Unregistering needs I/O: hand it to the runtime if there is one.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let instance = inner.instance.clone();
            let group = inner.config.group.clone();
            let locks = inner.locks.clone();
            rt.spawn(async move {
                if let Some(locks) = locks {
                    locks.unlock_all(true).await;
                }
                instance.unregister_consumer(&group).await;
                instance.release().await;
            });
        }
    }
}

/// One assigned queue: its process queue and its pull loop's token.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) pq: Arc<ProcessQueue>,
    pub(crate) cancel: CancellationToken,
}

/// The user's listener: what kind decides the consume service.
#[derive(Clone)]
pub(crate) enum Listener {
    /// Concurrent consumption (`start`).
    Concurrent(Arc<dyn MessageListener>),
    /// Orderly consumption (`start_orderly`).
    Orderly(Arc<dyn OrderlyListener>),
}

/// State shared by the handle and every task of one consumer.
pub(crate) struct Inner {
    pub(crate) config: PushConsumerConfig,
    pub(crate) retry_topic: String,
    pub(crate) instance: ClientInstance,
    pub(crate) listener: Listener,
    /// Orderly clustering consumers only: the broker queue locks.
    pub(crate) locks: Option<Arc<QueueLocks>>,
    /// Orderly: one async mutex per queue, held by a listener call and its
    /// settlement (Java `MessageQueueLock`); outlives process queues, so a
    /// queue dropped and re-added never runs two calls at once.
    consume_locks: Mutex<HashMap<MessageQueue, Arc<tokio::sync::Mutex<()>>>>,
    pub(crate) offset_store: Arc<dyn OffsetStore>,
    pub(crate) subscriptions: Subscriptions,
    /// Assigned queues. Lock order: `queues` → a process queue's lock →
    /// the offset store's lock; never held across `.await`.
    queues: Mutex<HashMap<MessageQueue, Held>>,
    /// Start offsets decided outside the rebalance (OFFSET_MOVED, offset
    /// reset), used when the queue is (re)created.
    pending_offsets: Mutex<HashMap<MessageQueue, i64>>,
    pub(crate) semaphore: Arc<Semaphore>,
    pub(crate) tasks: TaskTracker,
    /// Root token: cancels everything, including listener calls in flight.
    pub(crate) abort: CancellationToken,
    /// Child of `abort`: consume tasks waiting for a permit, local retries.
    pub(crate) stop_consume: CancellationToken,
    /// Child of `stop_consume`: rebalance, pull loops, persist loop.
    pub(crate) stop_pull: CancellationToken,
    pub(crate) trigger: RebalanceTrigger,
    pub(crate) started_at_ms: i64,
    closed: AtomicBool,
    shutdown_lock: tokio::sync::Mutex<bool>,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("group", &self.config.group)
            .finish_non_exhaustive()
    }
}

impl PushConsumer {
    /// A builder with the Java client's defaults.
    pub fn builder() -> PushConsumerBuilder {
        PushConsumerBuilder::default()
    }

    /// The consumer's settings.
    pub fn config(&self) -> &PushConsumerConfig {
        &self.guard.inner.config
    }

    /// The consumer group.
    pub fn group(&self) -> &str {
        &self.guard.inner.config.group
    }

    /// The client instance the consumer runs on.
    pub fn client_instance(&self) -> &ClientInstance {
        &self.guard.inner.instance
    }

    /// This client's id in the group (`ip@instance`).
    pub fn client_id(&self) -> &str {
        self.guard.inner.instance.client_id()
    }

    /// Whether [`shutdown`](Self::shutdown) ran (or the consumer was
    /// dropped).
    pub fn is_shutdown(&self) -> bool {
        self.guard.inner.closed.load(Ordering::Acquire)
    }

    /// A snapshot of every assigned queue: held offsets, counts, bytes,
    /// listener calls in flight, committed offset. Sorted by queue.
    pub fn inspect(&self) -> Vec<QueueSnapshot> {
        self.guard.inner.inspect()
    }

    /// Asks for a rebalance now (it runs at most once a second).
    pub fn rebalance_now(&self) {
        self.guard.inner.trigger.notify();
    }

    /// Stops the consumer: stops rebalancing and pulling; lets listener
    /// calls in flight finish (up to
    /// [`shutdown_await_timeout`](PushConsumerConfig::shutdown_await_timeout),
    /// then drops them: their messages are delivered again later); persists
    /// every offset (waiting for the broker); unregisters the consumer
    /// (UNREGISTER_CLIENT) and releases the client instance. Messages pulled
    /// but not consumed yet stay uncommitted and are delivered again to the
    /// group. When it returns, no task of this consumer is running.
    ///
    /// Idempotent: later (or concurrent) calls return `Ok(())` once the
    /// first is done.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] when some offsets could not be persisted
    /// (everything else was still shut down); the next consumer then
    /// starts from the previously stored offsets (duplicates, never loss).
    pub async fn shutdown(&self) -> Result<()> {
        self.guard.inner.shutdown().await
    }
}

impl Inner {
    /// The start sequence (Java `DefaultMQPushConsumerImpl.start`).
    pub(crate) async fn start(
        config: PushConsumerConfig,
        mut client: ClientConfig,
        listener: Listener,
    ) -> Result<PushConsumer> {
        config.validate()?;
        let clustering = config.message_model == MessageModel::Clustering;
        if clustering {
            // Java changeInstanceNameToPID: members of a group need distinct ids.
            client.change_instance_name_to_pid();
        }
        let instance = ClientInstance::get_or_start(client)?;
        match Self::start_on(config, instance.clone(), listener).await {
            Ok(c) => Ok(c),
            Err(e) => {
                instance.release().await;
                Err(e)
            }
        }
    }

    async fn start_on(
        config: PushConsumerConfig,
        instance: ClientInstance,
        listener: Listener,
    ) -> Result<PushConsumer> {
        let group = config.group.clone();
        let clustering = config.message_model == MessageModel::Clustering;
        let retry = retry_topic(&group);
        let started_at_ms = now_ms();
        let subscriptions = Subscriptions::new(
            &config.subscriptions,
            clustering.then_some(retry.as_str()),
            started_at_ms,
        );
        let offset_store = offset_store_for(
            config.message_model,
            &instance,
            &group,
            config.offset_store_dir.as_deref(),
        )?;
        offset_store.load().await?;

        // Routes first: the heartbeat goes to the brokers they name.
        for topic in subscriptions.topics() {
            match instance.route(&topic).await {
                Ok(_) => {}
                Err(e) if topic == retry => {
                    debug!(group, topic, error = %e, "no route for the retry topic yet")
                }
                Err(e) => warn!(
                    group, topic, error = %e,
                    "no route for a subscribed topic; consuming starts once it exists"
                ),
            }
        }

        let abort = CancellationToken::new();
        let stop_consume = abort.child_token();
        let stop_pull = stop_consume.child_token();
        let semaphore = Arc::new(Semaphore::new(config.consume_concurrency));
        let trigger = rebalance_driver::trigger(config.rebalance_interval);
        let locks = (clustering && matches!(listener, Listener::Orderly(_))).then(|| {
            Arc::new(QueueLocks::new(instance.clone(), group.clone()).with_lease(config.lock_lease))
        });
        let inner = Arc::new(Inner {
            retry_topic: retry,
            instance: instance.clone(),
            listener,
            locks,
            consume_locks: Mutex::new(HashMap::new()),
            offset_store,
            subscriptions,
            queues: Mutex::new(HashMap::new()),
            pending_offsets: Mutex::new(HashMap::new()),
            semaphore,
            tasks: TaskTracker::new(),
            abort,
            stop_consume,
            stop_pull,
            trigger,
            started_at_ms,
            closed: AtomicBool::new(false),
            shutdown_lock: tokio::sync::Mutex::new(false),
            config,
        });

        // Registering heartbeats at once: the broker must know the group and
        // its subscriptions before offsets or pulls.
        let registration = Arc::new(Registration::new(&inner));
        instance.register_consumer(&group, registration).await?;

        let consumer = PushConsumer {
            guard: Arc::new(DropGuard {
                inner: inner.clone(),
            }),
        };
        // First rebalance inline, so queues are assigned when start returns
        // (a new trigger is due at once: consume that run).
        inner.trigger.wait().await;
        rebalance_driver::rebalance_once(&inner).await;
        rebalance_driver::spawn(&inner);
        spawn_persist_loop(&inner);
        consume_orderly::spawn_lock_renewal(&inner);
        info!(
            group,
            client_id = inner.instance.client_id(),
            model = %inner.config.message_model,
            orderly = inner.is_orderly(),
            queues = inner.held_count(),
            "push consumer started"
        );
        Ok(consumer)
    }

    pub(crate) fn model(&self) -> MessageModel {
        self.config.message_model
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Whether the orderly consume service runs.
    pub(crate) fn is_orderly(&self) -> bool {
        matches!(self.listener, Listener::Orderly(_))
    }

    /// Whether `mq` is assigned now.
    pub(crate) fn is_held(&self, mq: &MessageQueue) -> bool {
        self.queues().contains_key(mq)
    }

    /// The orderly consume lock of `mq` (created on first use).
    pub(crate) fn consume_lock(&self, mq: &MessageQueue) -> Arc<tokio::sync::Mutex<()>> {
        self.consume_locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(mq.clone())
            .or_default()
            .clone()
    }

    /// Removes `mq` from the assigned queues and cancels its token (pull
    /// loop, orderly consume loop) without marking it dropped: the orderly
    /// removal lets the call in flight settle first.
    pub(crate) fn take_queue(&self, mq: &MessageQueue) -> Option<Arc<ProcessQueue>> {
        let held = self.queues().remove(mq)?;
        held.cancel.cancel();
        Some(held.pq)
    }

    fn queues(&self) -> MutexGuard<'_, HashMap<MessageQueue, Held>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<MessageQueue, i64>> {
        self.pending_offsets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn held_count(&self) -> usize {
        self.queues().len()
    }

    /// Assigned queues, of one topic or all, sorted.
    pub(crate) fn held_queues(&self, topic: Option<&str>) -> Vec<MessageQueue> {
        let mut v: Vec<MessageQueue> = self
            .queues()
            .keys()
            .filter(|mq| topic.is_none_or(|t| mq.topic == t))
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Process queues of `topic` (or all) with their queue.
    pub(crate) fn held_pqs(&self, topic: Option<&str>) -> Vec<(MessageQueue, Arc<ProcessQueue>)> {
        let mut v: Vec<_> = self
            .queues()
            .iter()
            .filter(|(mq, _)| topic.is_none_or(|t| mq.topic == t))
            .map(|(mq, h)| (mq.clone(), h.pq.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Adds an assigned queue. Returns `false` (and adds nothing) when it
    /// is already held.
    pub(crate) fn insert_queue(&self, mq: MessageQueue, held: Held) -> bool {
        let mut queues = self.queues();
        if queues.contains_key(&mq) {
            return false;
        }
        queues.insert(mq, held);
        true
    }

    /// Removes `mq` from the assigned queues — only if it still holds `pq`
    /// when given — stops its pull loop and marks it dropped. Returns the
    /// removed process queue.
    pub(crate) fn detach_queue(
        &self,
        mq: &MessageQueue,
        only: Option<&Arc<ProcessQueue>>,
    ) -> Option<Arc<ProcessQueue>> {
        let held = {
            let mut queues = self.queues();
            match (queues.get(mq), only) {
                (Some(h), Some(pq)) if !Arc::ptr_eq(&h.pq, pq) => return None,
                (None, _) => return None,
                _ => {}
            }
            queues.remove(mq)?
        };
        held.cancel.cancel();
        held.pq.set_dropped();
        Some(held.pq)
    }

    /// Drops an assigned queue (rebalance): detach, persist its offset,
    /// forget it (Java `removeUnnecessaryMessageQueue`). Orderly clustering
    /// consumers also wait (bounded) for the call in flight and unlock the
    /// queue, unless `still_assigned` (a stuck queue being recreated).
    pub(crate) async fn drop_queue(self: &Arc<Self>, mq: &MessageQueue, still_assigned: bool) {
        if let Some(locks) = &self.locks {
            consume_orderly::drop_queue(self, locks, mq, still_assigned).await;
            return;
        }
        if self.detach_queue(mq, None).is_none() {
            return;
        }
        if let Err(e) = self.offset_store.persist(mq, PersistMode::Sync).await {
            warn!(group = %self.config.group, queue = %mq, error = %e, "cannot persist the offset of a dropped queue");
        }
        self.offset_store.remove_offset(mq);
    }

    /// Records the offset a queue must restart from when it is recreated.
    pub(crate) fn set_pending_offset(&self, mq: MessageQueue, offset: i64) {
        self.pending().insert(mq, offset);
    }

    /// Takes the recorded restart offset of `mq`.
    pub(crate) fn take_pending_offset(&self, mq: &MessageQueue) -> Option<i64> {
        self.pending().remove(mq)
    }

    /// Forgets recorded restart offsets of `topic` except for `keep`.
    pub(crate) fn retain_pending(&self, topic: &str, keep: &[MessageQueue]) {
        self.pending()
            .retain(|mq, _| mq.topic != topic || keep.contains(mq));
    }

    pub(crate) fn inspect(&self) -> Vec<QueueSnapshot> {
        let now = Instant::now();
        let table = self.offset_store.offset_table(None);
        self.held_pqs(None)
            .into_iter()
            .map(|(mq, pq)| {
                let committed = table.get(&mq).copied();
                let locked = self.locks.as_ref().map(|l| l.is_locked_and_fresh(&mq));
                QueueSnapshot::new(mq, pq.view(now), committed, locked)
            })
            .collect()
    }

    async fn shutdown(&self) -> Result<()> {
        let mut done = self.shutdown_lock.lock().await;
        if *done {
            return Ok(());
        }
        if self.closed.swap(true, Ordering::AcqRel) {
            // Dropped handles already tore it down (cannot happen while a
            // handle calls shutdown, but stay safe).
            *done = true;
            return Ok(());
        }
        let group = self.config.group.clone();
        info!(group, "push consumer shutting down");
        // 1. No more rebalances, pulls or queued consumes.
        self.stop_pull.cancel();
        self.stop_consume.cancel();
        self.tasks.close();
        // 2. Listener calls in flight finish, bounded.
        let wait = self.config.shutdown_await_timeout;
        if tokio::time::timeout(wait, self.tasks.wait()).await.is_err() {
            warn!(
                group,
                timeout = ?wait,
                "listener calls still running after the shutdown await timeout; abandoning them"
            );
            self.abort.cancel();
            if tokio::time::timeout(ABORT_GRACE, self.tasks.wait())
                .await
                .is_err()
            {
                warn!(group, "some consumer tasks did not stop");
            }
        }
        self.abort.cancel();
        // 3. Persist every offset, waiting for the broker; then (orderly)
        // release the queue locks, so the next owner reads these offsets.
        let mqs = self.held_queues(None);
        let persisted = self.offset_store.persist_all(&mqs, PersistMode::Sync).await;
        for mq in &mqs {
            self.detach_queue(mq, None);
        }
        if let Some(locks) = &self.locks {
            locks.unlock_all(false).await;
        }
        // 4. Unregister and release the client instance.
        self.instance.unregister_consumer(&group).await;
        self.instance.release().await;
        *done = true;
        info!(group, "push consumer shut down");
        persisted.map_err(Error::from)
    }

    /// The in-memory offset of `mq` (for the pull's commit-offset field).
    pub(crate) async fn memory_offset(&self, mq: &MessageQueue) -> Option<i64> {
        self.offset_store
            .read_offset(mq, ReadOffsetType::ReadFromMemory)
            .await
            .ok()
            .flatten()
    }
}

/// Every persist interval (client config, Java
/// `persistConsumerOffsetInterval`, 5 s; first after one interval),
/// persists the offsets of the assigned queues.
fn spawn_persist_loop(inner: &Arc<Inner>) {
    let inner2 = inner.clone();
    let every = inner.instance.config().persist_consumer_offset_interval();
    inner.tasks.spawn(async move {
        let inner = inner2;
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = inner.stop_pull.cancelled() => break,
            }
            let mqs = inner.held_queues(None);
            if let Err(e) = inner
                .offset_store
                .persist_all(&mqs, PersistMode::Oneway)
                .await
            {
                warn!(group = %inner.config.group, error = %e, "persisting offsets failed");
            }
        }
    });
}
