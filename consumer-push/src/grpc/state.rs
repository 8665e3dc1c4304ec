//! What the handle and every task of one gRPC push consumer share
//! ([`GrpcInner`]), the consume service it hands received messages to
//! ([`ConsumeService`]), its shutdown, and what stops it when the last
//! handle is dropped ([`GrpcGuard`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rmq_consumer_base::engine::grpc::{Acker, Backoff, ProxySettings, Received};
use rmq_consumer_base::{ConsumerEvent, ConsumerState, Health};
use rmq_grpc::Session;
use rmq_protocol::MessageQueue;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use super::queue::{Ack, QueueState};
use crate::config::PushConsumerConfig;
use crate::error::Result;
use crate::inspect::QueueSnapshot;
use crate::telemetry::ConsumerMetrics;

/// After the shutdown await timeout, how long abandoned tasks get to stop.
const ABORT_GRACE: Duration = Duration::from_secs(5);

/// How received messages are consumed (Java `ConsumeService`, chosen at
/// start: concurrently, or in order per message group).
pub(crate) trait ConsumeService: Send + Sync {
    /// Consumes `items` (one receive of `queue`'s assignment) in a tracked
    /// task; never waits.
    fn dispatch(&self, inner: &Arc<GrpcInner>, queue: &Arc<QueueState>, items: Vec<Received>);
}

/// State shared by the handle and every task of one gRPC push consumer.
pub(crate) struct GrpcInner {
    pub(crate) config: PushConsumerConfig,
    pub(crate) session: Session,
    group: String,
    /// The consume service.
    pub(super) service: Box<dyn ConsumeService>,
    /// FIFO consumption: an orderly listener, or a group that consumes in
    /// order (the proxy's settings).
    pub(super) fifo: bool,
    /// The proxy's settings as last read.
    settings: Mutex<Arc<ProxySettings>>,
    /// The broker's delay levels as a retry policy: the proxy's when it
    /// names none, and the delays of `Retry::Level`.
    pub(super) broker_levels: Backoff,
    /// At most `consume_concurrency` listener calls at once.
    pub(super) semaphore: Arc<Semaphore>,
    pub(crate) health: Health,
    pub(super) metrics: ConsumerMetrics,
    /// The assignments being received from (for inspection).
    queues: Mutex<BTreeMap<MessageQueue, Arc<QueueState>>>,
    /// The root: cancels everything, listener calls in flight included.
    pub(super) abort: CancellationToken,
    /// Child of `abort`: calls waiting for a permit, FIFO retries.
    pub(crate) stop_consume: CancellationToken,
    /// Child of `stop_consume`: the assignment and receive loops.
    pub(super) stop_receive: CancellationToken,
    /// Every task but the acker's.
    pub(super) tasks: TaskTracker,
    pub(super) acker: Acker<Ack>,
    /// Wakes the assignment loop (`rebalance_now`).
    pub(crate) trigger: Notify,
    closed: AtomicBool,
    /// Held by a shutdown in progress; `true` once one completed.
    shutdown_done: tokio::sync::Mutex<bool>,
}

impl GrpcInner {
    /// The state of a consumer of `session` (its settings answered:
    /// `proxy`) that consumes with `service`; spawns its acker.
    pub(super) fn new(
        config: PushConsumerConfig,
        session: Session,
        service: Box<dyn ConsumeService>,
        fifo: bool,
        proxy: ProxySettings,
        broker_levels: Backoff,
    ) -> Self {
        let group = config.group().to_owned();
        let abort = CancellationToken::new();
        let stop_consume = abort.child_token();
        let stop_receive = stop_consume.child_token();
        GrpcInner {
            acker: Acker::spawn(session.clone(), group.clone(), abort.child_token()),
            service,
            fifo,
            settings: Mutex::new(Arc::new(proxy)),
            broker_levels,
            semaphore: Arc::new(Semaphore::new(config.consume_concurrency)),
            health: Health::new(config.options.rebalance_listener().cloned()),
            metrics: ConsumerMetrics::new(&group),
            queues: Mutex::new(BTreeMap::new()),
            abort,
            stop_consume,
            stop_receive,
            tasks: TaskTracker::new(),
            trigger: Notify::new(),
            closed: AtomicBool::new(false),
            shutdown_done: tokio::sync::Mutex::new(false),
            session,
            group,
            config,
        }
    }

    pub(crate) fn group(&self) -> &str {
        &self.group
    }

    /// Runs `work` (listener calls and their settling) as a tracked task,
    /// abandoned once the consumer aborts.
    pub(super) fn spawn_consume(&self, work: impl Future<Output = ()> + Send + 'static) {
        let abort = self.abort.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = work => {}
                () = abort.cancelled() => {}
            }
        });
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The proxy's settings as last read.
    pub(super) fn proxy_settings(&self) -> Arc<ProxySettings> {
        self.settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reads the proxy's settings again (it may have sent new ones).
    pub(super) fn refresh_settings(&self) {
        let settings = self.session.server_settings();
        let fresh = ProxySettings::from_proto(settings.as_ref(), &self.broker_levels);
        let mut s = self.settings.lock().unwrap_or_else(PoisonError::into_inner);
        if **s != fresh {
            *s = Arc::new(fresh);
        }
    }

    /// The assignments being received from.
    pub(super) fn queue_map(&self) -> MutexGuard<'_, BTreeMap<MessageQueue, Arc<QueueState>>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn queue_count(&self) -> usize {
        self.queue_map().len()
    }

    /// A snapshot of every assignment, sorted.
    pub(crate) fn inspect(&self) -> Vec<QueueSnapshot> {
        let now = Instant::now();
        self.queue_map().values().map(|q| q.snapshot(now)).collect()
    }

    /// Stops the consumer (see [`PushConsumer::shutdown`](crate::PushConsumer::shutdown));
    /// later calls return at once.
    pub(crate) async fn shutdown(&self) -> Result<()> {
        let mut done = self.shutdown_done.lock().await;
        if *done || self.closed.swap(true, Ordering::AcqRel) {
            *done = true;
            return Ok(());
        }
        let group = self.group.as_str();
        info!(group, "push consumer shutting down (gRPC)");
        self.health.set_state(ConsumerState::ShuttingDown);
        // 1. No more receives, no more calls started.
        self.stop_receive.cancel();
        self.stop_consume.cancel();
        // 2. Calls in flight finish, bounded; their acks are queued.
        self.tasks.close();
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
        // 3. The acks queued go out; then the session ends (the proxy gives
        // what is still held back to the group).
        self.acker
            .finish(self.session.config().request_timeout().saturating_mul(4))
            .await;
        self.abort.cancel();
        self.session.shutdown().await;
        for q in std::mem::take(&mut *self.queue_map()).into_values() {
            q.set_dropped();
        }
        *done = true;
        self.health.set_state(ConsumerState::ShutDown);
        self.health.emit(ConsumerEvent::ShutDown);
        info!(group, "push consumer stopped (gRPC)");
        Ok(())
    }
}

/// What stops a gRPC push consumer whose last handle is dropped without
/// shutdown: every task at once, and the session in the background.
pub(crate) struct GrpcGuard(Arc<GrpcInner>);

impl GrpcGuard {
    pub(crate) fn new(inner: Arc<GrpcInner>) -> Self {
        GrpcGuard(inner)
    }

    pub(crate) fn inner(&self) -> &Arc<GrpcInner> {
        &self.0
    }
}

impl Drop for GrpcGuard {
    fn drop(&mut self) {
        let inner = &self.0;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        warn!(group = %inner.group, "push consumer dropped without shutdown: listener calls in flight are abandoned");
        inner.abort.cancel();
        inner.health.set_state(ConsumerState::ShutDown);
        inner.health.emit(ConsumerEvent::ShutDown);
        let session = inner.session.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { session.shutdown().await });
        }
    }
}
