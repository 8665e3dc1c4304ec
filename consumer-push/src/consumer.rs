//! [`PushConsumer`]: the running push consumer's handle.

use std::fmt;
use std::sync::Arc;

use futures::Stream;
use rmq_client_core::ClientInstance;
use rmq_consumer_base::{ConsumerEvent, ConsumerState};
use tokio::sync::watch;

use crate::builder::PushConsumerBuilder;
use crate::config::PushConsumerConfig;
use crate::engine::PushEngine;
use crate::inspect::QueueSnapshot;

/// A running push consumer: a cheap-to-clone handle.
///
/// Created by [`PushConsumerBuilder::start`]. Background work (rebalance,
/// one pull loop per assigned queue, listener calls, offset persistence)
/// runs on the tokio runtime until [`shutdown`](PushConsumer::shutdown).
/// Built with [`endpoint`](PushConsumerBuilder::endpoint), it receives
/// through the RocketMQ 5.x proxy instead (assignments, receive loops,
/// listener calls, acks), with the same API.
///
/// Dropping the last handle without `shutdown` cancels every task at once
/// (best effort: listener calls in flight are dropped, offsets are not
/// persisted — consumed messages since the last persist, at most 5 s, are
/// delivered again to the next consumer) and unregisters the consumer in a
/// last background task.
#[derive(Clone)]
#[must_use = "dropping the last PushConsumer handle stops consuming; call shutdown().await"]
pub struct PushConsumer {
    /// The engine it runs on (remoting pull, pop or gRPC); the last handle
    /// dropped drops its guard.
    engine: Arc<dyn PushEngine>,
}

impl fmt::Debug for PushConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushConsumer")
            .field("group", &self.group())
            .field("client_id", &self.client_id())
            .field("grpc", &self.engine.over_proxy())
            .field("queues", &self.engine.queue_count())
            .field("shut_down", &self.is_shutdown())
            .finish()
    }
}

impl PushConsumer {
    /// A builder with the Java client's defaults.
    pub fn builder() -> PushConsumerBuilder {
        PushConsumerBuilder::default()
    }

    pub(crate) fn new(engine: Arc<dyn PushEngine>) -> Self {
        PushConsumer { engine }
    }

    /// The consumer's settings.
    pub fn config(&self) -> &PushConsumerConfig {
        self.engine.config()
    }

    /// The consumer group.
    pub fn group(&self) -> &str {
        self.engine.group()
    }

    /// The client instance the consumer runs on; `None` for a consumer of
    /// the proxy ([`endpoint`](PushConsumerBuilder::endpoint)), which has
    /// none.
    pub fn client_instance(&self) -> Option<&ClientInstance> {
        self.engine.client_instance()
    }

    /// This client's id in the group (`ip@instance`; over gRPC the id the
    /// proxy knows the session by).
    pub fn client_id(&self) -> &str {
        self.engine.client_id()
    }

    /// Whether `shutdown` ran (or the consumer was dropped).
    pub fn is_shutdown(&self) -> bool {
        self.engine.is_closed()
    }

    fn health(&self) -> &rmq_consumer_base::Health {
        self.engine.health()
    }

    /// The consumer's state now: running, running without a name server,
    /// shutting down, shut down.
    pub fn state(&self) -> ConsumerState {
        self.health().state()
    }

    /// A `watch` receiver of the [`state`](Self::state).
    pub fn watch_state(&self) -> watch::Receiver<ConsumerState> {
        self.health().watch_state()
    }

    /// The consumer's events: the recent ones (up to 64, so the start
    /// events too), then each as it happens — started, name server
    /// unreachable / reachable again, topic not found, queues assigned /
    /// revoked, shut down. The stream ends when the consumer's last handle
    /// is gone.
    pub fn events(&self) -> impl Stream<Item = ConsumerEvent> + Send + Unpin + 'static {
        self.health().events()
    }

    /// A snapshot of every assigned queue: held offsets, counts, bytes,
    /// listener calls in flight, committed offset. Sorted by queue. Over
    /// gRPC a queue is an assignment of the proxy (queue id −1: every
    /// queue of a broker), without offsets.
    pub fn inspect(&self) -> Vec<QueueSnapshot> {
        self.engine.inspect()
    }

    /// Cancelled when the consumer starts shutting down (or was dropped).
    pub(crate) fn stop_consume_token(&self) -> tokio_util::sync::CancellationToken {
        self.engine.stop_consume_token()
    }

    /// Asks for a rebalance now (it runs at most once a second); over gRPC
    /// the assignments are queried again.
    pub fn rebalance_now(&self) {
        self.engine.rebalance_now()
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
    /// Over gRPC: stops receiving, lets listener calls in flight finish
    /// (bounded the same way), acks what they consumed, then ends the
    /// session (`NotifyClientTermination`: the proxy makes the messages
    /// received but not consumed visible to the group again).
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
        self.engine.shutdown().await.map_err(Into::into)
    }
}
