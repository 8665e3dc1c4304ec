//! [`Inner`]: the state shared by the push consumer's handle and tasks over
//! the brokers (remoting pull and pop engines), and what it answers
//! (inspection, gauges, lag). Start and stop are in `lifecycle/`.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use rmq_consumer_base::{ConsumerCore, Guarded};
use rmq_protocol::MessageQueue;
use rmq_protocol::body::MessageModel;
use rmq_rebalance::{QueueLocks, RebalanceTrigger};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::config::PushConsumerConfig;
use crate::inspect::QueueSnapshot;
use crate::listener::concurrent::MessageListener;
use crate::listener::orderly::OrderlyListener;
use crate::pull::queues::QueueTable;
use crate::pull::subscriptions::Subscriptions;
use crate::telemetry::ConsumerMetrics;

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
    /// `mq` as a listener's context shows it: out of the namespace.
    pub(crate) fn user_queue(&self, mq: &Arc<MessageQueue>) -> Arc<MessageQueue> {
        let ns = self.core.namespace();
        if ns.is_none() {
            mq.clone()
        } else {
            Arc::new(ns.unwrap_queue(mq))
        }
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

    /// Listener calls in flight that the process queues count (the pull
    /// engine's concurrent and orderly services).
    pub(crate) fn queue_calls(&self) -> usize {
        let now = Instant::now();
        self.queues
            .process_queues(None)
            .into_iter()
            .map(|(_, pq)| pq.view(now).in_flight)
            .fold(0_usize, usize::saturating_add)
    }

    /// The in-memory offset of `mq` (for the pull's commit-offset field).
    pub(crate) fn memory_offset(&self, mq: &MessageQueue) -> Option<i64> {
        self.core.offset_store().memory_offset(mq)
    }
}
