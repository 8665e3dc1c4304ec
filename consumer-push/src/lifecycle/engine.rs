//! The remoting engines' [`PushEngine`]: the guard of [`Inner`].

use futures::future::BoxFuture;
use rmq_client_core::ClientInstance;
use rmq_consumer_base::{DropGuard, Guarded, Health};
use tokio_util::sync::CancellationToken;

use super::stop::stop;
use crate::config::PushConsumerConfig;
use crate::engine::PushEngine;
use crate::error::Result;
use crate::inner::Inner;
use crate::inspect::QueueSnapshot;

impl PushEngine for DropGuard<Inner> {
    fn config(&self) -> &PushConsumerConfig {
        &self.inner().config
    }

    fn group(&self) -> &str {
        self.inner().core().group()
    }

    fn client_instance(&self) -> Option<&ClientInstance> {
        Some(self.inner().core().instance())
    }

    fn client_id(&self) -> &str {
        self.inner().core().instance().client_id()
    }

    fn is_closed(&self) -> bool {
        self.inner().core().is_closed()
    }

    fn health(&self) -> &Health {
        self.inner().core().health()
    }

    fn inspect(&self) -> Vec<QueueSnapshot> {
        self.inner().inspect()
    }

    fn queue_count(&self) -> usize {
        self.inner().queues.len()
    }

    fn over_proxy(&self) -> bool {
        false
    }

    fn stop_consume_token(&self) -> CancellationToken {
        self.inner().stop_consume.clone()
    }

    fn rebalance_now(&self) {
        self.inner().trigger.notify();
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<()>> {
        let inner = self.inner();
        Box::pin(inner.core.shutdown(stop(inner)))
    }
}
