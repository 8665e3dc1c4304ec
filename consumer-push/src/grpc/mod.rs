//! The push consumer over the RocketMQ 5.x proxy ([`rmq_grpc::Session`]),
//! chosen by [`PushConsumerBuilder::endpoint`](crate::PushConsumerBuilder::endpoint);
//! as the Java gRPC client (`PushConsumerImpl`, `ProcessQueueImpl`,
//! `ConsumeService`).
//!
//! - The session's settings are a `PUSH_CONSUMER` of the group with its
//!   subscriptions; the proxy answers its own (FIFO or not, receive batch
//!   size, long-polling timeout, the retry backoff), read by [`policy`].
//! - [`assignment`]: `QueryAssignment` per subscribed topic, at start and
//!   every rebalance interval (at most 5 s, Java's period); one
//!   [`receive`] loop per assignment (a broker, queue id −1; a queue of a
//!   FIFO group).
//! - [`receive`]: long-polls `ReceiveMessage` (auto-renew: the proxy keeps
//!   the messages hidden while they are consumed) while the assignment
//!   holds less than the flow-control thresholds, and hands each batch to
//!   [`consume`] or [`fifo`] without waiting for it.
//! - [`consume`]: listener calls under the `consume_concurrency` permits;
//!   consumed messages go to the acker, failed ones are hidden for the
//!   backoff of their attempt (or go to the DLQ), in [`settle`].
//! - [`fifo`]: per message group, one call at a time in order; a failed
//!   call is retried here after the backoff, then its messages go to the
//!   DLQ.
//! - [`settle`]: the acker (one task batching `AckMessage` per topic),
//!   `ChangeInvisibleDuration`, `ForwardMessageToDeadLetterQueue`.
//!
//! Shutdown stops the receive loops, lets the listener calls in flight
//! finish (bounded by `shutdown_await_timeout`), acks what they consumed,
//! then ends the session: `NotifyClientTermination` makes the proxy give
//! the messages still held back to the group.

mod assignment;
mod consume;
mod fifo;
mod policy;
mod receive;
mod settle;

pub(crate) use policy::check_config;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmq_client_core::ClientConfig;
use rmq_consumer_base::{ConsumerEvent, ConsumerState, Health, Subscription};
use rmq_grpc::{ClientSettings, Session, proto};
use rmq_protocol::MessageQueue;
use rmq_protocol::body::ExpressionType;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::config::PushConsumerConfig;
use crate::consumer::PushConsumer;
use crate::error::{Error, Result};
use crate::inner::Listener;
use crate::inspect::QueueSnapshot;
use crate::telemetry::ConsumerMetrics;
use policy::ProxySettings;
use receive::QueueState;
use settle::Acker;

/// After the shutdown await timeout, how long abandoned tasks get to stop.
const ABORT_GRACE: Duration = Duration::from_secs(5);

/// State shared by the handle and every task of one gRPC push consumer.
pub(crate) struct GrpcInner {
    pub(crate) config: PushConsumerConfig,
    pub(crate) session: Session,
    group: String,
    pub(crate) listener: Listener,
    /// FIFO consumption: an orderly listener, or a group that consumes in
    /// order (the proxy's settings).
    pub(crate) fifo: bool,
    /// The proxy's settings as last read.
    settings: Mutex<Arc<ProxySettings>>,
    /// At most `consume_concurrency` listener calls at once.
    pub(crate) semaphore: Arc<Semaphore>,
    pub(crate) health: Health,
    pub(crate) metrics: ConsumerMetrics,
    /// The assignments being received from (for inspection).
    queues: Mutex<BTreeMap<MessageQueue, Arc<QueueState>>>,
    /// The root: cancels everything, listener calls in flight included.
    pub(crate) abort: CancellationToken,
    /// Child of `abort`: calls waiting for a permit, FIFO retries.
    pub(crate) stop_consume: CancellationToken,
    /// Child of `stop_consume`: the assignment and receive loops.
    pub(crate) stop_receive: CancellationToken,
    /// Every task but the acker's.
    pub(crate) tasks: TaskTracker,
    pub(crate) acker: Acker,
    /// Wakes the assignment loop (`rebalance_now`).
    pub(crate) trigger: Notify,
    closed: AtomicBool,
    /// Held by a shutdown in progress; `true` once one completed.
    shutdown_done: tokio::sync::Mutex<bool>,
}

/// The subscription entries of the settings.
fn entries(subs: &[Subscription]) -> Vec<proto::SubscriptionEntry> {
    subs.iter()
        .map(|s| {
            let e = s.filter();
            rmq_grpc::subscription_entry(&s.topic, e.kind() == ExpressionType::Sql92, e.text())
        })
        .collect()
}

/// Starts a push consumer of the proxy at `endpoint`: the session (its
/// settings answered), the first assignments and their receive loops.
///
/// # Errors
///
/// [`Error::Config`] for an invalid endpoint, or an orderly listener on a
/// group that does not consume in order; [`Error::Grpc`] when the session
/// cannot start.
pub(crate) async fn start(
    config: PushConsumerConfig,
    endpoint: &str,
    client: &ClientConfig,
    listener: Listener,
) -> Result<PushConsumer> {
    let group = config.group().to_owned();
    let grpc = rmq_consumer_base::grpc_config(endpoint, client)
        .map_err(|e| Error::Config(rmq_protocol::ErrorChain(&e).to_string()))?;
    let orderly = matches!(listener, Listener::Orderly(_));
    let settings = ClientSettings::consumer(
        proto::ClientType::PushConsumer,
        &group,
        entries(&config.subscriptions),
        orderly,
        config.suspend_timeout,
    );
    let session = Session::start(grpc, settings, None).await?;
    let proxy = ProxySettings::from_proto(session.server_settings().as_ref());
    if orderly && !proxy.fifo {
        session.shutdown().await;
        return Err(Error::Config(format!(
            "start_orderly through the proxy needs a group that consumes in order: the proxy says \
             {group} does not (mqadmin updateSubGroup -g {group} -o true)"
        )));
    }
    let abort = CancellationToken::new();
    let stop_consume = abort.child_token();
    let stop_receive = stop_consume.child_token();
    let inner = Arc::new(GrpcInner {
        acker: Acker::spawn(session.clone(), group.clone(), abort.child_token()),
        fifo: orderly || proxy.fifo,
        settings: Mutex::new(Arc::new(proxy)),
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
        listener,
        session,
        group,
        config,
    });
    let consumer = PushConsumer::new_grpc(inner.clone());
    assignment::start(&inner).await;
    info!(
        group = inner.group,
        endpoint,
        client_id = inner.session.client_id(),
        fifo = inner.fifo,
        queues = inner.queue_count(),
        "push consumer started (gRPC)"
    );
    inner.health.emit(ConsumerEvent::Started);
    Ok(consumer)
}

impl GrpcInner {
    pub(crate) fn group(&self) -> &str {
        &self.group
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The proxy's settings as last read.
    pub(crate) fn proxy_settings(&self) -> Arc<ProxySettings> {
        self.settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reads the proxy's settings again (it may have sent new ones).
    fn refresh_settings(&self) {
        let fresh = ProxySettings::from_proto(self.session.server_settings().as_ref());
        let mut s = self.settings.lock().unwrap_or_else(PoisonError::into_inner);
        if **s != fresh {
            *s = Arc::new(fresh);
        }
    }

    fn queue_map(&self) -> std::sync::MutexGuard<'_, BTreeMap<MessageQueue, Arc<QueueState>>> {
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

    /// Stops the consumer (see [`PushConsumer::shutdown`]); later calls
    /// return at once.
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
