//! [`Inner`]: the lite pull consumer's shared state (behind one mutex),
//! its registration in the client instance, hand-out, error reporting,
//! commit and shutdown.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use rmq_client_core::{ClientInstance, ConsumerHandle};
use rmq_offset_store::{OffsetStore, PersistMode};
use rmq_protocol::body::{ConsumeType, ConsumerData, MessageModel, SubscriptionData};
use rmq_protocol::{MessageExt, MessageQueue};
use rmq_rebalance::{DEFAULT_MIN_REBALANCE_INTERVAL, RebalanceTrigger, Rebalancer};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::common::{self, HeartbeatGate};
use crate::error::{Error, Result};
use crate::lite::LitePullConsumerConfig;
use crate::lite::buffer::{Buffer, Limits};

/// How long shutdown waits for the background tasks to stop (they stop at
/// their next `.await` once cancelled; a rebalance in progress finishes its
/// broker call first).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// Most background errors kept for `poll` / the stream; older ones are
/// dropped (they were logged).
const MAX_PENDING_ERRORS: usize = 32;

/// How the consumer gets its queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Neither yet.
    None,
    /// `subscribe`: the group rebalance assigns queues.
    Subscribe,
    /// `assign`: fixed queues.
    Assign,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::None => "nothing",
            Mode::Subscribe => "subscribe",
            Mode::Assign => "assign",
        }
    }
}

/// Everything behind the state mutex. Never held across `.await`.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) buffer: Buffer,
    pub(crate) mode: Mode,
    pub(crate) subscriptions: BTreeMap<String, Arc<SubscriptionData>>,
    /// The pull task token of every assigned queue.
    pub(crate) pulls: HashMap<MessageQueue, CancellationToken>,
    /// Background errors for `poll` / the stream.
    pub(crate) errors: VecDeque<Error>,
    /// Per queue, the last error reported (so a failing queue reports once
    /// until it succeeds again).
    pub(crate) reported: HashMap<MessageQueue, String>,
}

/// State shared by the handle, the streams and every task.
pub(crate) struct Inner {
    pub(crate) config: LitePullConsumerConfig,
    pub(crate) instance: ClientInstance,
    pub(crate) offset_store: Arc<dyn OffsetStore>,
    pub(crate) rebalancer: Rebalancer,
    pub(crate) trigger: RebalanceTrigger,
    pub(crate) heartbeat: HeartbeatGate,
    state: Mutex<State>,
    /// Messages (or an error, or shutdown) became available.
    pub(crate) msg_ready: Notify,
    /// Buffer room was freed or a queue was resumed.
    pub(crate) space: Notify,
    /// Serializes assignment changes: rebalance, assign, seek, shutdown.
    pub(crate) ops: tokio::sync::Mutex<()>,
    pub(crate) tasks: TaskTracker,
    pub(crate) cancel: CancellationToken,
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

/// The consumer as the client instance sees it.
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
        ConsumerData {
            consume_from_where: inner.config.consume_from.as_java(),
            consume_type: ConsumeType::ConsumeActively,
            group_name: self.group.clone(),
            message_model: inner.config.message_model,
            subscription_data_set: inner
                .state()
                .subscriptions
                .values()
                .map(|s| (**s).clone())
                .collect(),
            unit_mode: false,
        }
    }

    fn notify_ids_changed(&self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.trigger.notify();
        }
    }
}

impl Inner {
    /// The shared state of a consumer about to start.
    pub(crate) fn new(
        config: LitePullConsumerConfig,
        instance: ClientInstance,
        offset_store: Arc<dyn OffsetStore>,
        mode: Mode,
        subscriptions: BTreeMap<String, Arc<SubscriptionData>>,
    ) -> Arc<Self> {
        let limits = Limits {
            per_queue: config.pull_threshold_for_queue,
            total: config.pull_threshold_for_all,
            queue_bytes: config
                .pull_threshold_size_for_queue_mib
                .saturating_mul(1024 * 1024),
        };
        let rebalancer = Rebalancer::new(
            instance.clone(),
            config.group.clone(),
            config.message_model,
            config.allocate_strategy.clone(),
        );
        let trigger = RebalanceTrigger::with_intervals(
            config.rebalance_interval,
            DEFAULT_MIN_REBALANCE_INTERVAL.min(config.rebalance_interval),
        );
        Arc::new(Inner {
            instance,
            offset_store,
            rebalancer,
            trigger,
            heartbeat: HeartbeatGate::default(),
            state: Mutex::new(State {
                buffer: Buffer::new(limits),
                mode,
                subscriptions,
                pulls: HashMap::new(),
                errors: VecDeque::new(),
                reported: HashMap::new(),
            }),
            msg_ready: Notify::new(),
            space: Notify::new(),
            ops: tokio::sync::Mutex::new(()),
            tasks: TaskTracker::new(),
            cancel: CancellationToken::new(),
            closed: AtomicBool::new(false),
            shutdown_lock: tokio::sync::Mutex::new(false),
            config,
        })
    }

    /// Registers the consumer in the client instance (which heartbeats at
    /// once).
    pub(crate) async fn register(self: &Arc<Self>) -> Result<()> {
        let registration = Arc::new(Registration {
            group: self.config.group.clone(),
            inner: Arc::downgrade(self),
        });
        self.instance
            .register_consumer(&self.config.group, registration)
            .await?;
        Ok(())
    }

    /// Marks the consumer closed; `false` when it already was.
    pub(crate) fn close(&self) -> bool {
        !self.closed.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Wakes every waiter: readers (`msg_ready`) and pull tasks (`space`).
    pub(crate) fn wake_all(&self) {
        self.msg_ready.notify_waiters();
        self.space.notify_waiters();
    }

    pub(crate) fn set_mode(&self, st: &mut State, mode: Mode) -> Result<()> {
        match st.mode {
            Mode::None => {
                st.mode = mode;
                Ok(())
            }
            current if current == mode => Ok(()),
            current => Err(Error::SubscriptionConflict {
                attempted: mode.name(),
                current: current.name(),
            }),
        }
    }

    /// One step of `poll` / the stream: `Some` when there is something to
    /// return (messages, an error, or shutdown).
    pub(crate) fn try_take(&self, max: usize) -> Option<Result<Vec<MessageExt>>> {
        if self.is_closed() {
            return Some(Err(Error::Shutdown));
        }
        let msgs = {
            let mut st = self.state();
            if let Some(e) = st.errors.pop_front() {
                return Some(Err(e));
            }
            st.buffer.take(max)
        };
        if msgs.is_empty() {
            return None;
        }
        self.space.notify_waiters();
        Some(Ok(msgs))
    }

    /// Queues a background error for `poll` / the stream (once per queue
    /// until the queue succeeds again).
    pub(crate) fn report(&self, queue: &MessageQueue, error: Error) {
        let key = error_key(&error);
        {
            let mut st = self.state();
            if st.reported.get(queue) == Some(&key) {
                return;
            }
            st.reported.insert(queue.clone(), key);
            if st.errors.len() >= MAX_PENDING_ERRORS {
                st.errors.pop_front();
            }
            st.errors.push_back(error);
        }
        self.msg_ready.notify_waiters();
    }

    /// The queue works again: its next failure is reported.
    pub(crate) fn clear_reported(&self, queue: &MessageQueue) {
        let mut st = self.state();
        if !st.reported.is_empty() {
            st.reported.remove(queue);
        }
    }

    /// Stores the handed-out offsets in the offset store's memory and
    /// persists the assigned queues' offsets.
    pub(crate) async fn commit(&self, mode: PersistMode) -> Result<()> {
        let (queues, handed_out) = {
            let st = self.state();
            (st.buffer.queues(), st.buffer.handed_out())
        };
        for (mq, offset) in &handed_out {
            self.offset_store.update_offset(mq, *offset, false);
        }
        self.persist(&queues, mode).await
    }

    /// Persists the offsets of `queues` (after making sure their brokers
    /// know the group).
    pub(crate) async fn persist(&self, queues: &[MessageQueue], mode: PersistMode) -> Result<()> {
        if queues.is_empty() {
            return Ok(());
        }
        if self.config.message_model == MessageModel::Clustering {
            for mq in queues {
                self.ensure_heartbeat(mq).await;
            }
        }
        Ok(self.offset_store.persist_all(queues, mode).await?)
    }

    /// Makes sure the queue's broker has seen this group's heartbeat.
    pub(crate) async fn ensure_heartbeat(&self, mq: &MessageQueue) {
        match common::master_addr(&self.instance, mq).await {
            Ok(addr) => self.heartbeat.ensure(&self.instance, &addr).await,
            Err(e) => debug!(queue = %mq, error = %e, "no broker address for the heartbeat check"),
        }
    }

    pub(crate) async fn shutdown(&self) -> Result<()> {
        let mut done = self.shutdown_lock.lock().await;
        if *done || self.closed.swap(true, Ordering::AcqRel) {
            *done = true;
            return Ok(());
        }
        let group = self.config.group.clone();
        info!(group, "lite pull consumer shutting down");
        // 1. Nothing more is handed out; readers wake up and see it.
        self.wake_all();
        // 2. Stop rebalancing and pulling. Holding `ops` first: an
        // assignment change in progress finishes, and none starts (they
        // check `closed`), so no task is spawned after the wait.
        self.cancel.cancel();
        let _ops = self.ops.lock().await;
        self.tasks.close();
        if tokio::time::timeout(SHUTDOWN_WAIT, self.tasks.wait())
            .await
            .is_err()
        {
            warn!(group, timeout = ?SHUTDOWN_WAIT, "some consumer tasks did not stop in time");
        }
        // 3. Commit (with auto-commit) and persist, waiting for the broker.
        let persisted = if self.config.auto_commit {
            self.commit(PersistMode::Sync).await
        } else {
            let queues = self.state().buffer.queues();
            self.persist(&queues, PersistMode::Sync).await
        };
        {
            let mut st = self.state();
            st.buffer.clear();
            st.pulls.clear();
            st.errors.clear();
        }
        // 4. Unregister and release the client instance.
        self.instance.unregister_consumer(&group).await;
        self.instance.release().await;
        *done = true;
        info!(group, "lite pull consumer shut down");
        persisted
    }
}

/// What makes two errors of one queue "the same" for reporting.
fn error_key(e: &Error) -> String {
    let code = match e {
        Error::Pull { source, .. } => source.response_code(),
        Error::Client(c) => c.response_code(),
        _ => None,
    };
    match code {
        Some(code) => format!("{code:?}"),
        None => e.to_string(),
    }
}
