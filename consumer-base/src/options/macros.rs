//! The macros that give each consumer's builder, config and handle their
//! shared setters and getters: [`group_setters!`](crate::group_setters),
//! [`group_getters!`](crate::group_getters) and
//! [`handle_getters!`](crate::handle_getters) (exported at the crate root).

/// Adds the group setters to a consumer builder: `group`, `client_config`,
/// `namesrv_addr`, `message_model`, `offset_store_dir`, `offset_store`,
/// `offset_store_arc`, `config` and a crate-private `into_parts` (validated
/// config + resolved client config, what `start` needs); with `rebalance`
/// also `consume_from`, `allocate_strategy`, `allocate_strategy_arc`,
/// `subscribe` and `subscribe_sql`.
///
/// The builder has a field `client` (a
/// [`ClientConfigSource`](rmq_client_core::ClientConfigSource)) and a field
/// `config` of type `$config` whose field `options` is the
/// [`GroupOptions`](crate::GroupOptions) (and, with `rebalance`, whose
/// field `subscriptions` is a `Vec<Subscription>`); `$config` has a
/// crate-visible `validate_detailed` returning the crate's `Result` (its
/// public `validate` returns `rmq_error::Result`; `into_parts` returns the
/// calling crate's `crate::Result`).
#[allow(clippy::crate_in_macro_def)]
#[macro_export]
macro_rules! group_setters {
    ($builder:ty, $config:ty) => {
        $crate::__private::client_setters!($builder, client);

        impl $builder {
            /// The settings as they stand (defaults included), without
            /// validating.
            pub fn config(&self) -> &$config {
                &self.config
            }

            /// The validated settings and the client configuration: what
            /// starting needs.
            fn into_parts(self) -> crate::Result<($config, $crate::__private::ClientConfig)> {
                self.config.validate_detailed()?;
                Ok((self.config, self.client.resolve()?))
            }

            /// The consumer group (Java `consumerGroup`). Required; letters,
            /// digits, `%`, `|`, `_`, `-`, at most 255 characters, not
            /// `DEFAULT_CONSUMER`.
            pub fn group(mut self, group: impl Into<String>) -> Self {
                self.config.options.set_group(group.into());
                self
            }

            /// Clustering (the group shares the queues, each message goes to
            /// one member; offsets kept by the broker) or broadcasting
            /// (every member reads every queue; offsets in a local file of
            /// this client) (Java `messageModel`). Default: clustering.
            ///
            /// Broadcasting keeps the instance name `DEFAULT` (its offset
            /// files live under the client id): give each broadcasting
            /// consumer of a group in one process its own instance name.
            pub fn message_model(mut self, model: $crate::__private::MessageModel) -> Self {
                self.config.options.set_message_model(model);
                self
            }

            /// Root directory of the broadcasting offset files (Java
            /// `rocketmq.client.localOffsetStoreDir`). Default:
            /// `RMQ_OFFSET_STORE_DIR`, else `~/.rocketmq_offsets`.
            pub fn offset_store_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
                self.config.options.set_offset_store_dir(dir.into());
                self
            }

            /// Keeps the group's offsets in `store` instead of the default
            /// (the broker for clustering, a local file for broadcasting;
            /// Java `setOffsetStore`). The consumer loads it at start, reads
            /// a new queue's start offset from it, commits into it and
            /// persists it; with a store of its own the consumer never
            /// writes the group's offsets to the broker (no commit offset
            /// rides on its pulls).
            pub fn offset_store(
                mut self,
                store: impl $crate::__private::OffsetStore + 'static,
            ) -> Self {
                self.config
                    .options
                    .set_offset_store(std::sync::Arc::new(store));
                self
            }

            /// [`offset_store`](Self::offset_store) from a shared store.
            pub fn offset_store_arc(
                mut self,
                store: std::sync::Arc<dyn $crate::__private::OffsetStore>,
            ) -> Self {
                self.config.options.set_offset_store(store);
                self
            }

            /// Whether `start` fails with
            /// [`Error::Client`](rmq_consumer_base::Error::Client)`(NameServerUnavailable)`
            /// ([`is_name_server_unavailable`](rmq_error::Error::is_name_server_unavailable))
            /// when no name server answers within the request timeout
            /// (default `true`). `false` starts anyway (reading begins once
            /// a name server answers) and reports it as
            /// [`ConsumerEvent::NameServerUnreachable`](rmq_consumer_base::ConsumerEvent)
            /// and the state `NoNameServer`.
            pub fn fail_fast(mut self, on: bool) -> Self {
                self.config.options.set_fail_fast(on);
                self
            }

            /// Calls `listener` when queues are assigned to this consumer
            /// or taken away (Java `MessageQueueListener`, rdkafka
            /// `ConsumerContext`).
            pub fn rebalance_listener(mut self, listener: impl $crate::RebalanceListener) -> Self {
                self.config
                    .options
                    .set_rebalance_listener(std::sync::Arc::new(listener));
                self
            }
        }
    };
    ($builder:ty, $config:ty, rebalance) => {
        $crate::group_setters!($builder, $config);

        impl $builder {
            /// Subscribes to `topic` (Java `subscribe(topic, subExpression)`):
            /// the group's rebalance assigns this consumer a share of its
            /// queues. `expression` is a tag expression — `"*"` (everything)
            /// or tags joined by `||` (`"created || paid"`) — or an
            /// [`Expression::sql`](rmq_consumer_base::Expression::sql).
            /// Subscribing a topic again replaces its expression.
            pub fn subscribe(
                mut self,
                topic: impl Into<String>,
                expression: impl Into<$crate::Expression>,
            ) -> Self {
                $crate::Subscription::upsert(
                    &mut self.config.subscriptions,
                    $crate::Subscription::new(topic, expression),
                );
                self
            }

            /// Subscribes to `topic` with an SQL92 condition on message
            /// properties, evaluated by the broker (needs
            /// `enablePropertyFilter=true` there) (Java `subscribe(topic,
            /// MessageSelector.bySql(sql))`).
            pub fn subscribe_sql(self, topic: impl Into<String>, sql: impl Into<String>) -> Self {
                self.subscribe(topic, $crate::Expression::sql(sql))
            }

            /// Where a queue the group has no offset for starts (Java
            /// `consumeFromWhere` + `consumeTimestamp`). Default:
            /// [`ConsumeFrom::LastOffset`](rmq_offset_store::ConsumeFrom::LastOffset).
            pub fn consume_from(mut self, from: $crate::__private::ConsumeFrom) -> Self {
                self.config.options.set_consume_from(from);
                self
            }

            /// The queue allocation strategy (Java
            /// `allocateMessageQueueStrategy`). Every member of a group must
            /// use the same one. Default: averagely
            /// (`AllocateMessageQueueAveragely`).
            pub fn allocate_strategy(
                mut self,
                strategy: impl $crate::__private::AllocateStrategy + 'static,
            ) -> Self {
                self.config
                    .options
                    .set_allocate_strategy(std::sync::Arc::new(strategy));
                self
            }

            /// [`allocate_strategy`](Self::allocate_strategy) from a shared
            /// strategy.
            pub fn allocate_strategy_arc(
                mut self,
                strategy: std::sync::Arc<dyn $crate::__private::AllocateStrategy>,
            ) -> Self {
                self.config.options.set_allocate_strategy(strategy);
                self
            }
        }
    };
}

/// Adds the group getters to a consumer config whose field `options` is the
/// [`GroupOptions`](crate::GroupOptions): `group`, `message_model`,
/// `offset_store_dir`, `offset_store`, `group_options` and, with
/// `rebalance`, `consume_from` and `allocate_strategy`.
#[macro_export]
macro_rules! group_getters {
    ($config:ty) => {
        impl $config {
            /// The consumer group (Java `consumerGroup`).
            pub fn group(&self) -> &str {
                self.options.group()
            }

            /// Clustering or broadcasting (Java `messageModel`). Default:
            /// clustering.
            pub fn message_model(&self) -> $crate::__private::MessageModel {
                self.options.message_model()
            }

            /// Root directory of the broadcasting consumer's offset files.
            /// Default: `None`, i.e. the offset store's default
            /// (`RMQ_OFFSET_STORE_DIR`, else `~/.rocketmq_offsets`).
            pub fn offset_store_dir(&self) -> Option<&std::path::Path> {
                self.options.offset_store_dir()
            }

            /// The offset store given to the builder, if any (else the
            /// message model's default).
            pub fn offset_store(
                &self,
            ) -> Option<&std::sync::Arc<dyn $crate::__private::OffsetStore>> {
                self.options.offset_store()
            }

            /// The group settings all consumers share.
            pub fn group_options(&self) -> &$crate::GroupOptions {
                &self.options
            }
        }
    };
    ($config:ty, rebalance) => {
        $crate::group_getters!($config);

        impl $config {
            /// Where a queue without a stored offset starts (Java
            /// `consumeFromWhere`). Default:
            /// [`ConsumeFrom::LastOffset`](rmq_offset_store::ConsumeFrom::LastOffset).
            pub fn consume_from(&self) -> $crate::__private::ConsumeFrom {
                self.options.consume_from()
            }

            /// The queue allocation strategy (Java
            /// `allocateMessageQueueStrategy`). Default: averagely (`AVG`).
            pub fn allocate_strategy(
                &self,
            ) -> &std::sync::Arc<dyn $crate::__private::AllocateStrategy> {
                self.options.allocate_strategy()
            }
        }
    };
}

/// Adds to a consumer handle the getters every handle has: `config`,
/// `group`, `client_instance`, `client_id`, `is_shutdown`, and a
/// crate-private `new` and `inner`.
///
/// The handle has a field `guard: Arc<DropGuard<$inner>>`; `$inner`
/// implements [`Guarded`](crate::Guarded) and has a field `config` of type
/// `$config`.
#[macro_export]
macro_rules! handle_getters {
    ($handle:ty, $inner:ty, $config:ty) => {
        impl $handle {
            pub(crate) fn new(inner: std::sync::Arc<$inner>) -> Self {
                Self {
                    guard: std::sync::Arc::new($crate::DropGuard::new(inner)),
                }
            }

            fn inner(&self) -> &std::sync::Arc<$inner> {
                self.guard.inner()
            }

            /// The consumer's settings.
            pub fn config(&self) -> &$config {
                &self.inner().config
            }

            /// The consumer group.
            pub fn group(&self) -> &str {
                $crate::Guarded::core(&**self.inner()).group()
            }

            /// The client instance the consumer runs on.
            pub fn client_instance(&self) -> &$crate::__private::ClientInstance {
                $crate::Guarded::core(&**self.inner()).instance()
            }

            /// This client's id in the group (`ip@instance`).
            pub fn client_id(&self) -> &str {
                self.client_instance().client_id()
            }

            /// Whether `shutdown` ran (or the consumer was dropped).
            pub fn is_shutdown(&self) -> bool {
                $crate::Guarded::core(&**self.inner()).is_closed()
            }

            /// The consumer's state now: running, running without a name
            /// server, shutting down, shut down.
            pub fn state(&self) -> $crate::ConsumerState {
                $crate::Guarded::core(&**self.inner()).health().state()
            }

            /// A `watch` receiver of the [`state`](Self::state).
            pub fn watch_state(&self) -> $crate::__private::watch::Receiver<$crate::ConsumerState> {
                $crate::Guarded::core(&**self.inner()).health().watch_state()
            }

            /// The consumer's events: the recent ones (up to 64, so the
            /// start events too), then each as it happens — started, name
            /// server unreachable / reachable again, topic not found, queues
            /// assigned / revoked, shut down. The stream ends when the
            /// consumer's last handle is gone.
            pub fn events(
                &self,
            ) -> impl $crate::__private::Stream<Item = $crate::ConsumerEvent> + Send + Unpin + 'static {
                $crate::Guarded::core(&**self.inner()).health().events()
            }
        }
    };
}
