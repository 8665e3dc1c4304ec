//! [`FakeCluster`] and its builder.

use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::RequestCode;
use tokio_util::sync::CancellationToken;

use crate::broker::{BrokerShared, ClusterParts, FakeBroker};
use crate::clock::FakeClock;
use crate::config::{
    BrokerFlavor, ClusterConfig, FlushPolicy, default_broker_names, parse_delay_levels,
};
use crate::error::{FakeError, Result};
use crate::fault::{Action, Fault, FaultId};
use crate::namesrv::{NameServer, NameServerService};
use crate::net::{self, ConnectionInfo, NetShared, Server, ServerKind};

/// Builds a [`FakeCluster`]; every setter documents its default.
///
/// ```
/// # async fn demo() -> Result<(), rmq_fake::FakeError> {
/// use rmq_fake::{BrokerFlavor, FakeCluster};
///
/// let cluster = FakeCluster::builder()
///     .brokers(2)                 // broker-a, broker-b
///     .queues(8)                  // queues of created topics
///     .topic("orders")            // exists before the first client connects
///     .delay_levels("1s 1s 1s")   // every retry comes back after 1 s
///     .flavor(BrokerFlavor::V4_9) // answer as a 4.9.x broker where the lines differ
///     .start()
///     .await?;
/// println!("NAMESRV_ADDR={}", cluster.namesrv_addr());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct FakeClusterBuilder {
    cfg: ClusterConfig,
    error: Option<String>,
}

impl FakeClusterBuilder {
    /// `n` brokers named `broker-a`, `broker-b`, ... Defaults to 1.
    pub fn brokers(mut self, n: usize) -> Self {
        self.cfg.broker_names = default_broker_names(n);
        self
    }

    /// Brokers with these names (instead of [`brokers`](Self::brokers)).
    pub fn broker_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.cfg.broker_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Queue count of topics created without one ([`topic`](Self::topic),
    /// [`FakeCluster::create_topic`] with `None`) and of the template topic
    /// `TBW102`: a topic auto-created by a producer's first send gets
    /// min(this, the producer's `defaultTopicQueueNums`, 4 in Java) queues.
    /// Defaults to 8 (Java `defaultTopicQueueNums`).
    pub fn queues(mut self, n: i32) -> Self {
        self.cfg.default_queues = n;
        self
    }

    /// The cluster name brokers register with. Defaults to `DefaultCluster`.
    pub fn cluster_name(mut self, name: impl Into<String>) -> Self {
        self.cfg.cluster_name = name.into();
        self
    }

    /// The name server's port. Defaults to 0 (any free port); tests should
    /// keep it, a fixed port is for the binary.
    pub fn namesrv_port(mut self, port: u16) -> Self {
        self.cfg.namesrv_port = port;
        self
    }

    /// The brokers' ports, one per broker. Defaults to any free ports.
    pub fn broker_ports<I: IntoIterator<Item = u16>>(mut self, ports: I) -> Self {
        self.cfg.broker_ports = ports.into_iter().collect();
        self
    }

    /// The broker line to imitate where 4.9.x and 5.x differ. Defaults to
    /// [`BrokerFlavor::V5`].
    pub fn flavor(mut self, flavor: BrokerFlavor) -> Self {
        self.cfg.flavor = flavor;
        self
    }

    /// Delay levels as the broker's `messageDelayLevel` writes them
    /// (`"1s 5s 10s"`). Defaults to Java's 18 levels,
    /// `1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h`.
    /// A bad list makes [`start`](Self::start) fail.
    pub fn delay_levels(mut self, levels: &str) -> Self {
        match parse_delay_levels(levels) {
            Ok(l) => self.cfg.delay_levels = l,
            Err(e) => self.error = Some(e.to_string()),
        }
        self
    }

    /// Whether a producer's first send creates its topic (from `TBW102`).
    /// Defaults to `true` (Java `autoCreateTopicEnable`).
    pub fn auto_create_topics(mut self, on: bool) -> Self {
        self.cfg.auto_create_topic = on;
        self
    }

    /// Whether consumer groups are created on first use. Defaults to `true`
    /// (Java `autoCreateSubscriptionGroup`).
    pub fn auto_create_groups(mut self, on: bool) -> Self {
        self.cfg.auto_create_group = on;
        self
    }

    /// Whether SQL92 subscriptions are served. Defaults to `true` (Java
    /// `enablePropertyFilter`, off in a stock broker, on in this project's
    /// test brokers).
    pub fn property_filter(mut self, on: bool) -> Self {
        self.cfg.property_filter = on;
        self
    }

    /// Whether pulls are held for their `suspendTimeoutMillis` (long
    /// polling) or at most 1 s. Defaults to `true` (Java
    /// `longPollingEnable`).
    pub fn long_polling(mut self, on: bool) -> Self {
        self.cfg.long_polling = on;
        self
    }

    /// How long an orderly queue lock lasts without renewal, by the
    /// cluster's clock. Defaults to 60 s (Java
    /// `rocketmq.broker.rebalance.lockMaxLiveTime`).
    pub fn lock_lease(mut self, lease: Duration) -> Self {
        self.cfg.lock_lease = lease;
        self
    }

    /// After how long without a heartbeat a client's connection is closed,
    /// by the cluster's clock. Defaults to 120 s (Java
    /// `channelExpiredTimeout`).
    pub fn client_expiry(mut self, after: Duration) -> Self {
        self.cfg.channel_expiry = after;
        self
    }

    /// Largest stored message. Defaults to 4 MiB (Java `maxMessageSize`).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.cfg.max_message_size = bytes;
        self
    }

    /// When stored data counts as flushed (what a crash loses). Defaults to
    /// [`FlushPolicy::Always`].
    pub fn flush(mut self, policy: FlushPolicy) -> Self {
        self.cfg.flush = policy;
        self
    }

    /// The groups' maximum reconsume count when the consumer sends none.
    /// Defaults to 16 (Java `retryMaxTimes`).
    pub fn retry_max_times(mut self, n: i32) -> Self {
        self.cfg.retry_max_times = n;
        self
    }

    /// Queues of each group's `%RETRY%<group>` topic. Defaults to 1 (Java
    /// `retryQueueNums`).
    pub fn retry_queues(mut self, n: i32) -> Self {
        self.cfg.retry_queue_nums = n;
        self
    }

    /// A topic that exists on every broker from the start, with
    /// [`queues`](Self::queues) queues.
    pub fn topic(mut self, name: impl Into<String>) -> Self {
        self.cfg.seed_topics.push((name.into(), None));
        self
    }

    /// A topic that exists on every broker from the start, with `queues`
    /// queues.
    pub fn topic_with_queues(mut self, name: impl Into<String>, queues: i32) -> Self {
        self.cfg.seed_topics.push((name.into(), Some(queues)));
        self
    }

    /// Starts the name server and the brokers on loopback; each broker is
    /// registered when this returns.
    ///
    /// # Errors
    ///
    /// [`FakeError::Config`] for a bad setting, [`FakeError::Bind`] when a
    /// port cannot be bound, [`FakeError::InvalidTopic`] for a bad seed
    /// topic.
    pub async fn start(self) -> Result<FakeCluster> {
        if let Some(e) = self.error {
            return Err(FakeError::Config(e));
        }
        self.cfg.validate()?;
        for (topic, _) in &self.cfg.seed_topics {
            crate::broker::topics::validate_topic(topic).map_err(|reason| {
                FakeError::InvalidTopic {
                    topic: topic.clone(),
                    reason,
                }
            })?;
        }
        let cfg = Arc::new(self.cfg);
        let cancel = CancellationToken::new();
        let clock = FakeClock::new();
        let net = Arc::new(NetShared::default());
        let namesrv = NameServer::new(cfg.flavor);
        let (listener, addr) = net::bind(cfg.host, cfg.namesrv_port)?;
        let namesrv_server = Server::start(
            listener,
            ServerKind::NameServer,
            cfg.flavor,
            Arc::new(NameServerService(Arc::clone(&namesrv))),
            Arc::clone(&net),
            &cancel,
        );
        let parts = ClusterParts {
            cfg: Arc::clone(&cfg),
            clock: clock.clone(),
            namesrv: Arc::clone(&namesrv),
            net: Arc::clone(&net),
            cancel: cancel.clone(),
        };
        let mut brokers = Vec::with_capacity(cfg.broker_names.len());
        for (i, name) in cfg.broker_names.iter().enumerate() {
            let port = cfg.broker_ports.get(i).copied().unwrap_or(0);
            let seed = i32::try_from(i).unwrap_or(0).wrapping_mul(7919);
            let shared = BrokerShared::new(name.clone(), port, seed, &parts);
            brokers.push(FakeBroker { inner: shared });
        }
        // `validate` refused an empty broker list.
        let Some(first) = brokers.first().cloned() else {
            return Err(FakeError::Config(
                "a cluster needs at least one broker".to_owned(),
            ));
        };
        let cluster = FakeCluster {
            first,
            cfg,
            clock,
            net,
            namesrv_server,
            namesrv_addr: addr.to_string(),
            brokers,
            cancel,
        };
        for b in &cluster.brokers {
            b.inner.start().await?;
        }
        Ok(cluster)
    }
}

/// An in-process RocketMQ: a name server and brokers on loopback sockets
/// that speak the remoting protocol as the real ones do, for the subset a
/// client uses; see the [crate documentation](crate).
///
/// Dropping it stops every listener, connection and task (without waiting;
/// [`shutdown`](Self::shutdown) waits).
#[derive(Debug)]
pub struct FakeCluster {
    cfg: Arc<ClusterConfig>,
    clock: FakeClock,
    net: Arc<NetShared>,
    namesrv_server: Server,
    namesrv_addr: String,
    brokers: Vec<FakeBroker>,
    first: FakeBroker,
    cancel: CancellationToken,
}

impl FakeCluster {
    /// A builder with every default.
    pub fn builder() -> FakeClusterBuilder {
        FakeClusterBuilder::default()
    }

    /// A cluster of one broker with every default.
    ///
    /// # Errors
    ///
    /// As [`FakeClusterBuilder::start`].
    pub async fn start() -> Result<FakeCluster> {
        Self::builder().start().await
    }

    /// The name server's address, `127.0.0.1:port`: what clients are
    /// configured with (`NAMESRV_ADDR`).
    pub fn namesrv_addr(&self) -> &str {
        &self.namesrv_addr
    }

    /// The cluster name.
    pub fn cluster_name(&self) -> &str {
        &self.cfg.cluster_name
    }

    /// The broker line imitated.
    pub fn flavor(&self) -> BrokerFlavor {
        self.cfg.flavor
    }

    /// The brokers, in builder order.
    pub fn brokers(&self) -> &[FakeBroker] {
        &self.brokers
    }

    /// The broker named `name`.
    pub fn broker(&self, name: &str) -> Option<&FakeBroker> {
        self.brokers.iter().find(|b| b.name() == name)
    }

    /// The first broker (`broker-a` by default).
    pub fn first_broker(&self) -> &FakeBroker {
        &self.first
    }

    /// The cluster's clock (see [`FakeClock`]).
    pub fn clock(&self) -> &FakeClock {
        &self.clock
    }

    /// Delivers every delayed message of every broker now (see
    /// [`FakeBroker::deliver_delayed_now`]); returns how many.
    pub fn deliver_delayed_now(&self) -> usize {
        self.brokers
            .iter()
            .map(FakeBroker::deliver_delayed_now)
            .sum()
    }

    /// Creates (or updates) `topic` on every broker, with `queues` queues
    /// (`None`: the builder's [`queues`](FakeClusterBuilder::queues));
    /// routable when this returns.
    ///
    /// # Errors
    ///
    /// [`FakeError::InvalidTopic`] for a name the broker refuses.
    pub fn create_topic(&self, topic: &str, queues: impl Into<Option<i32>>) -> Result<()> {
        let queues = queues.into().unwrap_or(self.cfg.default_queues);
        for b in &self.brokers {
            b.create_topic(topic, queues)?;
        }
        Ok(())
    }

    /// Adds a fault rule (see [`Fault`]); it applies to requests from now on.
    pub fn add_fault(&self, fault: Fault) -> FaultId {
        self.net.faults.add(fault)
    }

    /// Removes a fault rule; `false` if it was gone already (e.g. a
    /// [`Fault::times`] rule that ran out).
    pub fn clear_fault(&self, id: FaultId) -> bool {
        self.net.faults.remove(id)
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        self.net.faults.clear();
    }

    /// Cuts the client with `client_id` off from `broker` (a network
    /// partition): its requests there are swallowed, its connections stay
    /// open. Undo with [`clear_fault`](Self::clear_fault).
    ///
    /// # Errors
    ///
    /// [`FakeError::NoSuchBroker`] for an unknown broker name.
    pub fn partition(&self, client_id: &str, broker: &str) -> Result<FaultId> {
        if self.broker(broker).is_none() {
            return Err(FakeError::NoSuchBroker(broker.to_owned()));
        }
        Ok(self.add_fault(Fault::any(Action::Drop).broker(broker).client(client_id)))
    }

    /// Closes every connection of the client with `client_id` (to any
    /// server); returns how many.
    pub fn disconnect_client(&self, client_id: &str) -> usize {
        self.net.close_client(client_id, None)
    }

    /// The open connections.
    pub fn connections(&self) -> Vec<ConnectionInfo> {
        self.net.connections()
    }

    /// Requests of `code` received so far, by every server.
    pub fn request_count(&self, code: RequestCode) -> u64 {
        self.net.counters.count(code, None)
    }

    /// Requests of `code` received so far by the broker named `broker`
    /// (`namesrv` for the name server).
    pub fn request_count_on(&self, code: RequestCode, server: &str) -> u64 {
        let kind = if server == "namesrv" {
            ServerKind::NameServer
        } else {
            ServerKind::Broker(server.to_owned())
        };
        self.net.counters.count(code, Some(&kind))
    }

    /// Forgets every request count.
    pub fn reset_request_counts(&self) {
        self.net.counters.reset();
    }

    /// Waits until at least `n` requests of `code` arrived (counting from the
    /// start or the last [`reset_request_counts`](Self::reset_request_counts)).
    ///
    /// # Errors
    ///
    /// [`FakeError::Timeout`] after `timeout`.
    pub async fn wait_for_requests(
        &self,
        code: RequestCode,
        n: u64,
        timeout: Duration,
    ) -> Result<()> {
        let mut changes = self.net.counters.subscribe();
        let wait = async {
            loop {
                changes.mark_unchanged();
                if self.request_count(code) >= n {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| FakeError::Timeout {
                what: format!(
                    "{n} {code:?} request(s) (seen {})",
                    self.request_count(code)
                ),
                after: timeout,
            })
    }

    /// Stops every broker and the name server and waits until every task
    /// and connection is gone.
    pub async fn shutdown(self) {
        for b in &self.brokers {
            // A broker already killed is fine.
            let _ = b.inner.stop(false).await;
        }
        self.namesrv_server.stop().await;
        self.cancel.cancel();
    }
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.namesrv_server.cancel();
        for b in &self.brokers {
            b.inner.cancel();
        }
    }
}
