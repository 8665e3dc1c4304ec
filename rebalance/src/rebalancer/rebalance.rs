//! [`Rebalancer`]: this client's share of a topic's queues (allocate, then
//! diff against what it holds).

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmq_client_core::{ClientInstance, TopicRouteInfo};
use rmq_protocol::MessageQueue;
use rmq_protocol::body::MessageModel;
use tracing::{debug, info, warn};

use crate::allocate::{AllocateStrategy, sort_consumer_ids, sort_queues};

use super::diff::{RebalanceDiff, diff};
use super::error::Result;

/// Computes this client's share of a topic's queues for one consumer group.
///
/// It owns no queues, process queues or pull tasks: it answers "which
/// queues now" ([`allocate`](Self::allocate)) and "what changed"
/// ([`rebalance`](Self::rebalance)); the consumer acts on the answer.
pub struct Rebalancer {
    instance: ClientInstance,
    group: String,
    model: MessageModel,
    strategy: Arc<dyn AllocateStrategy>,
    /// Rotates the broker asked for the consumer ids; starts at a random
    /// broker (Java picks a random one each time).
    next_broker: AtomicUsize,
}

impl fmt::Debug for Rebalancer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rebalancer")
            .field("client_id", &self.instance.client_id())
            .field("group", &self.group)
            .field("model", &self.model)
            .field("strategy", &self.strategy.name())
            .finish()
    }
}

impl Rebalancer {
    /// A rebalancer for `group`, allocating with `strategy` in clustering
    /// mode (broadcasting takes every queue).
    pub fn new(
        instance: ClientInstance,
        group: impl Into<String>,
        model: MessageModel,
        strategy: Arc<dyn AllocateStrategy>,
    ) -> Self {
        let seed = RandomState::new().build_hasher().finish();
        Rebalancer {
            instance,
            group: group.into(),
            model,
            strategy,
            next_broker: AtomicUsize::new(usize::try_from(seed % 1024).unwrap_or_default()),
        }
    }

    /// The consumer group.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Clustering or broadcasting.
    pub fn message_model(&self) -> MessageModel {
        self.model
    }

    /// The allocation strategy.
    pub fn strategy(&self) -> &Arc<dyn AllocateStrategy> {
        &self.strategy
    }

    /// The client instance (its client id is this consumer's id).
    pub fn instance(&self) -> &ClientInstance {
        &self.instance
    }

    /// The queues of `topic` this client should consume now, sorted;
    /// `Ok(None)` when the topic must be skipped this time (keep what is
    /// held): it has no route (normal for a `%RETRY%` topic before its first
    /// retry) or no readable queue, or, in clustering mode, the broker lists
    /// no consumer of the group.
    ///
    /// Clustering: the route's readable queues and the group's consumer ids
    /// (GET_CONSUMER_LIST_BY_GROUP to one broker of the route, another one
    /// if it fails), both sorted like the Java client, then the strategy
    /// with this client's id. Broadcasting: every readable queue.
    ///
    /// # Errors
    ///
    /// [`Error::Client`](super::Error::Client) when the route could not be fetched (other than
    /// "no route") or every broker failed the consumer-id query;
    /// [`Error::Allocate`](super::Error::Allocate) when the strategy refused.
    pub async fn allocate(&self, topic: &str) -> Result<Option<Vec<MessageQueue>>> {
        let route = match self.instance.route(topic).await {
            Ok(route) => route,
            Err(rmq_client_core::Error::RouteNotFound { .. }) => {
                if rmq_protocol::names::is_retry_topic(topic) {
                    debug!(group = %self.group, topic, "no route for the retry topic yet, skipped");
                } else {
                    warn!(group = %self.group, topic, "rebalance: the topic has no route, skipped");
                }
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let mut mq_all = route.subscribe_queues().to_vec();
        sort_queues(&mut mq_all);
        if self.model == MessageModel::Broadcasting {
            return Ok(Some(mq_all));
        }
        if mq_all.is_empty() {
            debug!(group = %self.group, topic, "the topic has no readable queue, skipped");
            return Ok(None);
        }
        let cid_all = self.consumer_ids(&route).await?;
        if cid_all.is_empty() {
            info!(group = %self.group, topic, "the broker lists no consumer of the group, skipped");
            return Ok(None);
        }
        let client_id = self.instance.client_id();
        let mut mine = self
            .strategy
            .allocate(&self.group, client_id, &mq_all, &cid_all)?;
        if !cid_all.iter().any(|c| c == client_id) {
            debug!(
                group = %self.group, topic, client_id, ?cid_all,
                "this client is not (yet) in the group's consumer list: no queues"
            );
        }
        sort_queues(&mut mine);
        mine.dedup();
        Ok(Some(mine))
    }

    /// [`allocate`](Self::allocate), then [`diff`] against the queues of
    /// `topic` in `held` (queues of other topics in `held` are ignored).
    /// `Ok(None)` when the topic is skipped.
    ///
    /// # Errors
    ///
    /// As [`allocate`](Self::allocate).
    pub async fn rebalance<'a>(
        &self,
        topic: &str,
        held: impl IntoIterator<Item = &'a MessageQueue>,
    ) -> Result<Option<RebalanceDiff>> {
        let Some(assigned) = self.allocate(topic).await? else {
            return Ok(None);
        };
        let d = diff(held.into_iter().filter(|mq| mq.topic == topic), &assigned);
        if d.is_changed() {
            info!(
                group = %self.group,
                topic,
                strategy = self.strategy.name(),
                added = ?d.added,
                removed = ?d.removed,
                assigned = d.added.len() + d.unchanged.len(),
                "rebalance result changed"
            );
        }
        Ok(Some(d))
    }

    /// The group's consumer ids, sorted (Java `String.compareTo`), from one
    /// broker of `route`: starting at a rotating broker, the next one when a
    /// broker fails. Empty when the broker knows no consumer of the group or
    /// the route has no broker address.
    async fn consumer_ids(&self, route: &TopicRouteInfo) -> Result<Vec<String>> {
        let brokers = &route.route_data().broker_datas;
        let count = brokers.len();
        let start = self.next_broker.fetch_add(1, Ordering::Relaxed);
        let mut last_error = None;
        for i in 0..count {
            let Some(broker) = brokers.get(start.wrapping_add(i) % count) else {
                continue;
            };
            let Some(addr) = broker.master_or_any_addr() else {
                continue;
            };
            match self.instance.get_consumer_id_list(addr, &self.group).await {
                Ok(mut ids) => {
                    sort_consumer_ids(&mut ids);
                    return Ok(ids);
                }
                Err(e) => {
                    warn!(
                        group = %self.group, topic = route.topic(), addr, error = %rmq_protocol::ErrorChain(&e),
                        "consumer id query failed, trying another broker"
                    );
                    last_error = Some(e);
                }
            }
        }
        match last_error {
            Some(e) => Err(e.into()),
            None => {
                debug!(group = %self.group, topic = route.topic(), "no broker address in the route");
                Ok(Vec::new())
            }
        }
    }
}
