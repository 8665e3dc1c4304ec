//! One fake broker: its state ([`BrokerState`]), its lifecycle (start,
//! kill, crash, restart), its background tasks (delayed-message delivery,
//! housekeeping) and the [`FakeBroker`] handle tests use.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`BrokerShared`], [`BrokerState`], lifecycle, [`FakeBroker`] |
//! | `store.rs` | commit log and consume queues, reads as `DefaultMessageStore` |
//! | `topics.rs` | topic configs, auto-creation, name rules |
//! | `clients.rs` | consumer / producer groups, SQL92 filter registrations |
//! | `locks.rs` | orderly queue locks with leases |
//! | `hold.rs` | long polling |
//! | `schedule.rs` | delay levels |
//! | `filter/` | tag and SQL92 filters |
//! | `handlers/` | one handler per request code |
//!
//! Locking: one `std::sync::Mutex` per broker around [`BrokerState`], held
//! for the synchronous part of a request only, never across an `.await`;
//! frames to clients are queued after it is released.

mod clients;
pub(crate) mod filter;
mod handlers;
mod hold;
mod locks;
mod schedule;
pub(crate) mod store;
pub(crate) mod topics;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::body::{MessageModel, perm};
use rmq_protocol::message::{
    UniqIdGenerator, decode_message, ms_since_month_start, property, sys_flag,
};
use rmq_protocol::{MessageExt, MessageQueue, RequestCode};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::clock::FakeClock;
use crate::config::{ClusterConfig, FlushPolicy};
use crate::error::{FakeError, Result};
use crate::namesrv::NameServer;
use crate::net::{self, ConnShared, NetShared, Server, ServerKind, lock};

use clients::Clients;
use hold::Holds;
use locks::Locks;
use schedule::Schedule;
use store::{NewMessage, PutError, Store, StoredMsg};
use topics::{AUTO_CREATE_TOPIC, SCHEDULE_TOPIC, TopicConfig, Topics};

/// Configuration of a subscription group (Java `SubscriptionGroupConfig`),
/// created on first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupConfig {
    pub(crate) retry_max_times: i32,
    pub(crate) retry_queue_nums: i32,
    pub(crate) consume_enable: bool,
    pub(crate) notify_enable: bool,
}

/// Everything a broker knows, behind its one lock.
#[derive(Debug, Default)]
pub(crate) struct BrokerState {
    pub(crate) running: bool,
    pub(crate) topics: Topics,
    pub(crate) store: Store,
    pub(crate) groups: HashMap<String, GroupConfig>,
    pub(crate) clients: Clients,
    /// (group, topic, queue id) → committed offset.
    pub(crate) offsets: HashMap<(String, String, i32), i64>,
    flushed_offsets: HashMap<(String, String, i32), i64>,
    pub(crate) locks: Locks,
    pub(crate) holds: Holds,
    pub(crate) schedule: Schedule,
}

/// A running broker's server and tasks.
#[derive(Debug)]
struct Running {
    server: Server,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

/// What every broker of a cluster shares.
#[derive(Debug, Clone)]
pub(crate) struct ClusterParts {
    pub(crate) cfg: Arc<ClusterConfig>,
    pub(crate) clock: FakeClock,
    pub(crate) namesrv: Arc<NameServer>,
    pub(crate) net: Arc<NetShared>,
    pub(crate) cancel: CancellationToken,
}

/// One broker, shared by its handle, its service and its tasks.
#[derive(Debug)]
pub(crate) struct BrokerShared {
    pub(crate) name: String,
    pub(crate) cfg: Arc<ClusterConfig>,
    pub(crate) clock: FakeClock,
    pub(crate) namesrv: Arc<NameServer>,
    pub(crate) net: Arc<NetShared>,
    state: Mutex<BrokerState>,
    /// Fixed at the first start: a restart listens on the same port.
    addr: Mutex<Option<SocketAddr>>,
    port: u16,
    run: tokio::sync::Mutex<Option<Running>>,
    cluster_cancel: CancellationToken,
    schedule_changed: Notify,
    uniq: UniqIdGenerator,
}

impl BrokerShared {
    pub(crate) fn new(name: String, port: u16, seed: i32, parts: &ClusterParts) -> Arc<Self> {
        let ClusterParts {
            cfg,
            clock,
            namesrv,
            net,
            cancel: cluster_cancel,
        } = parts.clone();
        let mut state = BrokerState::default();
        if cfg.auto_create_topic {
            state.topics.put(
                AUTO_CREATE_TOPIC,
                TopicConfig::new(cfg.default_queues, perm::INHERIT | perm::READ | perm::WRITE),
            );
        }
        for (topic, queues) in &cfg.seed_topics {
            state.topics.put(
                topic,
                TopicConfig::new(
                    queues.unwrap_or(cfg.default_queues),
                    perm::READ | perm::WRITE,
                ),
            );
        }
        let pid = UniqIdGenerator::truncate_pid(std::process::id());
        let uniq = UniqIdGenerator::new(cfg.host, pid, seed);
        Arc::new(BrokerShared {
            name,
            cfg,
            clock,
            namesrv,
            net,
            state: Mutex::new(state),
            addr: Mutex::new(None),
            port,
            run: tokio::sync::Mutex::new(None),
            cluster_cancel,
            schedule_changed: Notify::new(),
            uniq,
        })
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, BrokerState> {
        lock(&self.state)
    }

    /// The broker's address (its store host).
    pub(crate) fn addr(&self) -> SocketAddr {
        lock(&self.addr).unwrap_or_else(|| SocketAddr::new(self.cfg.host, self.port))
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub(crate) fn lease_ms(&self) -> i64 {
        i64::try_from(self.cfg.lock_lease.as_millis()).unwrap_or(i64::MAX)
    }

    /// A broker-generated `UNIQ_KEY` (5.x, for messages sent without one).
    pub(crate) fn new_uniq_key(&self) -> String {
        self.uniq.next(ms_since_month_start(self.now_ms(), 0))
    }

    // ------------------------------------------------------------ lifecycle

    /// Binds and starts serving; registers with the name server.
    pub(crate) async fn start(self: &Arc<Self>) -> Result<()> {
        let mut run = self.run.lock().await;
        if run.is_some() {
            return Err(FakeError::BrokerRunning(self.name.clone()));
        }
        if self.cluster_cancel.is_cancelled() {
            return Err(FakeError::Shutdown);
        }
        let port = lock(&self.addr).map_or(self.port, |a| a.port());
        let (listener, addr) = net::bind(self.cfg.host, port)?;
        *lock(&self.addr) = Some(addr);
        let cancel = self.cluster_cancel.child_token();
        let server = Server::start(
            listener,
            ServerKind::Broker(self.name.clone()),
            self.cfg.flavor,
            Arc::new(BrokerService(Arc::clone(self))),
            Arc::clone(&self.net),
            &cancel,
        );
        let tracker = TaskTracker::new();
        tracker.spawn(schedule_loop(Arc::clone(self), cancel.clone()));
        tracker.spawn(housekeeping_loop(Arc::clone(self), cancel.clone()));
        {
            let mut st = self.state();
            st.running = true;
            self.register_all(&st);
        }
        debug!(broker = %self.name, %addr, "fake broker started");
        *run = Some(Running {
            server,
            cancel,
            tracker,
        });
        Ok(())
    }

    /// Stops serving: closes the listener and every connection, leaves the
    /// name server's routes. With `lose_unflushed`, what was not flushed is
    /// gone (messages and committed offsets).
    pub(crate) async fn stop(&self, lose_unflushed: bool) -> Result<()> {
        let mut run = self.run.lock().await;
        let Some(running) = run.take() else {
            return Err(FakeError::BrokerStopped(self.name.clone()));
        };
        self.namesrv.unregister_broker(&self.name);
        {
            let mut st = self.state();
            st.running = false;
            st.holds.wake_all();
        }
        running.cancel.cancel();
        running.server.stop().await;
        running.tracker.close();
        running.tracker.wait().await;
        let mut st = self.state();
        st.clients.clear();
        st.locks.clear();
        if lose_unflushed {
            let lost = st.store.truncate_unflushed();
            st.offsets = st.flushed_offsets.clone();
            let BrokerState {
                schedule, store, ..
            } = &mut *st;
            schedule.retain(|offset| store.by_commit_offset(offset).is_some());
            debug!(broker = %self.name, lost, "fake broker crashed, unflushed messages lost");
        }
        Ok(())
    }

    /// Cancels everything without waiting (the cluster is dropped).
    pub(crate) fn cancel(&self) {
        if let Ok(run) = self.run.try_lock() {
            if let Some(running) = run.as_ref() {
                running.cancel.cancel();
                running.server.cancel();
                running.tracker.close();
            }
        }
    }

    pub(crate) async fn is_running(&self) -> bool {
        self.run.lock().await.is_some()
    }

    /// Registers every topic with the name server.
    fn register_all(&self, st: &BrokerState) {
        let topics = st
            .topics
            .iter()
            .filter(|(name, _)| name.as_str() != SCHEDULE_TOPIC)
            .map(|(name, c)| (name.clone(), c.queue_data(&self.name)))
            .collect();
        self.namesrv.register_broker(
            &self.name,
            &self.cfg.cluster_name,
            &self.addr().to_string(),
            topics,
        );
    }

    /// Creates or replaces a topic and routes it.
    pub(crate) fn put_topic(&self, st: &mut BrokerState, topic: &str, config: TopicConfig) {
        st.topics.put(topic, config.clone());
        if st.running {
            self.namesrv
                .register_topic(&self.name, topic, config.queue_data(&self.name));
        }
    }

    /// Java `createTopicInSendMessageBackMethod`.
    pub(crate) fn ensure_topic(
        &self,
        st: &mut BrokerState,
        topic: &str,
        queues: i32,
    ) -> TopicConfig {
        let (config, created) = st
            .topics
            .create_if_absent(topic, queues, perm::READ | perm::WRITE);
        if created && st.running {
            self.namesrv
                .register_topic(&self.name, topic, config.queue_data(&self.name));
        }
        config
    }

    /// Java `findSubscriptionGroupConfig`: the group's configuration,
    /// created when groups may be auto-created.
    pub(crate) fn group(&self, st: &mut BrokerState, group: &str) -> Option<GroupConfig> {
        if let Some(g) = st.groups.get(group) {
            return Some(g.clone());
        }
        if !self.cfg.auto_create_group {
            return None;
        }
        let config = GroupConfig {
            retry_max_times: self.cfg.retry_max_times,
            retry_queue_nums: self.cfg.retry_queue_nums,
            consume_enable: true,
            notify_enable: true,
        };
        st.groups.insert(group.to_owned(), config.clone());
        Some(config)
    }

    // ------------------------------------------------------------ storing

    /// Stores a message, parking it in the schedule topic when it has a
    /// delay level, and wakes the pulls waiting for it.
    pub(crate) fn put_message(
        &self,
        st: &mut BrokerState,
        m: NewMessage,
    ) -> std::result::Result<Arc<StoredMsg>, PutError> {
        self.store_message(st, m, true)
    }

    /// [`put_message`](Self::put_message); `schedule` false for a delayed
    /// message being delivered (its DELAY stays, it is not parked again).
    fn store_message(
        &self,
        st: &mut BrokerState,
        mut m: NewMessage,
        schedule: bool,
    ) -> std::result::Result<Arc<StoredMsg>, PutError> {
        let now = self.now_ms();
        let mut due = None;
        let tx = sys_flag::transaction_type(m.sys_flag);
        if schedule
            && (tx == sys_flag::TRANSACTION_NOT_TYPE || tx == sys_flag::TRANSACTION_COMMIT_TYPE)
        {
            let level = m
                .properties
                .get(property::DELAY)
                .and_then(|d| d.trim().parse::<i32>().ok())
                .unwrap_or(0);
            if level > 0 {
                let level = level.min(self.cfg.max_delay_level());
                let delay = self.cfg.delay_of(level).unwrap_or(Duration::from_secs(1));
                let due_ms =
                    now.saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX));
                m.properties
                    .insert(property::DELAY.to_owned(), level.to_string());
                m.properties.insert(
                    property::REAL_TOPIC.to_owned(),
                    std::mem::take(&mut m.topic),
                );
                m.properties
                    .insert(property::REAL_QID.to_owned(), m.queue_id.to_string());
                m.topic = SCHEDULE_TOPIC.to_owned();
                m.queue_id = level - 1;
                m.tags_code = due_ms;
                due = Some(due_ms);
            }
        }
        let stored = st
            .store
            .put(m, now, self.cfg.flavor, self.cfg.max_message_size)?;
        if self.cfg.flush == FlushPolicy::Always {
            st.store.flush();
        }
        match due {
            Some(due_ms) => {
                st.schedule.add(due_ms, stored.commit_log_offset);
                self.schedule_changed.notify_one();
            }
            None => {
                let max = st.store.max_offset(&stored.topic, stored.queue_id);
                let (code, props) = (stored.tags_code, &stored.properties);
                st.holds.arrived(&stored.topic, stored.queue_id, max, |f| {
                    f.matches(code, props)
                });
            }
        }
        Ok(stored)
    }

    /// Delivers the delayed messages that are due (every one with `all`)
    /// into their real topics; returns how many.
    fn deliver_due(&self, all: bool) -> usize {
        let mut st = self.state();
        if !st.running {
            return 0;
        }
        let due = if all {
            st.schedule.take_all()
        } else {
            st.schedule.take_due(self.now_ms())
        };
        let count = due.len();
        for offset in due {
            let Some(parked) = st.store.by_commit_offset(offset).cloned() else {
                continue;
            };
            // Java `messageTimeUp` clears DELAY and sets WAIT=false after it
            // encoded the properties: the delivered message keeps both as
            // they were.
            let properties = parked.properties.clone();
            let topic = properties
                .get(property::REAL_TOPIC)
                .cloned()
                .unwrap_or_default();
            let queue_id = properties
                .get(property::REAL_QID)
                .and_then(|q| q.parse().ok())
                .unwrap_or(0);
            let tags_code = properties
                .get(property::TAGS)
                .map_or(0, |t| i64::from(rmq_protocol::body::java_string_hash(t)));
            let msg = NewMessage {
                topic,
                queue_id,
                sys_flag: parked.sys_flag,
                flag: parked.flag,
                born_timestamp: parked.born_timestamp,
                born_host: parked.born_host,
                store_host: parked.store_host,
                reconsume_times: parked.reconsume_times,
                prepared_transaction_offset: parked.prepared_transaction_offset,
                body: parked.body.clone(),
                properties,
                tags_code,
                properties_text: None,
            };
            if let Err(e) = self.store_message(&mut st, msg, false) {
                warn!(broker = %self.name, error = ?e, "fake: a delayed message could not be delivered");
            }
        }
        count
    }

    /// Marks what is stored and committed as flushed.
    pub(crate) fn flush(&self) {
        let mut st = self.state();
        st.store.flush();
        st.flushed_offsets = st.offsets.clone();
    }

    /// Tells every connection in `conns` that `group` changed.
    pub(crate) fn notify_group(conns: &[Arc<ConnShared>], group: &str) {
        for c in conns {
            if !c.notify(
                RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
                &[("consumerGroup", group)],
            ) {
                debug!(conn = %c.id, group, "fake: NOTIFY_CONSUMER_IDS_CHANGED not queued");
            }
        }
    }

    /// Commits `offset` for (group, topic, queue) (Java
    /// `ConsumerOffsetManager.commitOffset`).
    pub(crate) fn commit_offset(
        &self,
        st: &mut BrokerState,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) {
        let key = (group.to_owned(), topic.to_owned(), queue_id);
        if self.cfg.flush == FlushPolicy::Always {
            st.flushed_offsets.insert(key.clone(), offset);
        }
        st.offsets.insert(key, offset);
    }
}

/// The broker's [`net::Service`].
#[derive(Debug)]
pub(crate) struct BrokerService(pub(crate) Arc<BrokerShared>);

impl net::Service for BrokerService {
    fn handle(&self, incoming: net::Incoming) -> Option<net::Handled> {
        handlers::dispatch(&self.0, incoming)
    }

    fn connection_closed(&self, conn: &Arc<ConnShared>) {
        let changed = {
            let mut st = self.0.state();
            st.holds.remove_conn(conn.id);
            st.clients.connection_closed(conn.id)
        };
        for (group, model, remaining) in changed {
            if model != MessageModel::Broadcasting {
                BrokerShared::notify_group(&remaining, &group);
            }
        }
    }
}

async fn schedule_loop(broker: Arc<BrokerShared>, cancel: CancellationToken) {
    loop {
        let next = broker.state().schedule.next_due();
        let clock = broker.clock.clone();
        tokio::select! {
            () = cancel.cancelled() => return,
            () = broker.schedule_changed.notified() => {}
            () = async {
                match next {
                    Some(due) => clock.sleep_until_ms(due).await,
                    None => std::future::pending::<()>().await,
                }
            } => {}
        }
        broker.deliver_due(false);
    }
}

async fn housekeeping_loop(broker: Arc<BrokerShared>, cancel: CancellationToken) {
    let flush_every = match broker.cfg.flush {
        FlushPolicy::Interval(d) => Some(d.max(Duration::from_millis(1))),
        FlushPolicy::Always | FlushPolicy::Manual => None,
    };
    let tick = flush_every.map_or(Duration::from_secs(1), |d| d.min(Duration::from_secs(1)));
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let expiry_ms = i64::try_from(broker.cfg.channel_expiry.as_millis()).unwrap_or(i64::MAX);
    let mut last_flush = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        if let Some(every) = flush_every {
            if last_flush.elapsed() >= every {
                broker.flush();
                last_flush = tokio::time::Instant::now();
            }
        }
        let expired = broker.state().clients.expired(broker.now_ms(), expiry_ms);
        for conn in expired {
            debug!(conn = %conn.id, "fake: client expired (no heartbeat), closing its connection");
            conn.close();
        }
    }
}

// ---------------------------------------------------------------- handle

/// A handle on one broker of a [`FakeCluster`](crate::FakeCluster): its
/// address, what it stores, and its lifecycle (kill, crash, restart).
///
/// Cheap to clone; every clone controls the same broker.
#[derive(Debug, Clone)]
pub struct FakeBroker {
    pub(crate) inner: Arc<BrokerShared>,
}

fn to_message_ext(m: &StoredMsg, broker: &str) -> Option<MessageExt> {
    let mut ext = decode_message(&m.record).ok()?;
    ext.broker_name = broker.to_owned();
    Some(ext)
}

impl FakeBroker {
    /// The broker's name (`broker-a`, ...).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its address, `host:port` (the same after a restart).
    pub fn addr(&self) -> String {
        self.inner.addr().to_string()
    }

    /// Whether it is running (not killed or crashed).
    pub async fn is_running(&self) -> bool {
        self.inner.is_running().await
    }

    /// Kills the broker as `kill -9` would: the listener and every
    /// connection close, held pulls are dropped, the name server stops
    /// routing to it at once. What it stored is kept (the OS had it), but
    /// what lives only in the broker's memory is gone: consumer and producer
    /// registrations and queue locks.
    ///
    /// # Errors
    ///
    /// [`FakeError::BrokerStopped`] if it is not running.
    pub async fn kill(&self) -> Result<()> {
        self.inner.stop(false).await
    }

    /// Like [`kill`](Self::kill), and the machine goes down too: messages
    /// stored and offsets committed since the last flush are lost (see
    /// [`FlushPolicy`](crate::FlushPolicy) and [`flush`](Self::flush)).
    ///
    /// # Errors
    ///
    /// [`FakeError::BrokerStopped`] if it is not running.
    pub async fn crash(&self) -> Result<()> {
        self.inner.stop(true).await
    }

    /// Starts a killed or crashed broker again on the same address; it
    /// registers with the name server before this returns.
    ///
    /// # Errors
    ///
    /// [`FakeError::BrokerRunning`] if it is running, [`FakeError::Bind`] if
    /// its port was taken meanwhile.
    pub async fn restart(&self) -> Result<()> {
        self.inner.start().await
    }

    /// Marks everything stored and committed so far as flushed (survives a
    /// [`crash`](Self::crash)).
    pub fn flush(&self) {
        self.inner.flush();
    }

    /// Creates (or updates) `topic` with `queues` read and write queues on
    /// this broker; routable when this returns.
    ///
    /// # Errors
    ///
    /// [`FakeError::InvalidTopic`] for a name the broker refuses.
    pub fn create_topic(&self, topic: &str, queues: i32) -> Result<()> {
        topics::validate_topic(topic).map_err(|reason| FakeError::InvalidTopic {
            topic: topic.to_owned(),
            reason,
        })?;
        let mut st = self.inner.state();
        self.inner.put_topic(
            &mut st,
            topic,
            TopicConfig::new(queues, perm::READ | perm::WRITE),
        );
        Ok(())
    }

    /// The topics it has (including `TBW102` and retry / dead-letter topics).
    pub fn topics(&self) -> Vec<String> {
        self.inner
            .state()
            .topics
            .iter()
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// The read-queue count of `topic`, if it exists here.
    pub fn queue_count(&self, topic: &str) -> Option<i32> {
        self.inner
            .state()
            .topics
            .get(topic)
            .map(|t| t.read_queue_nums)
    }

    /// Every message stored in `topic` here, queue by queue in offset order,
    /// decoded as a consumer would see them (bodies decompressed). A
    /// dead-letter queue is `%DLQ%<group>`, a retry topic `%RETRY%<group>`;
    /// delayed messages not yet due are in `SCHEDULE_TOPIC_XXXX`.
    pub fn messages(&self, topic: &str) -> Vec<MessageExt> {
        let stored = self.inner.state().store.topic_messages(topic);
        stored
            .iter()
            .filter_map(|m| to_message_ext(m, &self.inner.name))
            .collect()
    }

    /// The max offset (next offset to be written) of a queue.
    pub fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.state().store.max_offset(topic, queue_id)
    }

    /// The offset `group` committed for a queue of this broker.
    pub fn committed_offset(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.inner
            .state()
            .offsets
            .get(&(group.to_owned(), topic.to_owned(), queue_id))
            .copied()
    }

    /// The client ids registered in `group` here.
    pub fn consumer_ids(&self, group: &str) -> Vec<String> {
        let mut ids = self
            .inner
            .state()
            .clients
            .consumers
            .get(group)
            .map(|g| g.client_ids())
            .unwrap_or_default();
        ids.sort();
        ids
    }

    /// Which client holds the (unexpired) lock of a queue for `group`.
    pub fn lock_holder(&self, group: &str, queue: &MessageQueue) -> Option<String> {
        let now = self.inner.now_ms();
        self.inner
            .state()
            .locks
            .holder(group, queue, now, self.inner.lease_ms())
    }

    /// How many delayed messages (delay levels, retries) wait for their time.
    pub fn scheduled(&self) -> usize {
        self.inner.state().schedule.len()
    }

    /// Delivers every delayed message now, due or not, without moving the
    /// clock (so leases and client expiry are not affected); returns how
    /// many. [`FakeClock::advance`](crate::FakeClock::advance) is the
    /// time-faithful alternative.
    pub fn deliver_delayed_now(&self) -> usize {
        self.inner.deliver_due(true)
    }

    /// How many pulls are held (long polling).
    pub fn held_pulls(&self) -> usize {
        self.inner.state().holds.len()
    }

    /// The queues of `topic` that hold messages here.
    pub fn queues_with_messages(&self, topic: &str) -> BTreeSet<i32> {
        self.inner
            .state()
            .store
            .queue_ids(topic)
            .into_iter()
            .collect()
    }

    /// Stores a message directly, as if a producer had sent it to `queue_id`
    /// (no fault rules apply); returns its queue offset.
    ///
    /// # Errors
    ///
    /// [`FakeError::BrokerStopped`] when the broker is not running,
    /// [`FakeError::Config`] when the message cannot be stored (too large,
    /// bad properties).
    pub fn inject(
        &self,
        topic: &str,
        queue_id: i32,
        body: impl Into<Bytes>,
        properties: HashMap<String, String>,
    ) -> Result<i64> {
        let mut st = self.inner.state();
        if !st.running {
            return Err(FakeError::BrokerStopped(self.inner.name.clone()));
        }
        let addr = self.inner.addr();
        let tags_code = properties
            .get(property::TAGS)
            .map_or(0, |t| i64::from(rmq_protocol::body::java_string_hash(t)));
        let msg = NewMessage {
            topic: topic.to_owned(),
            queue_id,
            sys_flag: 0,
            flag: 0,
            born_timestamp: self.inner.now_ms(),
            born_host: addr,
            store_host: addr,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: body.into(),
            properties,
            tags_code,
            properties_text: None,
        };
        let stored = self
            .inner
            .put_message(&mut st, msg)
            .map_err(|e| FakeError::Config(format!("the message cannot be stored: {e:?}")))?;
        Ok(stored.queue_offset)
    }
}
