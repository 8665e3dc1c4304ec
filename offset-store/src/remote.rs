//! [`RemoteBrokerOffsetStore`]: offsets kept by the broker (clustering).

use std::collections::HashSet;
use std::fmt;
use std::future::Future;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use rmq_client_core::ClientInstance;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::MASTER_ID;
use rmq_protocol::header::{QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader};
use tracing::{debug, info, warn};

use crate::error::{Error, Result};
use crate::memory::memory_methods;
use crate::store::{OffsetStore, PersistMode};
use crate::table::OffsetTable;

/// How many UPDATE_CONSUMER_OFFSET calls of one `persist_all` run at once.
const PERSIST_CONCURRENCY: usize = 16;

/// The clustering offset store (Java `RemoteBrokerOffsetStore`): an
/// in-memory table, persisted with UPDATE_CONSUMER_OFFSET and read with
/// QUERY_CONSUMER_OFFSET at the master of each queue's broker.
///
/// ```no_run
/// use rmq_client_core::{ClientConfig, ClientInstance};
/// use rmq_offset_store::{OffsetStore, PersistMode, ReadOffsetType, RemoteBrokerOffsetStore};
/// use rmq_protocol::MessageQueue;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let instance = ClientInstance::get_or_start(ClientConfig::builder().build()?)?;
/// let store = RemoteBrokerOffsetStore::new(instance, "my_group");
/// let mq = MessageQueue::new("orders", "broker-a", 0);
/// store.update_offset(&mq, 42, true);
/// store.persist(&mq, PersistMode::Sync).await?;
/// assert_eq!(store.read_offset(&mq, ReadOffsetType::ReadFromStore).await?, Some(42));
/// # Ok(()) }
/// ```
pub struct RemoteBrokerOffsetStore {
    instance: ClientInstance,
    group: String,
    table: OffsetTable,
}

impl fmt::Debug for RemoteBrokerOffsetStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteBrokerOffsetStore")
            .field("client_id", &self.instance.client_id())
            .field("group", &self.group)
            .field("table", &self.table)
            .finish()
    }
}

impl RemoteBrokerOffsetStore {
    /// A store for `group`'s offsets, talking to the brokers through
    /// `instance` (whose route table finds each queue's broker).
    pub fn new(instance: ClientInstance, group: impl Into<String>) -> Self {
        RemoteBrokerOffsetStore {
            instance,
            group: group.into(),
            table: OffsetTable::default(),
        }
    }

    /// The consumer group.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The client instance the store talks through.
    pub fn instance(&self) -> &ClientInstance {
        &self.instance
    }

    /// The address of `mq`'s broker: the master; else (after a route
    /// refresh) for updates any node, for queries the master, else any node
    /// (Java `updateConsumeOffsetToBroker` / `fetchConsumeOffsetFromBroker`).
    async fn broker_addr(&self, mq: &MessageQueue, query: bool) -> Result<String> {
        match self.instance.subscribe_addr(mq, MASTER_ID, query).await {
            Ok((addr, _)) => Ok(addr),
            Err(rmq_client_core::Error::BrokerNotFound { .. }) => Err(Error::BrokerNotFound {
                broker_name: mq.broker_name.clone(),
                topic: mq.topic.clone(),
                source: None,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// `call` with the address of `mq`'s broker ([`broker_addr`](Self::broker_addr)).
    /// When that broker is gone (refused or dropped connection), refreshes
    /// the topic's route and, if it names another address now, calls that
    /// once: a master that died may already have a successor (a controller
    /// election) that the periodic refresh has not brought yet. Offset calls
    /// are safe to repeat.
    async fn at_broker<T, F, Fut>(&self, mq: &MessageQueue, query: bool, call: F) -> Result<T>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let addr = self.broker_addr(mq, query).await?;
        let err = match call(addr.clone()).await {
            Err(e) if e.is_broker_unreachable() => e,
            other => return other,
        };
        if let Err(refresh) = self.instance.refresh_route(&mq.topic).await {
            debug!(group = %self.group, %mq, error = %rmq_protocol::ErrorChain(&refresh), "route refresh after an unreachable broker failed");
            return Err(err);
        }
        match self.broker_addr(mq, query).await {
            Ok(next) if next != addr => {
                debug!(group = %self.group, %mq, gone = addr, next, "broker unreachable; calling the address the route names now");
                call(next).await
            }
            _ => Err(err),
        }
    }

    /// QUERY_CONSUMER_OFFSET; `None` for QUERY_NOT_FOUND.
    async fn fetch_from_broker(&self, mq: &MessageQueue) -> Result<Option<i64>> {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: self.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            set_zero_if_not_found: None,
            broker_name: Some(mq.broker_name.clone()),
        };
        let header = &header;
        self.at_broker(mq, true, |addr| async move {
            Ok(self
                .instance
                .query_consumer_offset(&addr, header.clone())
                .await?)
        })
        .await
    }

    /// UPDATE_CONSUMER_OFFSET, oneway or waiting for the answer.
    async fn send_offset(&self, mq: &MessageQueue, offset: i64, mode: PersistMode) -> Result<()> {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: self.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            commit_offset: offset,
            broker_name: Some(mq.broker_name.clone()),
        };
        let header = &header;
        self.at_broker(mq, false, |addr| async move {
            match mode {
                PersistMode::Oneway => {
                    self.instance
                        .update_consumer_offset_oneway(&addr, header.clone())
                        .await?;
                }
                PersistMode::Sync => {
                    self.instance
                        .update_consumer_offset(&addr, header.clone())
                        .await?;
                }
            }
            debug!(group = %self.group, %mq, offset, ?mode, addr, "offset persisted");
            Ok(())
        })
        .await
    }

    async fn persist_one(&self, mq: &MessageQueue, mode: PersistMode) -> Result<()> {
        match self.table.get(mq) {
            Some(offset) => self.send_offset(mq, offset, mode).await,
            None => Ok(()),
        }
    }

    /// UPDATE_CONSUMER_OFFSET of each `(queue, offset)`, a few at once.
    async fn send_offsets(
        &self,
        offsets: Vec<(MessageQueue, i64)>,
        mode: PersistMode,
    ) -> Vec<(MessageQueue, Result<()>)> {
        futures::stream::iter(offsets)
            .map(|(mq, offset)| async move {
                let result = self.send_offset(&mq, offset, mode).await;
                (mq, result)
            })
            .buffer_unordered(PERSIST_CONCURRENCY)
            .collect()
            .await
    }

    async fn persist_many(&self, mqs: &[MessageQueue], mode: PersistMode) -> Result<()> {
        if mqs.is_empty() {
            return Ok(());
        }
        let held: HashSet<&MessageQueue> = mqs.iter().collect();
        let (offsets, removed) = self.table.retain_held(&held);
        for mq in &removed {
            info!(group = %self.group, %mq, "removed the offset of a queue no longer held");
        }
        let total = offsets.len();
        // The broker makes a group's offset map of a topic on the first
        // commit with a get and a put (4.9.x `ConsumerOffsetManager.commitOffset`),
        // so two first commits of one topic racing on its threads keep only
        // one queue's offset. The first queue of each (broker, topic) goes
        // alone and is waited for (even in a oneway persist: one round trip
        // per topic), then the others, concurrently.
        let mut seen = HashSet::new();
        let (first, others): (Vec<_>, Vec<_>) = offsets
            .into_iter()
            .partition(|(mq, _)| seen.insert((mq.broker_name.clone(), mq.topic.clone())));
        let mut results = self.send_offsets(first, PersistMode::Sync).await;
        results.extend(self.send_offsets(others, mode).await);
        let mut failed = Vec::new();
        let mut first_error = None;
        for (mq, result) in results {
            if let Err(e) = result {
                warn!(group = %self.group, %mq, error = %rmq_protocol::ErrorChain(&e), "persisting the offset failed");
                failed.push(mq);
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            None => Ok(()),
            Some(source) => {
                failed.sort();
                Err(Error::Persist {
                    failed,
                    total,
                    source: Box::new(source),
                })
            }
        }
    }
}

impl OffsetStore for RemoteBrokerOffsetStore {
    memory_methods!(fetch_from_broker);

    fn load(&self) -> BoxFuture<'_, Result<()>> {
        futures::future::ready(Ok(())).boxed()
    }

    fn persist<'a>(&'a self, mq: &'a MessageQueue, mode: PersistMode) -> BoxFuture<'a, Result<()>> {
        self.persist_one(mq, mode).boxed()
    }

    fn persist_all<'a>(
        &'a self,
        mqs: &'a [MessageQueue],
        mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>> {
        self.persist_many(mqs, mode).boxed()
    }

    fn update_consume_offset_to_broker<'a>(
        &'a self,
        mq: &'a MessageQueue,
        offset: i64,
        mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>> {
        self.send_offset(mq, offset, mode).boxed()
    }
}
