//! [`Inner`]: the push consumer's shared state, the start sequence, queue
//! removal, inspection and the shutdown steps.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmq_client_core::ClientConfig;
use rmq_consumer_base::{ConsumerCore, Guarded, Registration};
use rmq_offset_store::PersistMode;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::MessageModel;
use rmq_rebalance::{QueueLocks, RebalanceTrigger};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::concurrent::listener::MessageListener;
use crate::config::{PushConsumerConfig, retry_topic};
use crate::consumer::PushConsumer;
use crate::error::{Error, Result};
use crate::inspect::QueueSnapshot;
use crate::orderly;
use crate::orderly::listener::OrderlyListener;
use crate::queues::QueueTable;
use crate::rebalance;
use crate::subscriptions::Subscriptions;
use crate::telemetry::ConsumerMetrics;

/// After the shutdown await timeout, how long abandoned tasks get to stop.
const ABORT_GRACE: Duration = Duration::from_secs(5);

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
    /// Instance, offset store, lifecycle; its token is the root of the
    /// token tree (cancels everything, including listener calls in flight).
    pub(crate) core: ConsumerCore,
    pub(crate) config: PushConsumerConfig,
    pub(crate) retry_topic: String,
    pub(crate) listener: Listener,
    /// Orderly clustering consumers only: the broker queue locks.
    pub(crate) locks: Option<Arc<QueueLocks>>,
    /// At most `consume_concurrency` listener calls at once.
    pub(crate) semaphore: Arc<Semaphore>,
    pub(crate) subscriptions: Subscriptions,
    /// The assigned queues.
    pub(crate) queues: QueueTable,
    /// Child of the root: listener calls waiting for a permit, local retries.
    pub(crate) stop_consume: CancellationToken,
    /// Child of `stop_consume`: rebalance, pull loops, persist loop.
    pub(crate) stop_pull: CancellationToken,
    pub(crate) trigger: RebalanceTrigger,
    /// Metric handles, the running info's figures.
    pub(crate) metrics: ConsumerMetrics,
    /// The message trace writer, when trace is on.
    pub(crate) trace: Option<rmq_client_core::trace::TraceDispatcher>,
}

impl Guarded for Inner {
    const NAME: &'static str = "push consumer";

    fn core(&self) -> &ConsumerCore {
        &self.core
    }

    fn before_unregister(&self) -> Option<BoxFuture<'static, ()>> {
        let locks = self.locks.clone()?;
        Some(Box::pin(async move { locks.unlock_all(true).await }))
    }

    fn drop_persist_queues(&self) -> Vec<MessageQueue> {
        self.queues.assigned(None)
    }
}

impl Inner {
    /// The start sequence (Java `DefaultMQPushConsumerImpl.start`).
    pub(crate) async fn start(
        config: PushConsumerConfig,
        client: ClientConfig,
        listener: Listener,
    ) -> Result<PushConsumer> {
        config.validate_detailed()?;
        let retry = retry_topic(config.group());
        let clustering = config.message_model() == MessageModel::Clustering;
        let mut topics: Vec<String> = config
            .subscriptions
            .iter()
            .map(|s| s.topic.clone())
            .collect();
        if clustering {
            topics.push(retry.clone());
        }
        let options = config.options.clone();
        ConsumerCore::start(&options, client, topics, |core| {
            Self::start_on(core, config, retry.clone(), listener)
        })
        .await
    }

    async fn start_on(
        core: ConsumerCore,
        config: PushConsumerConfig,
        retry: String,
        listener: Listener,
    ) -> Result<PushConsumer> {
        let clustering = config.message_model() == MessageModel::Clustering;
        let subscriptions = Subscriptions::new(
            &config.subscriptions,
            clustering.then_some(retry.as_str()),
            core.started_at_ms(),
        );
        let stop_consume = core.cancel().child_token();
        let stop_pull = stop_consume.child_token();
        let locks = (clustering && matches!(listener, Listener::Orderly(_))).then(|| {
            Arc::new(
                QueueLocks::new(core.instance().clone(), core.group().to_owned())
                    .with_lease(config.lock_lease),
            )
        });
        let inner = Arc::new(Inner {
            retry_topic: retry,
            listener,
            locks,
            semaphore: Arc::new(Semaphore::new(config.consume_concurrency)),
            subscriptions,
            queues: QueueTable::default(),
            stop_consume,
            stop_pull,
            trigger: rebalance::trigger(config.rebalance_interval),
            metrics: ConsumerMetrics::new(core.group()),
            trace: crate::trace::start(&config, core.instance()),
            core,
            config,
        });

        // Registering heartbeats at once: the broker must know the group and
        // its subscriptions before offsets or pulls.
        inner
            .core
            .register(Registration::new(inner.core.group(), &inner))
            .await?;
        let consumer = PushConsumer::new(inner.clone());
        // First rebalance inline, so queues are assigned when start returns
        // (a new trigger is due at once: consume that run).
        inner.trigger.wait().await;
        if inner.config.pop_mode {
            // The brokers keep the offsets: no rebalance, no persisting.
            if let Err(e) = crate::pop::start(&inner).await {
                inner.stop_pull.cancel();
                inner.stop_consume.cancel();
                inner.core.cancel().cancel();
                inner
                    .core
                    .instance()
                    .unregister_consumer(inner.core.group())
                    .await;
                return Err(e);
            }
        } else {
            rebalance::rebalance_once(&inner).await;
            rebalance::spawn(&inner);
            inner.spawn_persist_loop();
            orderly::lock_renewal::spawn(&inner);
        }
        info!(
            group = inner.core.group(),
            client_id = inner.core.instance().client_id(),
            model = %inner.config.message_model(),
            orderly = inner.is_orderly(),
            pop = inner.config.pop_mode,
            queues = inner.queues.len(),
            "push consumer started"
        );
        inner
            .core
            .health()
            .emit(rmq_consumer_base::ConsumerEvent::Started);
        Ok(consumer)
    }

    pub(crate) fn model(&self) -> MessageModel {
        self.config.message_model()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.core.is_closed()
    }

    /// Whether the orderly consume service runs.
    pub(crate) fn is_orderly(&self) -> bool {
        matches!(self.listener, Listener::Orderly(_))
    }

    /// Drops an assigned queue (rebalance): detach, persist its offset,
    /// forget it (Java `removeUnnecessaryMessageQueue`). Orderly clustering
    /// consumers also wait (bounded) for the call in flight and unlock the
    /// queue, unless `still_assigned` (a stuck queue being recreated).
    pub(crate) async fn drop_queue(self: &Arc<Self>, mq: &MessageQueue, still_assigned: bool) {
        if let Some(locks) = &self.locks {
            orderly::service::drop_queue(self, locks, mq, still_assigned).await;
            return;
        }
        if self.queues.detach(mq, None).is_none() {
            return;
        }
        let store = self.core.offset_store();
        if let Err(e) = store.persist(mq, PersistMode::Sync).await {
            warn!(group = %self.core.group(), queue = %mq, error = %rmq_protocol::ErrorChain(&e), "cannot persist the offset of a dropped queue");
        }
        store.remove_offset(mq);
    }

    /// A snapshot of every assigned queue, sorted.
    pub(crate) fn inspect(&self) -> Vec<QueueSnapshot> {
        let now = Instant::now();
        let table = self.core.offset_store().offset_table(None);
        self.queues
            .process_queues(None)
            .into_iter()
            .map(|(mq, pq)| {
                let committed = table.get(&mq).copied();
                let locked = self.locks.as_ref().map(|l| l.is_locked_and_fresh(&mq));
                QueueSnapshot::new(mq, pq.view(now), committed, locked)
            })
            .collect()
    }

    /// The persist tick's figures: every assigned queue's held messages,
    /// bytes and lag (broker max offset from the last pull answer − the
    /// committed offset), and a sample of the running info's totals.
    /// Returns the total lag.
    pub(crate) fn refresh_gauges(&self) -> i64 {
        let now = Instant::now();
        let table = self.core.offset_store().offset_table(None);
        let mut total = 0_i64;
        for (mq, pq) in self.queues.process_queues(None) {
            let view = pq.view(now);
            let lag = pq
                .metrics
                .lag(table.get(&mq).copied(), view.next_pull_offset);
            total = total.saturating_add(lag);
            pq.metrics.set_gauges(view.count, view.bytes, lag);
        }
        self.metrics.sample(now);
        total
    }

    /// The total lag of the assigned queues now (the running info).
    pub(crate) fn total_lag(&self) -> i64 {
        let table = self.core.offset_store().offset_table(None);
        self.queues
            .process_queues(None)
            .into_iter()
            .map(|(mq, pq)| {
                let next = pq.view(Instant::now()).next_pull_offset;
                pq.metrics.lag(table.get(&mq).copied(), next)
            })
            .fold(0_i64, i64::saturating_add)
    }

    /// The consumer's own shutdown steps (run once, by
    /// [`ConsumerCore::shutdown`], which then unregisters and releases).
    pub(crate) async fn stop(&self) -> Result<()> {
        let group = self.core.group();
        info!(group, "push consumer shutting down");
        // 1. No more rebalances, pulls or queued consumes.
        self.stop_pull.cancel();
        self.stop_consume.cancel();
        // 2. Listener calls in flight finish, bounded.
        let wait = self.config.shutdown_await_timeout;
        if !self.core.close_and_wait(wait).await {
            warn!(
                group,
                timeout = ?wait,
                "listener calls still running after the shutdown await timeout; abandoning them"
            );
            self.core.cancel().cancel();
            if !self.core.close_and_wait(ABORT_GRACE).await {
                warn!(group, "some consumer tasks did not stop");
            }
        }
        self.core.cancel().cancel();
        crate::trace::shutdown(self).await;
        // 3. Persist every offset, waiting for the broker; then (orderly)
        // release the queue locks, so the next owner reads these offsets.
        let mqs = self.queues.assigned(None);
        let persisted = self
            .core
            .offset_store()
            .persist_all(&mqs, PersistMode::Sync)
            .await;
        for mq in &mqs {
            self.queues.detach(mq, None);
        }
        if let Some(locks) = &self.locks {
            locks.unlock_all(false).await;
        }
        info!(group, "push consumer stopped; unregistering");
        persisted.map_err(Error::from)
    }

    /// The in-memory offset of `mq` (for the pull's commit-offset field).
    pub(crate) fn memory_offset(&self, mq: &MessageQueue) -> Option<i64> {
        self.core.offset_store().memory_offset(mq)
    }

    /// Every persist interval (client config, Java
    /// `persistConsumerOffsetInterval`, 5 s; first after one interval),
    /// persists the offsets of the assigned queues (oneway).
    fn spawn_persist_loop(self: &Arc<Self>) {
        let every = self
            .core
            .instance()
            .config()
            .persist_consumer_offset_interval();
        let inner = self.clone();
        self.core
            .spawn_every(every, self.stop_pull.clone(), move || {
                let inner = inner.clone();
                async move {
                    inner.refresh_gauges();
                    let mqs = inner.queues.assigned(None);
                    inner
                        .core
                        .offset_store()
                        .persist_all(&mqs, PersistMode::Oneway)
                        .await
                }
            });
    }
}
