//! The broker's state ([`BrokerState`]) behind its one lock, and
//! [`BrokerShared`]: what its handle, service and tasks share, with the
//! topic, group, offset and flush operations on that state.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use rmq_protocol::RequestCode;
use rmq_protocol::body::perm;
use rmq_protocol::message::{UniqIdGenerator, ms_since_month_start};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::clients::Clients;
use super::hold::Holds;
use super::lifecycle::Running;
use super::locks::Locks;
use super::schedule::Schedule;
use super::store::Store;
use super::topics::{AUTO_CREATE_TOPIC, SCHEDULE_TOPIC, TopicConfig, Topics};
use crate::clock::FakeClock;
use crate::config::{ClusterConfig, FlushPolicy};
use crate::namesrv::NameServer;
use crate::net::{ConnShared, NetShared, lock};

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
    pub(super) flushed_offsets: HashMap<(String, String, i32), i64>,
    pub(crate) locks: Locks,
    pub(crate) holds: Holds,
    pub(crate) schedule: Schedule,
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
    pub(super) state: Mutex<BrokerState>,
    /// Fixed at the first start: a restart listens on the same port.
    pub(super) addr: Mutex<Option<SocketAddr>>,
    pub(super) port: u16,
    pub(super) run: tokio::sync::Mutex<Option<Running>>,
    pub(super) cluster_cancel: CancellationToken,
    pub(super) schedule_changed: Notify,
    pub(super) uniq: UniqIdGenerator,
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

    /// Registers every topic with the name server.
    pub(super) fn register_all(&self, st: &BrokerState) {
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
