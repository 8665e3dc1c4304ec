//! Registered clients of one broker (Java `ConsumerManager`,
//! `ProducerManager`, `ConsumerFilterManager`): consumer groups with their
//! connections and subscriptions, producer groups, SQL92 filters.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rmq_protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ExpressionType, MessageModel, SubscriptionData,
};

use rmq_protocol::LanguageCode;

use super::filter::Sql;
use crate::fault::ConnectionId;
use crate::net::ConnShared;

/// One client connection registered in a group.
#[derive(Debug, Clone)]
pub(crate) struct ClientChannel {
    pub(crate) conn: Arc<ConnShared>,
    pub(crate) client_id: String,
    pub(crate) language: LanguageCode,
    pub(crate) version: i32,
    pub(crate) last_update_ms: i64,
}

/// Who a registration is from: the connection, the client id, and the
/// request's language and version.
#[derive(Debug, Clone)]
pub(crate) struct ClientRef<'a> {
    pub(crate) conn: &'a Arc<ConnShared>,
    pub(crate) client_id: &'a str,
    pub(crate) language: LanguageCode,
    pub(crate) version: i32,
}

impl ClientRef<'_> {
    fn channel(&self, now_ms: i64) -> ClientChannel {
        ClientChannel {
            conn: Arc::clone(self.conn),
            client_id: self.client_id.to_owned(),
            language: self.language,
            version: self.version,
            last_update_ms: now_ms,
        }
    }
}

/// A consumer group (Java `ConsumerGroupInfo`).
#[derive(Debug, Clone)]
pub(crate) struct ConsumerGroupInfo {
    pub(crate) consume_type: ConsumeType,
    pub(crate) message_model: MessageModel,
    pub(crate) consume_from_where: ConsumeFromWhere,
    pub(crate) channels: BTreeMap<ConnectionId, ClientChannel>,
    pub(crate) subscriptions: HashMap<String, SubscriptionData>,
}

impl ConsumerGroupInfo {
    pub(crate) fn client_ids(&self) -> Vec<String> {
        self.channels
            .values()
            .map(|c| c.client_id.clone())
            .collect()
    }

    pub(crate) fn conns(&self) -> Vec<Arc<ConnShared>> {
        self.channels
            .values()
            .map(|c| Arc::clone(&c.conn))
            .collect()
    }

    /// Java `updateSubscription`: adds new topics, replaces a subscription
    /// whose version grew, removes topics no longer listed; `true` when a
    /// topic was added or removed.
    fn update_subscriptions(&mut self, subs: &[SubscriptionData]) -> bool {
        let mut changed = false;
        for sub in subs {
            match self.subscriptions.get(&sub.topic) {
                None => {
                    self.subscriptions.insert(sub.topic.clone(), sub.clone());
                    changed = true;
                }
                Some(old) if sub.sub_version > old.sub_version => {
                    self.subscriptions.insert(sub.topic.clone(), sub.clone());
                }
                Some(_) => {}
            }
        }
        let before = self.subscriptions.len();
        self.subscriptions
            .retain(|topic, _| subs.iter().any(|s| &s.topic == topic));
        changed || self.subscriptions.len() != before
    }
}

/// A registered SQL92 filter (Java `ConsumerFilterData`).
#[derive(Debug, Clone)]
pub(crate) struct FilterEntry {
    pub(crate) expression: String,
    pub(crate) client_version: i64,
    pub(crate) compiled: Arc<Sql>,
}

#[derive(Debug, Default)]
pub(crate) struct Clients {
    pub(crate) consumers: HashMap<String, ConsumerGroupInfo>,
    pub(crate) producers: HashMap<String, BTreeMap<ConnectionId, ClientChannel>>,
    /// (topic, group) → filter.
    filters: HashMap<(String, String), FilterEntry>,
}

impl Clients {
    /// Java `registerConsumer`: `true` when a connection joined or the
    /// subscribed topics changed (the group is then told).
    pub(crate) fn register_consumer(
        &mut self,
        client: &ClientRef<'_>,
        data: &ConsumerData,
        now_ms: i64,
    ) -> bool {
        let info = self
            .consumers
            .entry(data.group_name.clone())
            .or_insert_with(|| ConsumerGroupInfo {
                consume_type: data.consume_type,
                message_model: data.message_model,
                consume_from_where: data.consume_from_where,
                channels: BTreeMap::new(),
                subscriptions: HashMap::new(),
            });
        info.consume_type = data.consume_type;
        info.message_model = data.message_model;
        info.consume_from_where = data.consume_from_where;
        let joined = match info.channels.get_mut(&client.conn.id) {
            Some(ch) => {
                *ch = client.channel(now_ms);
                false
            }
            None => {
                info.channels.insert(client.conn.id, client.channel(now_ms));
                true
            }
        };
        let subs_changed = info.update_subscriptions(&data.subscription_data_set);
        for sub in &data.subscription_data_set {
            if sub.expression_type == ExpressionType::Sql92 {
                self.register_filter(&data.group_name, sub);
            }
        }
        joined || subs_changed
    }

    /// Java `FilterDataMapByTopic.register`.
    fn register_filter(&mut self, group: &str, sub: &SubscriptionData) {
        if sub.sub_string.is_empty() {
            return;
        }
        let key = (sub.topic.clone(), group.to_owned());
        match self.filters.get_mut(&key) {
            Some(old) if old.expression == sub.sub_string => {
                old.client_version = old.client_version.max(sub.sub_version);
            }
            _ => match Sql::compile(&sub.sub_string) {
                Ok(compiled) => {
                    self.filters.insert(
                        key,
                        FilterEntry {
                            expression: sub.sub_string.clone(),
                            client_version: sub.sub_version,
                            compiled: Arc::new(compiled),
                        },
                    );
                }
                Err(_) => {
                    // The client learns of the bad expression from its pulls
                    // (FILTER_DATA_NOT_EXIST).
                    self.filters.remove(&key);
                }
            },
        }
    }

    pub(crate) fn filter(&self, topic: &str, group: &str) -> Option<&FilterEntry> {
        self.filters.get(&(topic.to_owned(), group.to_owned()))
    }

    /// Java `unregisterConsumer`: `Some(remaining connections)` when the
    /// group exists (they are told, unless broadcasting).
    pub(crate) fn unregister_consumer(
        &mut self,
        group: &str,
        conn: ConnectionId,
    ) -> Option<(MessageModel, Vec<Arc<ConnShared>>)> {
        let info = self.consumers.get_mut(group)?;
        info.channels.remove(&conn);
        let model = info.message_model;
        let remaining = info.conns();
        if info.channels.is_empty() {
            self.consumers.remove(group);
            self.filters.retain(|(_, g), _| g != group);
        }
        Some((model, remaining))
    }

    pub(crate) fn register_producer(&mut self, group: &str, client: &ClientRef<'_>, now_ms: i64) {
        self.producers
            .entry(group.to_owned())
            .or_default()
            .insert(client.conn.id, client.channel(now_ms));
    }

    pub(crate) fn unregister_producer(&mut self, group: &str, conn: ConnectionId) {
        if let Some(channels) = self.producers.get_mut(group) {
            channels.remove(&conn);
            if channels.is_empty() {
                self.producers.remove(group);
            }
        }
    }

    /// Removes a closed connection everywhere; returns the consumer groups it
    /// was in with their remaining connections (to be told).
    pub(crate) fn connection_closed(
        &mut self,
        conn: ConnectionId,
    ) -> Vec<(String, MessageModel, Vec<Arc<ConnShared>>)> {
        let groups: Vec<String> = self
            .consumers
            .iter()
            .filter(|(_, info)| info.channels.contains_key(&conn))
            .map(|(g, _)| g.clone())
            .collect();
        let mut out = Vec::new();
        for g in groups {
            if let Some((model, remaining)) = self.unregister_consumer(&g, conn) {
                out.push((g, model, remaining));
            }
        }
        let producer_groups: Vec<String> = self.producers.keys().cloned().collect();
        for g in producer_groups {
            self.unregister_producer(&g, conn);
        }
        out
    }

    /// Connections whose last heartbeat is older than `expiry_ms` (Java
    /// `scanNotActiveChannel`: the broker closes them).
    pub(crate) fn expired(&self, now_ms: i64, expiry_ms: i64) -> Vec<Arc<ConnShared>> {
        let old = |c: &ClientChannel| now_ms.saturating_sub(c.last_update_ms) > expiry_ms;
        let mut out: BTreeMap<ConnectionId, Arc<ConnShared>> = BTreeMap::new();
        for info in self.consumers.values() {
            for c in info.channels.values().filter(|c| old(c)) {
                out.insert(c.conn.id, Arc::clone(&c.conn));
            }
        }
        for channels in self.producers.values() {
            for c in channels.values().filter(|c| old(c)) {
                out.insert(c.conn.id, Arc::clone(&c.conn));
            }
        }
        out.into_values().collect()
    }

    /// Forgets every client (a broker restart).
    pub(crate) fn clear(&mut self) {
        self.consumers.clear();
        self.producers.clear();
        self.filters.clear();
    }
}
