//! [`GroupOptions`] and its defaults.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmq_client_core::ClientInstance;
use rmq_offset_store::{ConsumeFrom, OffsetStore, offset_store_for};
use rmq_protocol::body::{ConsumeType, ConsumerData, MessageModel, SubscriptionData};
use rmq_protocol::names::{self, NameKind};
use rmq_rebalance::{AllocateAveragely, AllocateStrategy};

use crate::health::RebalanceListener;

/// The group settings every consumer shares, with the Java defaults.
/// Consumer configs embed it; their builders set it through the setters
/// [`group_setters!`](crate::group_setters) adds.
#[derive(Debug, Clone)]
pub struct GroupOptions {
    group: String,
    message_model: MessageModel,
    consume_from: ConsumeFrom,
    allocate_strategy: Arc<dyn AllocateStrategy>,
    offset_store_dir: Option<PathBuf>,
    offset_store: Option<Arc<dyn OffsetStore>>,
    fail_fast: bool,
    rebalance_listener: ListenerSlot,
}

/// The rebalance listener, shown as whether there is one.
#[derive(Clone, Default)]
struct ListenerSlot(Option<Arc<dyn RebalanceListener>>);

impl std::fmt::Debug for ListenerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

impl Default for GroupOptions {
    fn default() -> Self {
        GroupOptions {
            group: String::new(),
            message_model: MessageModel::Clustering,
            consume_from: ConsumeFrom::LastOffset,
            allocate_strategy: Arc::new(AllocateAveragely),
            offset_store_dir: None,
            offset_store: None,
            fail_fast: true,
            rebalance_listener: ListenerSlot::default(),
        }
    }
}

impl GroupOptions {
    /// Whether `start` fails when no name server answers within the request
    /// timeout (default `true`); `false` starts anyway and reports
    /// [`ConsumerEvent::NameServerUnreachable`](crate::ConsumerEvent).
    pub fn fail_fast(&self) -> bool {
        self.fail_fast
    }

    /// Sets [`fail_fast`](Self::fail_fast).
    pub fn set_fail_fast(&mut self, on: bool) {
        self.fail_fast = on;
    }

    /// The application's rebalance listener, if any.
    pub fn rebalance_listener(&self) -> Option<&Arc<dyn RebalanceListener>> {
        self.rebalance_listener.0.as_ref()
    }

    /// Sets the [`rebalance_listener`](Self::rebalance_listener).
    pub fn set_rebalance_listener(&mut self, listener: Arc<dyn RebalanceListener>) {
        self.rebalance_listener = ListenerSlot(Some(listener));
    }

    /// The consumer group (Java `consumerGroup`). Required.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Clustering (the group shares the queues, each message goes to one
    /// member; offsets kept by the broker) or broadcasting (every member
    /// reads every queue; offsets in a local file) (Java `messageModel`).
    /// Default: clustering.
    pub fn message_model(&self) -> MessageModel {
        self.message_model
    }

    /// Whether the message model is clustering.
    pub fn is_clustering(&self) -> bool {
        self.message_model == MessageModel::Clustering
    }

    /// Where a queue the group has no offset for starts (Java
    /// `consumeFromWhere` + `consumeTimestamp`). Default:
    /// [`ConsumeFrom::LastOffset`].
    pub fn consume_from(&self) -> ConsumeFrom {
        self.consume_from
    }

    /// The queue allocation strategy (Java `allocateMessageQueueStrategy`).
    /// Default: averagely (`AVG`).
    pub fn allocate_strategy(&self) -> &Arc<dyn AllocateStrategy> {
        &self.allocate_strategy
    }

    /// Root directory of the broadcasting consumer's offset files. Default:
    /// `None`, i.e. the offset store's default (`RMQ_OFFSET_STORE_DIR`, else
    /// `~/.rocketmq_offsets`).
    pub fn offset_store_dir(&self) -> Option<&Path> {
        self.offset_store_dir.as_deref()
    }

    /// The offset store given instead of the default one, if any.
    pub fn offset_store(&self) -> Option<&Arc<dyn OffsetStore>> {
        self.offset_store.as_ref()
    }

    /// Puts the group into `namespace` (Java `DefaultMQPushConsumer.start`
    /// and its pull siblings): `<namespace>%<group>` from then on.
    pub fn enter_namespace(&mut self, namespace: &rmq_protocol::namespace::Namespace) {
        namespace.wrap_in_place(&mut self.group);
    }

    /// Sets [`group`](Self::group).
    pub fn set_group(&mut self, group: String) {
        self.group = group;
    }

    /// Sets [`message_model`](Self::message_model).
    pub fn set_message_model(&mut self, model: MessageModel) {
        self.message_model = model;
    }

    /// Sets [`consume_from`](Self::consume_from).
    pub fn set_consume_from(&mut self, from: ConsumeFrom) {
        self.consume_from = from;
    }

    /// Sets [`allocate_strategy`](Self::allocate_strategy).
    pub fn set_allocate_strategy(&mut self, strategy: Arc<dyn AllocateStrategy>) {
        self.allocate_strategy = strategy;
    }

    /// Sets [`offset_store_dir`](Self::offset_store_dir).
    pub fn set_offset_store_dir(&mut self, dir: PathBuf) {
        self.offset_store_dir = Some(dir);
    }

    /// Sets [`offset_store`](Self::offset_store).
    pub fn set_offset_store(&mut self, store: Arc<dyn OffsetStore>) {
        self.offset_store = Some(store);
    }

    /// Checks the group name (Java `Validators.checkGroup`; not
    /// `DEFAULT_CONSUMER`).
    ///
    /// # Errors
    ///
    /// A text saying what is wrong with the name.
    pub fn validate(&self) -> Result<(), String> {
        names::check(NameKind::ConsumerGroup, &self.group).map_err(|e| e.to_string())
    }

    /// The offset store the consumer uses on `instance`: the one given,
    /// else the default of the message model ([`offset_store_for`]: the
    /// broker for clustering, a local file for broadcasting). Nothing is
    /// loaded yet.
    ///
    /// # Errors
    ///
    /// Broadcasting with the default store: the local file store's errors.
    pub fn open_offset_store(
        &self,
        instance: &ClientInstance,
    ) -> rmq_offset_store::Result<Arc<dyn OffsetStore>> {
        match &self.offset_store {
            Some(store) => Ok(store.clone()),
            None => offset_store_for(
                self.message_model,
                instance,
                &self.group,
                self.offset_store_dir.as_deref(),
            ),
        }
    }

    /// The heartbeat entry of a consumer of this group.
    pub fn consumer_data(
        &self,
        consume_type: ConsumeType,
        subscriptions: Vec<SubscriptionData>,
    ) -> ConsumerData {
        ConsumerData {
            consume_from_where: self.consume_from.as_java(),
            consume_type,
            group_name: self.group.clone(),
            message_model: self.message_model,
            subscription_data_set: subscriptions,
            unit_mode: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let mut o = GroupOptions::default();
        assert_eq!(o.message_model(), MessageModel::Clustering);
        assert_eq!(o.consume_from(), ConsumeFrom::LastOffset);
        assert_eq!(o.allocate_strategy().name(), "AVG");
        assert!(o.offset_store().is_none());
        assert!(o.validate().unwrap_err().contains("is empty"));
        o.set_group("DEFAULT_CONSUMER".into());
        assert!(o.validate().unwrap_err().contains("reserved"));
        o.set_group("G".into());
        assert!(o.validate().is_ok());
        let data = o.consumer_data(ConsumeType::ConsumeActively, Vec::new());
        assert_eq!(data.group_name, "G");
        assert_eq!(data.consume_type, ConsumeType::ConsumeActively);
    }
}
