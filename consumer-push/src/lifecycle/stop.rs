//! The push consumer's shutdown steps over the brokers (Java
//! `DefaultMQPushConsumerImpl.shutdown`).

use std::time::Duration;

use rmq_offset_store::PersistMode;
use tracing::{info, warn};

use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::message_trace;

/// After the shutdown await timeout, how long abandoned tasks get to stop.
const ABORT_GRACE: Duration = Duration::from_secs(5);

/// The consumer's own shutdown steps (run once, by
/// [`ConsumerCore::shutdown`], which then unregisters and releases).
pub(crate) async fn stop(inner: &Inner) -> Result<()> {
    let group = inner.core.group();
    info!(group, "push consumer shutting down");
    // 1. No more rebalances, pulls or queued consumes.
    inner.stop_pull.cancel();
    inner.stop_consume.cancel();
    // 2. Listener calls in flight finish, bounded.
    let wait = inner.config.shutdown_await_timeout;
    if !inner.core.close_and_wait(wait).await {
        warn!(
            group,
            timeout = ?wait,
            "listener calls still running after the shutdown await timeout; abandoning them"
        );
        inner.core.cancel().cancel();
        if !inner.core.close_and_wait(ABORT_GRACE).await {
            warn!(group, "some consumer tasks did not stop");
        }
    }
    inner.core.cancel().cancel();
    message_trace::shutdown(inner).await;
    // 3. Persist every offset, waiting for the broker; then (orderly)
    // release the queue locks, so the next owner reads these offsets.
    let mqs = inner.queues.assigned(None);
    let persisted = inner
        .core
        .offset_store()
        .persist_all(&mqs, PersistMode::Sync)
        .await;
    for mq in &mqs {
        inner.queues.detach(mq, None);
    }
    if let Some(locks) = &inner.locks {
        locks.unlock_all(false).await;
    }
    info!(group, "push consumer stopped; unregistering");
    persisted.map_err(Error::from)
}
