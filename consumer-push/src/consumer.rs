//! [`PushConsumer`]: the running push consumer's handle.

use std::fmt;
use std::sync::Arc;

use rmq_consumer_base::DropGuard;

use crate::builder::PushConsumerBuilder;
use crate::config::PushConsumerConfig;
use crate::inner::Inner;
use crate::inspect::QueueSnapshot;

/// A running push consumer: a cheap-to-clone handle.
///
/// Created by [`PushConsumerBuilder::start`]. Background work (rebalance,
/// one pull loop per assigned queue, listener calls, offset persistence)
/// runs on the tokio runtime until [`shutdown`](PushConsumer::shutdown).
///
/// Dropping the last handle without `shutdown` cancels every task at once
/// (best effort: listener calls in flight are dropped, offsets are not
/// persisted — consumed messages since the last persist, at most 5 s, are
/// delivered again to the next consumer) and unregisters the consumer in a
/// last background task.
#[derive(Clone)]
#[must_use = "dropping the last PushConsumer handle stops consuming; call shutdown().await"]
pub struct PushConsumer {
    guard: Arc<DropGuard<Inner>>,
}

impl fmt::Debug for PushConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushConsumer")
            .field("group", &self.group())
            .field("client_id", &self.client_id())
            .field("queues", &self.inner().queues.len())
            .field("shut_down", &self.is_shutdown())
            .finish()
    }
}

rmq_consumer_base::handle_getters!(PushConsumer, Inner, PushConsumerConfig);

impl PushConsumer {
    /// A builder with the Java client's defaults.
    pub fn builder() -> PushConsumerBuilder {
        PushConsumerBuilder::default()
    }

    /// A snapshot of every assigned queue: held offsets, counts, bytes,
    /// listener calls in flight, committed offset. Sorted by queue.
    pub fn inspect(&self) -> Vec<QueueSnapshot> {
        self.inner().inspect()
    }

    /// Cancelled when the consumer starts shutting down (or was dropped).
    pub(crate) fn stop_consume_token(&self) -> tokio_util::sync::CancellationToken {
        self.inner().stop_consume.clone()
    }

    /// Asks for a rebalance now (it runs at most once a second).
    pub fn rebalance_now(&self) {
        self.inner().trigger.notify();
    }

    /// Stops the consumer: stops rebalancing and pulling; lets listener
    /// calls in flight finish (up to
    /// [`shutdown_await_timeout`](PushConsumerConfig::shutdown_await_timeout),
    /// then drops them: their messages are delivered again later); persists
    /// every offset (waiting for the broker); unregisters the consumer
    /// (UNREGISTER_CLIENT) and releases the client instance. Messages pulled
    /// but not consumed yet stay uncommitted and are delivered again to the
    /// group. When it returns, no task of this consumer is running.
    ///
    /// Idempotent: later (or concurrent) calls return `Ok(())` once the
    /// first is done.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`](crate::Error::OffsetStore) when some offsets could not be persisted
    /// (everything else was still shut down); the next consumer then
    /// starts from the previously stored offsets (duplicates, never loss).
    pub async fn shutdown(&self) -> rmq_error::Result<()> {
        let inner = self.inner();
        inner.core.shutdown(inner.stop()).await.map_err(Into::into)
    }
}
