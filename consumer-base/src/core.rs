//! [`ConsumerCore`]: the part of a consumer's shared state every consumer
//! kind has — client instance, offset store, closed flag, shutdown lock,
//! root cancellation token, task tracker — with the start sequence, the
//! shutdown skeleton and the periodic persist loop; and [`DropGuard`],
//! what stops a consumer whose last handle is dropped without shutdown.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_client_core::{ClientConfig, ClientInstance, ConsumerHandle, now_ms};
use rmq_offset_store::{OffsetStore, PersistMode};
use rmq_protocol::namespace::Namespace;
use rmq_protocol::{MessageQueue, names};
use rmq_rebalance::RebalanceTrigger;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, info_span, warn};

use crate::error::{Error, Kind};
use crate::health::{ConsumerEvent, ConsumerState, Health};
use crate::options::GroupOptions;

/// The lifecycle and shared handles of one running consumer.
///
/// Every task of the consumer is spawned on [`tasks`](Self::tasks) and
/// listens to [`cancel`](Self::cancel) (or a child token of it), so that
/// once [`close_and_wait`](Self::close_and_wait) returns no task is left.
pub struct ConsumerCore {
    group: String,
    namespace: Namespace,
    instance: ClientInstance,
    offset_store: Arc<dyn OffsetStore>,
    own_offset_store: bool,
    started_at_ms: i64,
    tasks: TaskTracker,
    cancel: CancellationToken,
    closed: AtomicBool,
    /// Held by a shutdown in progress; `true` once one completed.
    shutdown_done: tokio::sync::Mutex<bool>,
    health: Arc<Health>,
}

impl Drop for ConsumerCore {
    fn drop(&mut self) {
        // Ends the untracked tasks (the broker-link forwarder) of a core
        // whose consumer failed to start.
        self.cancel.cancel();
    }
}

impl fmt::Debug for ConsumerCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsumerCore")
            .field("group", &self.group)
            .field("client_id", &self.instance.client_id())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl ConsumerCore {
    /// The start sequence every consumer shares (Java
    /// `DefaultMQPushConsumerImpl.start` and its pull siblings): a
    /// pid-based instance name for clustering consumers (Java
    /// `changeInstanceNameToPID`: members of a group need distinct client
    /// ids) → the client instance → the offset store (`options`' own, else
    /// the message model's default) loaded → the routes of `topics` (the
    /// heartbeat goes to the brokers they name; a topic without a route is
    /// logged, it is read once it exists) → `build`, which creates the
    /// consumer's state, registers it and spawns its tasks.
    ///
    /// When any step fails the client instance is released again.
    ///
    /// # Errors
    ///
    /// [`Error::Client`] (instance start, registration in `build`),
    /// [`Error::OffsetStore`] (the local store cannot be used), or what
    /// `build` returns.
    pub async fn start<K, T, F, Fut>(
        options: &GroupOptions,
        mut client: ClientConfig,
        topics: Vec<String>,
        build: F,
    ) -> Result<T, Error<K>>
    where
        K: Kind,
        F: FnOnce(ConsumerCore) -> Fut,
        Fut: Future<Output = Result<T, Error<K>>>,
    {
        if options.is_clustering() {
            client.change_instance_name_to_pid();
        }
        let namespace = client.namespace().clone();
        let instance = ClientInstance::get_or_start(client)?;
        let started = match Self::open(options, instance.clone(), &topics, namespace).await {
            Ok(core) => build(core).await,
            Err(e) => Err(e),
        };
        if started.is_err() {
            instance.release().await;
        }
        started
    }

    async fn open<K: Kind>(
        options: &GroupOptions,
        instance: ClientInstance,
        topics: &[String],
        namespace: Namespace,
    ) -> Result<ConsumerCore, Error<K>> {
        let group = options.group().to_owned();
        let health = Arc::new(Health::new(options.rebalance_listener().cloned()));
        let offset_store = options.open_offset_store(&instance)?;
        offset_store.load().await?;
        // With no topic yet, the group's retry topic asks the name server
        // whether it answers at all.
        let probe = [names::retry_topic(&group)];
        let asked = if topics.is_empty() {
            &probe[..]
        } else {
            topics
        };
        for topic in asked {
            match instance.route(topic).await {
                Ok(_) => {}
                Err(e @ rmq_client_core::Error::NameServerUnavailable { .. }) => {
                    if options.fail_fast() {
                        return Err(Error::Client(e));
                    }
                    warn!(group, error = %rmq_protocol::ErrorChain(&e), "no name server answers; starting anyway (fail_fast(false))");
                    health.name_server(Some(rmq_protocol::ErrorChain(&e).to_string()));
                    // The others would wait as long again.
                    break;
                }
                Err(e) if names::is_retry_topic(topic) => {
                    debug!(group, topic, error = %rmq_protocol::ErrorChain(&e), "no route for the retry topic yet")
                }
                Err(e) => {
                    warn!(
                        group, topic, error = %rmq_protocol::ErrorChain(&e),
                        "no route for a topic yet; reading starts once it exists"
                    );
                    if matches!(e, rmq_client_core::Error::RouteNotFound { .. }) {
                        health.emit(ConsumerEvent::TopicNotFound {
                            topic: topic.clone(),
                        });
                    }
                }
            }
        }
        let cancel = CancellationToken::new();
        Health::forward_broker_links(&health, &instance, cancel.clone());
        Ok(ConsumerCore {
            group,
            namespace,
            instance,
            offset_store,
            own_offset_store: options.offset_store().is_some(),
            started_at_ms: now_ms(),
            tasks: TaskTracker::new(),
            cancel,
            closed: AtomicBool::new(false),
            shutdown_done: tokio::sync::Mutex::new(false),
            health,
        })
    }

    /// The consumer's state, events and rebalance listener.
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// The consumer group.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The namespace of the client configuration: the group and the
    /// topics are in it on the brokers, and the messages leave it before
    /// the application sees them.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The client instance the consumer runs on.
    pub fn instance(&self) -> &ClientInstance {
        &self.instance
    }

    /// The group's offset store.
    pub fn offset_store(&self) -> &Arc<dyn OffsetStore> {
        &self.offset_store
    }

    /// Whether the offset store was given by the application (then the
    /// consumer writes no offsets to the broker itself).
    pub fn has_own_offset_store(&self) -> bool {
        self.own_offset_store
    }

    /// When the consumer started, ms since the epoch (the first
    /// subscription version).
    pub fn started_at_ms(&self) -> i64 {
        self.started_at_ms
    }

    /// The tracker every task of the consumer is spawned on.
    pub fn tasks(&self) -> &TaskTracker {
        &self.tasks
    }

    /// The root token: cancelling it stops every task.
    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the consumer is closed (shut down or dropped).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the consumer closed; `false` when it already was.
    pub fn close(&self) -> bool {
        !self.closed.swap(true, Ordering::AcqRel)
    }

    /// `Ok` while the consumer runs.
    ///
    /// # Errors
    ///
    /// [`Error::Shutdown`] once it is closed.
    pub fn check_open<K: Kind>(&self) -> Result<(), Error<K>> {
        if self.is_closed() {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Registers the consumer in the client instance (which heartbeats at
    /// once: the broker must know the group before it lists it for a
    /// rebalance or accepts its offsets).
    ///
    /// # Errors
    ///
    /// [`Error::Client`] when the group is already registered in this
    /// client instance.
    pub async fn register<K: Kind>(&self, handle: Arc<dyn ConsumerHandle>) -> Result<(), Error<K>> {
        self.instance.register_consumer(&self.group, handle).await?;
        Ok(())
    }

    /// Undoes a start that failed after [`register`](Self::register):
    /// cancels every task of the consumer (the root token) and unregisters
    /// the group (UNREGISTER_CLIENT), so the broker forgets it at once; the
    /// caller returns its error and the handle's drop guard releases the
    /// client instance.
    pub async fn abandon_start(&self) {
        self.cancel.cancel();
        self.instance.unregister_consumer(&self.group).await;
    }

    /// The shutdown every consumer shares: the first call closes the
    /// consumer, runs `stop` (the consumer's own steps: cancel, wait for its
    /// tasks, persist), unregisters the group (UNREGISTER_CLIENT) and
    /// releases the client instance; later and concurrent calls wait for it
    /// and return `Ok(())`. A consumer already closed by its drop guard is
    /// not stopped again.
    ///
    /// # Errors
    ///
    /// What `stop` returned (everything else still ran).
    pub async fn shutdown<K: Kind>(
        &self,
        stop: impl Future<Output = Result<(), Error<K>>>,
    ) -> Result<(), Error<K>> {
        let mut done = self.shutdown_done.lock().await;
        if *done || !self.close() {
            *done = true;
            return Ok(());
        }
        self.health.set_state(ConsumerState::ShuttingDown);
        let stopped = stop.await;
        // Every task is stopped by now; this ends the untracked ones (the
        // broker-link forwarder).
        self.cancel.cancel();
        self.instance.unregister_consumer(&self.group).await;
        self.instance.release().await;
        *done = true;
        self.health.set_state(ConsumerState::ShutDown);
        self.health.emit(ConsumerEvent::ShutDown);
        stopped
    }

    /// Closes the tracker and waits for every task, at most `limit`;
    /// `false` when some did not stop in time.
    pub async fn close_and_wait(&self, limit: Duration) -> bool {
        self.tasks.close();
        tokio::time::timeout(limit, self.tasks.wait()).await.is_ok()
    }

    /// Runs `work` every `every` (first after one period) until `stop`
    /// fires; a failure is logged and tried again at the next period. For
    /// the periodic offset persist (Java `persistConsumerOffsetInterval`)
    /// and the lite consumer's auto-commit.
    pub fn spawn_every<F, Fut, E>(&self, every: Duration, stop: CancellationToken, work: F)
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: std::error::Error + 'static,
    {
        self.tasks
            .spawn(run_every(self.group.clone(), every, stop, work));
    }
}

/// The loop of [`ConsumerCore::spawn_every`].
async fn run_every<F, Fut, E>(group: String, every: Duration, stop: CancellationToken, mut work: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::error::Error + 'static,
{
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = stop.cancelled() => break,
        }
        let done = tokio::select! {
            r = work() => r,
            () = stop.cancelled() => break,
        };
        if let Err(e) = done {
            warn!(group, error = %rmq_protocol::ErrorChain(&e), "persisting offsets failed; trying again later");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("refused")]
    struct Refused;

    /// The persist loop in paused time: first run after one period, one run
    /// per period, a failure does not end it, the token does.
    #[tokio::test(start_paused = true)]
    async fn runs_once_per_period_through_failures_until_stopped() {
        let runs = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let counted = runs.clone();
        let task = tokio::spawn(run_every(
            "G".into(),
            Duration::from_secs(5),
            stop.clone(),
            move || {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                async move { if n % 2 == 0 { Err(Refused) } else { Ok(()) } }
            },
        ));
        tokio::time::sleep(Duration::from_millis(4_900)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing before one period");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            3,
            "one run per period, failures included"
        );
        stop.cancel();
        task.await.expect("the loop ends when stopped");
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 3);
    }

    /// A run in progress is cut by the token (shutdown persists itself).
    #[tokio::test(start_paused = true)]
    async fn a_stop_cuts_a_run_in_progress() {
        let stop = CancellationToken::new();
        let started = Arc::new(tokio::sync::Notify::new());
        let signal = started.clone();
        let task = tokio::spawn(run_every(
            "G".into(),
            Duration::from_secs(1),
            stop.clone(),
            move || {
                signal.notify_one();
                async {
                    std::future::pending::<()>().await;
                    Ok::<(), Refused>(())
                }
            },
        ));
        started.notified().await;
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .expect("the loop ends at once")
            .expect("no panic");
    }
}

impl ConsumerCore {
    /// The rebalance task of the consumer `inner`: `rebalance` runs each
    /// time its trigger (`trigger(&inner)`) is due — every rebalance
    /// interval, and at once when the group changes — until `stop` fires. A
    /// run in progress is not cut by `stop` (a queue dropped half-way could
    /// miss its offset persist), only by `abort` when given (every call in a
    /// run has a timeout, so a shutdown that waits for the run is bounded).
    pub fn spawn_rebalance_loop<T, RF>(
        &self,
        inner: &Arc<T>,
        trigger: fn(&T) -> &RebalanceTrigger,
        stop: CancellationToken,
        abort: Option<CancellationToken>,
        rebalance: fn(Arc<T>) -> RF,
    ) where
        T: Send + Sync + 'static,
        RF: Future<Output = ()> + Send + 'static,
    {
        // Long-lived task spans are root spans, so the caller's span can end.
        let span = info_span!(parent: None, "rebalance_loop", group = %self.group);
        let inner = inner.clone();
        self.tasks.spawn(
            async move {
                loop {
                    tokio::select! {
                        () = trigger(&inner).wait() => {}
                        () = stop.cancelled() => break,
                    }
                    match &abort {
                        Some(abort) => tokio::select! {
                            () = rebalance(inner.clone()) => {}
                            () = abort.cancelled() => break,
                        },
                        None => rebalance(inner.clone()).await,
                    }
                }
            }
            .instrument(span),
        );
    }
}

/// The tracing span of a queue's pull task (the same fields in every
/// consumer).
pub fn queue_span(mq: &rmq_protocol::MessageQueue) -> tracing::Span {
    info_span!(parent: None, "pull_loop", topic = %mq.topic, broker = %mq.broker_name, queue_id = mq.queue_id)
}

/// What the [`DropGuard`] needs from a consumer's shared state.
pub trait Guarded: Send + Sync + 'static {
    /// The consumer in log texts (`"push consumer"`).
    const NAME: &'static str;

    /// The consumer's core.
    fn core(&self) -> &ConsumerCore;

    /// Wakes whoever waits on the consumer (readers of a stream), after the
    /// tasks were cancelled. Default: nothing.
    fn wake(&self) {}

    /// Work to do in the background before the group is unregistered
    /// (e.g. releasing broker queue locks). Default: none.
    fn before_unregister(&self) -> Option<BoxFuture<'static, ()>> {
        None
    }

    /// The queues whose in-memory offsets the drop guard persists (the
    /// queues the consumer holds; not revoked ones, whose offsets a new
    /// owner writes). Default: none.
    fn drop_persist_queues(&self) -> Vec<MessageQueue> {
        Vec::new()
    }

    /// Whether the drop guard sends a heartbeat before persisting (a
    /// consumer that may not have heartbeated yet: 5.x brokers store
    /// offsets only of a group they know). Default: no.
    fn heartbeat_before_drop_persist(&self) -> bool {
        false
    }
}

/// Longest a dropped consumer's final offset persist may take (also
/// capped by the request timeout).
const DROP_PERSIST_LIMIT: Duration = Duration::from_secs(3);

/// How the drop guard persisted the offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DropPersist {
    /// Nothing to persist.
    Nothing,
    /// Handed to a background task.
    Background,
    /// No runtime: not persisted.
    NoRuntime,
}

/// Persists `queues`' offsets from a `Drop`: the returned future, which the
/// guard runs as a task (at most `limit`); without a runtime not at all.
fn persist_on_drop(
    heartbeat: Option<ClientInstance>,
    store: Arc<dyn OffsetStore>,
    queues: Vec<MessageQueue>,
    group: &str,
    limit: Duration,
) -> (DropPersist, Option<BoxFuture<'static, ()>>) {
    if queues.is_empty() {
        return (DropPersist::Nothing, None);
    }
    if tokio::runtime::Handle::try_current().is_err() {
        return (DropPersist::NoRuntime, None);
    }
    let group_owned = group.to_owned();
    let persist = async move {
        let persisted = async {
            if let Some(instance) = &heartbeat {
                instance.send_heartbeat_now().await;
            }
            store.persist_all(&queues, PersistMode::Sync).await
        };
        match tokio::time::timeout(limit, persisted).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                warn!(group = %group_owned, error = %rmq_protocol::ErrorChain(&e), "persisting offsets of a dropped consumer failed");
                false
            }
            Err(_) => {
                warn!(group = %group_owned, ?limit, "persisting offsets of a dropped consumer timed out");
                false
            }
        }
    };
    // Never blocks the dropping thread: a drop on a runtime worker that
    // waited for the persist could wait for timers and I/O that thread
    // itself drives (seen as a hang), so the persist runs as a task.
    (
        DropPersist::Background,
        Some(Box::pin(async move {
            persist.await;
        })),
    )
}

/// Owned by a consumer's handles (behind an `Arc`): when the last handle
/// goes away without shutdown, cancels every task at once, persists the
/// held queues' offsets (best effort, bounded, in a background task
/// of the runtime), logs a warning naming
/// `shutdown()`, and unregisters the group and releases the client
/// instance in a last background task. In-flight messages are not drained:
/// they come again (at least once).
pub struct DropGuard<T: Guarded> {
    inner: Arc<T>,
}

impl<T: Guarded> DropGuard<T> {
    /// The guard of `inner`.
    pub fn new(inner: Arc<T>) -> Self {
        DropGuard { inner }
    }

    /// The consumer's shared state.
    pub fn inner(&self) -> &Arc<T> {
        &self.inner
    }
}

impl<T: Guarded> fmt::Debug for DropGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DropGuard")
            .field("core", self.inner.core())
            .finish()
    }
}

impl<T: Guarded> Drop for DropGuard<T> {
    fn drop(&mut self) {
        let core = self.inner.core();
        if !core.close() {
            return;
        }
        core.cancel.cancel();
        core.tasks.close();
        self.inner.wake();
        core.health.set_state(ConsumerState::ShutDown);
        core.health.emit(ConsumerEvent::ShutDown);
        let limit = core
            .instance
            .config()
            .request_timeout()
            .min(DROP_PERSIST_LIMIT);
        let heartbeat = self
            .inner
            .heartbeat_before_drop_persist()
            .then(|| core.instance.clone());
        let (persisted, background) = persist_on_drop(
            heartbeat,
            core.offset_store.clone(),
            self.inner.drop_persist_queues(),
            &core.group,
            limit,
        );
        let offsets = match persisted {
            DropPersist::Nothing => "no offsets to persist",
            DropPersist::Background => "offsets persisted in the background (best effort)",
            DropPersist::NoRuntime => "offsets NOT persisted (no tokio runtime)",
        };
        warn!(
            group = %core.group,
            "{} dropped without shutdown(); {offsets}; call `shutdown().await` before dropping \
             it to drain in-flight messages and persist every offset",
            T::NAME
        );
        // Unregistering needs I/O: hand it to the runtime if there is one.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let first = self.inner.before_unregister();
            let instance = core.instance.clone();
            let group = core.group.clone();
            rt.spawn(async move {
                if let Some(persist) = background {
                    persist.await;
                }
                if let Some(first) = first {
                    first.await;
                }
                instance.unregister_consumer(&group).await;
                instance.release().await;
            });
        }
    }
}
