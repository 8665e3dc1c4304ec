//! [`SimpleEngine`]: what a [`SimpleConsumer`](crate::SimpleConsumer)
//! handle needs from the engine it was started on: the wire calls (a
//! [`SimpleTransport`]) and the consumer's state and lifecycle. The
//! remoting pop engine's guard and the gRPC engine's guard implement it; a
//! new transport is one more implementation, no match arm in the handle.

use std::sync::MutexGuard;

use futures::future::BoxFuture;
use rmq_consumer_base::Subscription;
use rmq_protocol::namespace::Namespace;
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;

use crate::error::{Error, Result};
use crate::simple::config::SimpleConsumerConfig;
use crate::simple::transport::SimpleTransport;

static NO_NAMESPACE: Namespace = Namespace::none();

/// A started simple consumer, as its handles see it. Dropping the last
/// reference stops it in the background.
pub(crate) trait SimpleEngine: Send + Sync + 'static {
    /// Receive, ack and change-invisible calls.
    fn transport(&self) -> &dyn SimpleTransport;

    /// The consumer's settings.
    fn config(&self) -> &SimpleConsumerConfig;

    /// The consumer group.
    fn group(&self) -> &str;

    /// This client's id in the group.
    fn client_id(&self) -> &str;

    /// The subscriptions (their topics in the [`namespace`](Self::namespace)).
    fn subs(&self) -> MutexGuard<'_, Vec<Subscription>>;

    /// The namespace the topics and the group are wrapped into on the
    /// brokers; none through a proxy, which is told it instead.
    fn namespace(&self) -> &Namespace {
        &NO_NAMESPACE
    }

    /// Cancelled when the consumer shuts down (receives in flight end).
    fn closing(&self) -> &CancellationToken;

    /// Held by an ack or invisible-time change while it runs: shutdown
    /// waits for those (bounded) before it closes the connections.
    fn track(&self) -> TaskTrackerToken;

    /// Whether the consumer was shut down.
    fn is_shutdown(&self) -> bool;

    /// Adds or replaces a subscription and checks it with the server.
    fn subscribe(&self, sub: Subscription) -> BoxFuture<'_, Result<()>>;

    /// Stops the consumer (at most once; later calls answer `Ok`).
    fn shutdown(&self) -> BoxFuture<'_, Result<()>>;

    /// `Ok` while the consumer runs.
    ///
    /// # Errors
    ///
    /// [`Error::Shutdown`].
    fn check_open(&self) -> Result<()> {
        if self.is_shutdown() {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }
}
