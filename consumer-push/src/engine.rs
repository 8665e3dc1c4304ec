//! [`PushEngine`]: what the [`PushConsumer`](crate::PushConsumer) handle
//! asks of the engine it runs on, whatever the transport.
//!
//! Implemented by the remoting engines' guard (pull and pop share
//! [`Inner`](crate::inner::Inner), in `lifecycle/engine.rs`) and by the
//! gRPC engine's guard (`grpc/engine.rs`). Dropping the last reference
//! drops the guard, which cancels the consumer's tasks.

use futures::future::BoxFuture;
use rmq_client_core::ClientInstance;
use rmq_consumer_base::Health;
use tokio_util::sync::CancellationToken;

use crate::config::PushConsumerConfig;
use crate::error::Result;
use crate::inspect::QueueSnapshot;

/// One running push consumer, seen from its handle.
pub(crate) trait PushEngine: Send + Sync + 'static {
    /// The consumer's settings.
    fn config(&self) -> &PushConsumerConfig;
    /// The consumer group.
    fn group(&self) -> &str;
    /// The client instance; `None` over the proxy.
    fn client_instance(&self) -> Option<&ClientInstance>;
    /// This client's id in the group.
    fn client_id(&self) -> &str;
    /// Whether the consumer shut down (or is shutting down).
    fn is_closed(&self) -> bool;
    /// State and events.
    fn health(&self) -> &Health;
    /// A snapshot of every assigned queue, sorted.
    fn inspect(&self) -> Vec<QueueSnapshot>;
    /// How many queues (or proxy assignments) are assigned.
    fn queue_count(&self) -> usize;
    /// Whether the consumer receives through the proxy.
    fn over_proxy(&self) -> bool;
    /// Cancelled when the consumer starts shutting down.
    fn stop_consume_token(&self) -> CancellationToken;
    /// Asks for a rebalance (or new assignments) now.
    fn rebalance_now(&self);
    /// The shutdown sequence; idempotent.
    fn shutdown(&self) -> BoxFuture<'_, Result<()>>;
}
