//! [`Inner`]: the lite pull consumer's shared state (behind one mutex),
//! hand-out, error reporting, commit and shutdown (the start sequence is
//! in `start.rs`).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_consumer_base::{ConsumerCore, Guarded, HeartbeatGate, offsets};
use rmq_offset_store::PersistMode;
use rmq_protocol::body::SubscriptionData;
use rmq_protocol::{MessageExt, MessageQueue};
use rmq_rebalance::{DEFAULT_MIN_REBALANCE_INTERVAL, RebalanceTrigger, Rebalancer};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::error::{Error, PullConsumerKind, Result};
use crate::lite::buffer::{Buffer, Limits, Marked};
use crate::lite::config::LitePullConsumerConfig;
use crate::lite::telemetry::LiteMetrics;

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
    pub(crate) core: ConsumerCore,
    pub(crate) config: LitePullConsumerConfig,
    pub(crate) rebalancer: Rebalancer,
    pub(crate) trigger: RebalanceTrigger,
    pub(crate) heartbeat: HeartbeatGate,
    /// Metric handles (no-ops until the application installs a recorder).
    pub(crate) metrics: LiteMetrics,
    state: Mutex<State>,
    /// Messages (or an error, or shutdown) became available.
    pub(crate) msg_ready: Notify,
    /// Buffer room was freed or a queue was resumed.
    pub(crate) space: Notify,
    /// Serializes assignment changes: rebalance, assign, seek, shutdown.
    pub(crate) ops: tokio::sync::Mutex<()>,
    /// Held by a per-message commit while it persists: concurrent commits
    /// reach the broker one after the other, each sending the newest
    /// in-memory offset, so an older offset never overwrites a newer one
    /// (the broker may handle concurrent requests out of order).
    persisting: tokio::sync::Mutex<()>,
}

impl Guarded for Inner {
    const NAME: &'static str = "lite pull consumer";

    fn core(&self) -> &ConsumerCore {
        &self.core
    }

    fn wake(&self) {
        self.wake_all();
    }

    fn drop_persist_queues(&self) -> Vec<MessageQueue> {
        self.state().buffer.queues()
    }
}

impl Inner {
    /// The shared state of a consumer about to start.
    pub(super) fn new(
        core: ConsumerCore,
        config: LitePullConsumerConfig,
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
            core.instance().clone(),
            core.group().to_owned(),
            config.message_model(),
            config.allocate_strategy().clone(),
        );
        let trigger = RebalanceTrigger::with_intervals(
            config.rebalance_interval,
            DEFAULT_MIN_REBALANCE_INTERVAL.min(config.rebalance_interval),
        );
        // Without auto-commit, commits may be per message: track what was
        // handed out.
        let buffer = if config.auto_commit {
            Buffer::new(limits)
        } else {
            Buffer::tracking(limits)
        };
        let metrics = LiteMetrics::new(core.group());
        Arc::new(Inner {
            core,
            rebalancer,
            trigger,
            heartbeat: HeartbeatGate::default(),
            metrics,
            state: Mutex::new(State {
                buffer,
                mode,
                subscriptions,
                pulls: HashMap::new(),
                errors: VecDeque::new(),
                reported: HashMap::new(),
            }),
            msg_ready: Notify::new(),
            space: Notify::new(),
            ops: tokio::sync::Mutex::new(()),
            persisting: tokio::sync::Mutex::new(()),
            config,
        })
    }

    /// Whether the consumer is closed (shut down or dropped).
    pub(crate) fn is_closed(&self) -> bool {
        self.core.is_closed()
    }

    /// A new token for a queue's pull task (a child of the root).
    pub(crate) fn child_token(&self) -> CancellationToken {
        self.core.cancel().child_token()
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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
            let mut st = self.state();
            (st.buffer.queues(), st.buffer.commit_all())
        };
        let store = self.core.offset_store();
        for (mq, offset) in &handed_out {
            store.update_offset(mq, *offset, false);
        }
        self.persist(&queues, mode).await
    }

    /// Per-message commit: `mark` marks messages committed in the buffer;
    /// every queue whose commit position it returns gets that offset in the
    /// store's memory (under the state lock, so concurrent commits store
    /// positions in the order they were computed), then those queues are
    /// persisted one by one, waiting for the broker.
    pub(crate) async fn commit_marked(
        &self,
        mark: impl FnOnce(&mut Buffer) -> Result<Vec<(MessageQueue, i64)>>,
    ) -> Result<()> {
        let queues: Vec<MessageQueue> = {
            let mut st = self.state();
            if !st.buffer.is_tracking() {
                return Err(Error::InvalidArgument(
                    "per-message commits need auto_commit(false) on the builder; with \
                     auto-commit, everything handed out is committed periodically"
                        .into(),
                ));
            }
            let positions = mark(&mut st.buffer)?;
            let store = self.core.offset_store();
            for (mq, offset) in &positions {
                store.update_offset(mq, *offset, false);
            }
            positions.into_iter().map(|(mq, _)| mq).collect()
        };
        let store = self.core.offset_store();
        let _persisting = self.persisting.lock().await;
        for mq in &queues {
            if self.config.options.is_clustering() {
                self.ensure_heartbeat(mq).await;
            }
            // One queue at a time: `persist_all` would forget the others.
            store.persist(mq, PersistMode::Sync).await?;
        }
        Ok(())
    }

    /// Persists the offsets of `queues` (after making sure their brokers
    /// know the group).
    pub(crate) async fn persist(&self, queues: &[MessageQueue], mode: PersistMode) -> Result<()> {
        if queues.is_empty() {
            return Ok(());
        }
        self.metrics
            .refresh_lags(&self.core.offset_store().offset_table(None));
        if self.config.options.is_clustering() {
            for mq in queues {
                self.ensure_heartbeat(mq).await;
            }
        }
        Ok(self.core.offset_store().persist_all(queues, mode).await?)
    }

    /// Makes sure the queue's broker has seen this group's heartbeat.
    pub(crate) async fn ensure_heartbeat(&self, mq: &MessageQueue) {
        let instance = self.core.instance();
        match offsets::master_addr::<PullConsumerKind>(instance, mq).await {
            Ok(addr) => self.heartbeat.ensure(instance, &addr).await,
            Err(e) => {
                debug!(queue = %mq, error = %rmq_protocol::ErrorChain(&e), "no broker address for the heartbeat check")
            }
        }
    }

    /// The consumer's own shutdown steps (run once, by
    /// [`ConsumerCore::shutdown`], which then unregisters and releases).
    pub(crate) async fn stop(&self) -> Result<()> {
        let group = self.core.group();
        info!(group, "lite pull consumer shutting down");
        // 1. Nothing more is handed out; readers wake up and see it.
        self.wake_all();
        // 2. Stop rebalancing and pulling. Holding `ops` first: an
        // assignment change in progress finishes, and none starts (they
        // check `closed`), so no task is spawned after the wait.
        self.core.cancel().cancel();
        let _ops = self.ops.lock().await;
        if !self.core.close_and_wait(SHUTDOWN_WAIT).await {
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
        info!(group, "lite pull consumer stopped; unregistering");
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

/// The buffer's answer to a per-message commit as the commit position to
/// store (`None`: nothing to store).
pub(crate) fn marked(mq: &MessageQueue, marked: Marked) -> Result<Option<(MessageQueue, i64)>> {
    match marked {
        Marked::Position(offset) => Ok(Some((mq.clone(), offset))),
        Marked::Nothing => Ok(None),
        Marked::NotAssigned => Err(Error::NotAssigned { queue: mq.clone() }),
    }
}
