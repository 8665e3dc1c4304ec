//! Registration of producer groups and consumers with a
//! [`ClientInstance`]: each registration sends a heartbeat at once, each
//! unregistration UNREGISTER_CLIENT.

use std::sync::Arc;

use tracing::debug;

use crate::consumer::ConsumerHandle;
use crate::error::{Error, Result};
use crate::producer::ProducerHandle;

use super::ClientInstance;

impl ClientInstance {
    /// Registers a producer group and sends a heartbeat at once (errors
    /// of the heartbeat are logged, not returned).
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateGroup`] when the group is already registered in
    /// this instance, [`Error::Shutdown`] after shutdown.
    pub async fn register_producer(&self, group: &str) -> Result<()> {
        self.check_open()?;
        if !self.inner.members().producers.insert(group.to_owned()) {
            return Err(Error::DuplicateGroup {
                kind: "producer",
                group: group.to_owned(),
            });
        }
        debug!(client_id = %self.inner.client_id, group, "producer registered");
        self.send_heartbeat_now().await;
        Ok(())
    }

    /// Registers a producer group as
    /// [`register_producer`](ClientInstance::register_producer) does, and
    /// routes the broker → client requests for it (CHECK_TRANSACTION_STATE
    /// of half messages whose `PGROUP` is `group`) to `handle`.
    ///
    /// # Errors
    ///
    /// As [`register_producer`](ClientInstance::register_producer).
    pub async fn register_producer_handle(
        &self,
        group: &str,
        handle: Arc<dyn ProducerHandle>,
    ) -> Result<()> {
        self.check_open()?;
        {
            let mut members = self.inner.members();
            if !members.producers.insert(group.to_owned()) {
                return Err(Error::DuplicateGroup {
                    kind: "producer",
                    group: group.to_owned(),
                });
            }
            members.producer_handles.insert(group.to_owned(), handle);
        }
        debug!(client_id = %self.inner.client_id, group, "producer with request handler registered");
        self.send_heartbeat_now().await;
        Ok(())
    }

    /// The request handler of producer `group`, if it registered one.
    pub fn producer_handle(&self, group: &str) -> Option<Arc<dyn ProducerHandle>> {
        self.inner.members().producer_handles.get(group).cloned()
    }

    /// Unregisters a producer group (and its request handler) and sends
    /// UNREGISTER_CLIENT for it to every known broker address (errors
    /// logged). Unknown groups are ignored.
    pub async fn unregister_producer(&self, group: &str) {
        let (removed, handle) = {
            let mut members = self.inner.members();
            (
                members.producers.remove(group),
                members.producer_handles.remove(group),
            )
        };
        // Dropped here, after the lock.
        drop(handle);
        if removed {
            self.unregister_client(Some(group), None).await;
        }
    }

    /// Registers a consumer under `group` and sends a heartbeat at once
    /// (errors logged). Broker → client requests naming `group` are routed
    /// to `consumer`.
    ///
    /// # Errors
    ///
    /// As [`register_producer`](ClientInstance::register_producer).
    pub async fn register_consumer(
        &self,
        group: &str,
        consumer: Arc<dyn ConsumerHandle>,
    ) -> Result<()> {
        self.check_open()?;
        {
            let mut members = self.inner.members();
            if members.consumers.contains_key(group) {
                return Err(Error::DuplicateGroup {
                    kind: "consumer",
                    group: group.to_owned(),
                });
            }
            members.consumers.insert(group.to_owned(), consumer);
        }
        debug!(client_id = %self.inner.client_id, group, "consumer registered");
        self.send_heartbeat_now().await;
        Ok(())
    }

    /// Unregisters the consumer of `group` and sends UNREGISTER_CLIENT for
    /// it to every known broker address (errors logged).
    pub async fn unregister_consumer(&self, group: &str) {
        let removed = self.inner.members().consumers.remove(group);
        // Dropped here, after the lock: a handle's `Drop` may call back.
        if removed.is_some() {
            drop(removed);
            self.unregister_client(None, Some(group)).await;
        }
    }

    /// The registered consumers (a snapshot).
    pub(crate) fn consumers(&self) -> Vec<Arc<dyn ConsumerHandle>> {
        self.inner.members().consumers.values().cloned().collect()
    }

    /// For a consumer dropped without shutdown: runs
    /// [`unregister_consumer`](ClientInstance::unregister_consumer) for
    /// `group`, then [`release`](ClientInstance::release), in a task on the
    /// current tokio runtime. Outside a runtime (e.g. dropped after it
    /// ended) nothing is done: the I/O has nowhere to run.
    pub fn spawn_unregister_consumer_and_release(&self, group: &str) {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let instance = self.clone();
            let group = group.to_owned();
            rt.spawn(async move {
                instance.unregister_consumer(&group).await;
                instance.release().await;
            });
        }
    }

    /// The consumer registered under `group`.
    pub fn consumer(&self, group: &str) -> Option<Arc<dyn ConsumerHandle>> {
        self.inner.members().consumers.get(group).cloned()
    }
}
