//! Route table maintenance: on-demand and periodic GET_ROUTEINFO_BY_TOPIC
//! with name-server failover, and the broker address lookups.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::body::TopicRouteData;
use rmq_protocol::header::GetRouteInfoRequestHeader;
use rmq_protocol::{MessageQueue, RemotingCommand, RequestCode, ResponseCode};
use tracing::{debug, info};

use super::ClientInstance;
use crate::error::{Error, Result};
use crate::route::TopicRouteInfo;

/// Delay of the first periodic refresh (Java: 10 ms).
const FIRST_REFRESH_DELAY: Duration = Duration::from_millis(10);
/// The shortest time between two route refreshes woken by failed broker
/// calls.
pub(crate) const WAKEUP_GAP: Duration = Duration::from_secs(1);

impl ClientInstance {
    /// The topic's route: the cached one, else fetched from the name
    /// servers now (and cached, so the periodic refresh keeps it fresh).
    ///
    /// # Errors
    ///
    /// [`Error::RouteNotFound`] when the name server knows no route for
    /// the topic, [`Error::NameServerUnavailable`] when no name server
    /// answered, [`Error::Protocol`] for a malformed answer,
    /// [`Error::Shutdown`] after shutdown.
    pub async fn route(&self, topic: &str) -> Result<Arc<TopicRouteInfo>> {
        if let Some(route) = self.cached_route(topic) {
            return Ok(route);
        }
        self.update_route(topic, true).await
    }

    /// Asks the name servers for the route of `topic` without caching it:
    /// whether one answers at all (a start's fail-fast check). A topic the
    /// name server does not know is an answer (`Ok`).
    ///
    /// # Errors
    ///
    /// [`Error::NameServerUnavailable`] when no name server answered,
    /// [`Error::Shutdown`] after shutdown.
    pub async fn probe_name_servers(&self, topic: &str) -> Result<()> {
        if self.inner.is_closing() {
            return Err(Error::Shutdown);
        }
        match self.fetch_route_data(topic).await {
            Ok(_) | Err(Error::RouteNotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The cached route of `topic`, without fetching. Never blocks.
    pub fn cached_route(&self, topic: &str) -> Option<Arc<TopicRouteInfo>> {
        self.inner.routes.load().topics.get(topic).cloned()
    }

    /// The topics whose routes are cached (and refreshed periodically).
    pub fn cached_topics(&self) -> Vec<String> {
        let mut topics: Vec<String> = self.inner.routes.load().topics.keys().cloned().collect();
        topics.sort();
        topics
    }

    /// Fetches the topic's route now and swaps it in if it changed;
    /// returns the current route.
    ///
    /// A topic the name server no longer knows keeps its cached route (as
    /// in Java) and the error is returned.
    ///
    /// # Errors
    ///
    /// As [`route`](ClientInstance::route).
    pub async fn refresh_route(&self, topic: &str) -> Result<Arc<TopicRouteInfo>> {
        self.update_route(topic, false).await
    }

    /// The master address of `broker_name` (Java
    /// `findBrokerAddressInPublish`), from the broker address table.
    pub fn find_broker_addr_in_publish(&self, broker_name: &str) -> Option<String> {
        self.inner
            .routes
            .load()
            .find_broker_addr_in_publish(broker_name)
    }

    /// An address of `broker_name` to pull from and whether it is a slave
    /// (Java `findBrokerAddressInSubscribe`): the address of `broker_id`;
    /// else, for a slave id, of `broker_id + 1`; else, unless
    /// `only_this_broker`, any address of the broker (the lowest id).
    pub fn find_broker_addr_in_subscribe(
        &self,
        broker_name: &str,
        broker_id: i64,
        only_this_broker: bool,
    ) -> Option<(String, bool)> {
        self.inner.routes.load().find_broker_addr_in_subscribe(
            broker_name,
            broker_id,
            only_this_broker,
        )
    }

    /// The master address of `mq`'s broker (Java `findBrokerAddressInPublish`);
    /// when it is unknown, refreshes the route of `mq`'s topic once and looks
    /// again (what Java's producer and `MQAdminImpl` do before giving up).
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`] when the address is still unknown (a failed
    /// refresh is logged at debug level: it only means no address).
    pub async fn master_addr(&self, mq: &MessageQueue) -> Result<String> {
        let name = mq.broker_name.as_str();
        if let Some(addr) = self.find_broker_addr_in_publish(name) {
            return Ok(addr);
        }
        // Boxed: the refresh (a name server call) is rare, and inline it
        // would make every lookup's future kilobytes large.
        Box::pin(self.refresh_for_lookup(mq)).await;
        self.find_broker_addr_in_publish(name)
            .ok_or_else(|| Error::BrokerNotFound {
                broker_name: mq.broker_name.clone(),
            })
    }

    /// An address of `mq`'s broker to pull from or to ask for offsets, and
    /// whether it is a slave (Java `findBrokerAddressInSubscribe`): first
    /// [`find_broker_addr_in_subscribe`](Self::find_broker_addr_in_subscribe)
    /// with `broker_id` and `only_this_broker`; when that finds nothing,
    /// refreshes the route of `mq`'s topic once and takes any node of the
    /// broker, preferring `broker_id`.
    ///
    /// # Errors
    ///
    /// [`Error::BrokerNotFound`] when no node of the broker is known.
    pub async fn subscribe_addr(
        &self,
        mq: &MessageQueue,
        broker_id: i64,
        only_this_broker: bool,
    ) -> Result<(String, bool)> {
        let name = mq.broker_name.as_str();
        if let Some(found) = self.find_broker_addr_in_subscribe(name, broker_id, only_this_broker) {
            return Ok(found);
        }
        // Boxed: the refresh (a name server call) is rare, and inline it
        // would make every lookup's future kilobytes large.
        Box::pin(self.refresh_for_lookup(mq)).await;
        self.find_broker_addr_in_subscribe(name, broker_id, false)
            .ok_or_else(|| Error::BrokerNotFound {
                broker_name: mq.broker_name.clone(),
            })
    }

    /// The route refresh of an address lookup: its failure only means the
    /// address stays unknown.
    async fn refresh_for_lookup(&self, mq: &MessageQueue) {
        if let Err(e) = self.refresh_route(&mq.topic).await {
            debug!(topic = %mq.topic, broker = %mq.broker_name, error = %rmq_protocol::ErrorChain(&e), "route refresh for a broker address failed");
        }
    }

    /// Every known broker address as `(broker_name, broker_id, addr)`,
    /// sorted (the broker address table, merged from every cached route).
    pub fn broker_addrs(&self) -> Vec<(String, i64, String)> {
        self.inner.routes.load().broker_addrs()
    }

    /// Fetches and swaps under the route lock. With `only_if_missing`, a
    /// route cached by a concurrent caller meanwhile is returned as is
    /// (many tasks asking for a new topic cause one fetch).
    async fn update_route(
        &self,
        topic: &str,
        only_if_missing: bool,
    ) -> Result<Arc<TopicRouteInfo>> {
        if self.inner.is_closing() {
            return Err(Error::Shutdown);
        }
        let _guard = self.inner.route_update.lock().await;
        if only_if_missing {
            if let Some(route) = self.cached_route(topic) {
                return Ok(route);
            }
        }
        let data = self.fetch_route_data(topic).await?;
        let info = TopicRouteInfo::new(topic, data);
        let current = self.inner.routes.load_full();
        if let Some(next) = current.with_route(info) {
            let before = current.broker_addrs();
            let after = next.broker_addrs();
            if before != after {
                info!(client_id = %self.inner.client_id, ?after, "broker address table changed");
                if after.iter().any(|a| !before.contains(a)) {
                    // Tell the new broker about our groups without waiting
                    // for the next period.
                    self.inner.heartbeat_wakeup.notify_one();
                }
            }
            debug!(client_id = %self.inner.client_id, topic, "route changed");
            self.inner.routes.store(Arc::new(next));
        }
        self.cached_route(topic)
            .ok_or_else(|| Error::RouteNotFound {
                topic: topic.to_owned(),
            })
    }

    /// GET_ROUTEINFO_BY_TOPIC, trying the name servers in turn from the
    /// one that answered last.
    pub(crate) async fn fetch_route_data(&self, topic: &str) -> Result<TopicRouteData> {
        let request = RemotingCommand::request(
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            &GetRouteInfoRequestHeader::new(topic),
        );
        let response = self
            .invoke_namesrv(
                request,
                &[ResponseCode::SUCCESS, ResponseCode::TOPIC_NOT_EXIST],
            )
            .await?;
        if response.response_code() == ResponseCode::TOPIC_NOT_EXIST {
            return Err(Error::RouteNotFound {
                topic: topic.to_owned(),
            });
        }
        Ok(TopicRouteData::decode(&response.body)?)
    }

    /// Refreshes every topic in use: cached routes and the consumers'
    /// subscriptions (Java `updateTopicRouteInfoFromNameServer`).
    pub(crate) async fn refresh_all_routes(&self) {
        let mut topics: BTreeSet<String> =
            self.inner.routes.load().topics.keys().cloned().collect();
        for consumer in self.consumers() {
            topics.extend(
                consumer
                    .consumer_data()
                    .subscription_data_set
                    .into_iter()
                    .map(|s| s.topic),
            );
        }
        for topic in topics {
            if let Err(e) = self.update_route(&topic, false).await {
                debug!(client_id = %self.inner.client_id, topic, error = %rmq_protocol::ErrorChain(&e), "route refresh failed");
            }
        }
    }
}

/// Starts the periodic route refresh (first after 10 ms, then every
/// `poll_name_server_interval`), woken early by a broker call that found
/// its broker gone, at most once per [`WAKEUP_GAP`].
pub(super) fn spawn_refresh_task(instance: &ClientInstance) {
    let weak = instance.downgrade();
    let cancel = instance.inner.cancel.clone();
    let wakeup = instance.inner.route_wakeup.clone();
    let interval = instance.inner.config.poll_name_server_interval();
    instance.inner.tasks.spawn(async move {
        let mut delay = FIRST_REFRESH_DELAY;
        let mut last: Option<tokio::time::Instant> = None;
        loop {
            let woken = tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(delay) => false,
                () = wakeup.notified() => true,
            };
            if let (true, Some(last)) = (woken, last) {
                // Calls fail in bursts when a broker dies: one refresh per gap.
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep_until(last + WAKEUP_GAP) => {}
                }
            }
            delay = interval;
            let Some(instance) = ClientInstance::from_weak(&weak) else {
                break;
            };
            tokio::select! {
                () = cancel.cancelled() => break,
                () = instance.refresh_all_routes() => {}
            }
            last = Some(tokio::time::Instant::now());
        }
    });
}
