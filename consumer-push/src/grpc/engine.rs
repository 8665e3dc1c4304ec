//! The gRPC engine's [`PushEngine`]: the guard of [`GrpcInner`].

use futures::future::BoxFuture;
use rmq_client_core::ClientInstance;
use rmq_consumer_base::Health;
use tokio_util::sync::CancellationToken;

use super::state::GrpcGuard;
use crate::config::PushConsumerConfig;
use crate::engine::PushEngine;
use crate::error::Result;
use crate::inspect::QueueSnapshot;

impl PushEngine for GrpcGuard {
    fn config(&self) -> &PushConsumerConfig {
        &self.inner().config
    }

    fn group(&self) -> &str {
        self.inner().group()
    }

    fn client_instance(&self) -> Option<&ClientInstance> {
        None
    }

    fn client_id(&self) -> &str {
        self.inner().session.client_id()
    }

    fn is_closed(&self) -> bool {
        self.inner().is_closed()
    }

    fn health(&self) -> &Health {
        &self.inner().health
    }

    fn inspect(&self) -> Vec<QueueSnapshot> {
        self.inner().inspect()
    }

    fn queue_count(&self) -> usize {
        self.inner().queue_count()
    }

    fn over_proxy(&self) -> bool {
        true
    }

    fn stop_consume_token(&self) -> CancellationToken {
        self.inner().stop_consume.clone()
    }

    fn rebalance_now(&self) {
        self.inner().trigger.notify_one();
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.inner().shutdown())
    }
}
