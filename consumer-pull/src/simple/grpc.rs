//! The simple consumer over the RocketMQ 5.x proxy ([`rmq_grpc::Session`]):
//! chosen by [`SimpleConsumerBuilder::endpoint`](crate::SimpleConsumerBuilder::endpoint),
//! over the gRPC engine ([`rmq_consumer_base::engine::grpc`]).
//!
//! As the Java gRPC client (`SimpleConsumerImpl`): the session's settings
//! are a `SIMPLE_CONSUMER` of the group with its subscriptions; a receive
//! takes the next readable queue of the topic's route (`QueryRoute`, master
//! brokers) and long-polls `ReceiveMessage` there (no attempt id); acks are
//! `AckMessage` (one request per topic), a longer hide is
//! `ChangeInvisibleDuration`.
//! The proxy counts the deliveries and moves a message to `%DLQ%<group>`
//! after the group's retry limit. It refuses an invisible time below its
//! `minInvisibleTimeMillsForRecv` (10 s by default) with
//! `ILLEGAL_INVISIBLE_TIME`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_client_core::ClientConfig;
use rmq_consumer_base::Subscription;
use rmq_consumer_base::engine::grpc::{
    self as engine, ConsumerSession, Hiding, ReadableQueues, ReceiveSpec, Received, start_session,
    subscription_entries,
};
use rmq_grpc::{Session, proto};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tracing::{info, warn};

use crate::error::{Error, Result};
use crate::simple::config::SimpleConsumerConfig;
use crate::simple::engine::SimpleEngine;
use crate::simple::message::{GrpcHandle, ReceiptHandle, ReceivedMessage};
use crate::simple::subscriptions::Subscriptions;
use crate::simple::transport::{ReceiveRequest, SimpleTransport};

/// How long shutdown waits for the acks and invisible-time changes in
/// flight.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// The gRPC state of a simple consumer.
pub(crate) struct GrpcInner {
    config: SimpleConsumerConfig,
    session: Session,
    group: String,
    subscriptions: Subscriptions,
    queues: ReadableQueues,
    next_queue: AtomicUsize,
    cancel: CancellationToken,
    /// The acks and changes in flight.
    calls: TaskTracker,
}

/// Stops the gRPC session in the background when the last handle goes.
pub(crate) struct GrpcGuard(Arc<GrpcInner>);

impl Drop for GrpcGuard {
    fn drop(&mut self) {
        if self.0.cancel.is_cancelled() {
            return;
        }
        let inner = self.0.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = inner.stop().await;
            });
        } else {
            inner.cancel.cancel();
        }
    }
}

impl GrpcInner {
    /// Starts the session with the proxy at `endpoint`; answers its engine
    /// (stopped when the last reference goes).
    pub(crate) async fn start(
        config: SimpleConsumerConfig,
        endpoint: &str,
        client: &ClientConfig,
    ) -> Result<Arc<dyn SimpleEngine>> {
        let group = config.options.group().to_owned();
        let consumer = ConsumerSession {
            client_type: proto::ClientType::SimpleConsumer,
            group: &group,
            subs: &config.subscriptions,
            fifo: false,
            long_polling: config.await_duration,
        };
        let session = start_session(endpoint, client, consumer).await?;
        info!(
            group,
            endpoint,
            client_id = session.client_id(),
            "simple consumer started (gRPC)"
        );
        let inner = GrpcInner {
            subscriptions: Subscriptions::new(config.subscriptions.clone()),
            config,
            session,
            group,
            queues: ReadableQueues::new(),
            next_queue: AtomicUsize::new(0),
            cancel: CancellationToken::new(),
            calls: TaskTracker::new(),
        };
        Ok(Arc::new(GrpcGuard(Arc::new(inner))))
    }

    /// Adds or replaces a subscription and sends the new settings.
    async fn subscribe(&self, sub: Subscription) -> Result<()> {
        let topic = self.subscriptions.add(sub)?;
        let entries = subscription_entries(&self.subscriptions.lock());
        self.session
            .update_pub_sub(rmq_grpc::consumer_pub_sub(
                &self.group,
                entries,
                false,
                self.config.await_duration,
            ))
            .await;
        self.readable_queues(&topic).await.map(|_| ())
    }

    /// The readable queues of master brokers of `topic` (cached).
    async fn readable_queues(&self, topic: &str) -> Result<Arc<Vec<proto::MessageQueue>>> {
        let queues = self.queues.of(&self.session, topic).await?;
        if queues.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "topic {topic} has no readable queue at the proxy"
            )));
        }
        Ok(queues)
    }

    async fn receive(&self, request: ReceiveRequest<'_>) -> Result<Vec<ReceivedMessage>> {
        let queues = self.readable_queues(request.topic).await?;
        let i = self.next_queue.fetch_add(1, Ordering::Relaxed) % queues.len().max(1);
        let Some(queue) = queues.get(i) else {
            return Ok(Vec::new());
        };
        let filter = engine::filter_expression(request.filter);
        let spec = ReceiveSpec {
            queue,
            filter: &filter,
            batch: request.max,
            hiding: Hiding::For(request.invisible),
            wait: request.wait,
        };
        let received = engine::receive(&self.session, &self.group, spec, None).await?;
        Ok(received_messages(received.messages, request.invisible))
    }

    async fn ack(&self, handles: &[&ReceiptHandle]) -> Result<()> {
        let handles = handles
            .iter()
            .map(|h| h.as_grpc())
            .collect::<Result<Vec<&GrpcHandle>>>()?;
        let round = engine::ack_round(&self.session, &self.group, handles).await;
        match round.failed.into_iter().next() {
            Some(failure) => Err(Error::from(failure.error)),
            None => Ok(()),
        }
    }

    async fn change(&self, handle: &ReceiptHandle, invisible: Duration) -> Result<ReceiptHandle> {
        let g = handle.as_grpc()?;
        let renewed = engine::change_invisible(&self.session, &self.group, g, invisible).await?;
        Ok(ReceiptHandle::grpc(GrpcHandle {
            handle: renewed,
            invisible_ms: millis(invisible),
            visible_at_ms: now_ms().saturating_add(millis(invisible)),
            ..g.clone()
        }))
    }

    /// The consumer's own shutdown steps: receives in flight end, acks and
    /// changes in flight finish (bounded), the session ends.
    async fn stop(&self) -> Result<()> {
        self.cancel.cancel();
        self.calls.close();
        if tokio::time::timeout(SHUTDOWN_WAIT, self.calls.wait())
            .await
            .is_err()
        {
            warn!(group = %self.group, "acks still running after {SHUTDOWN_WAIT:?}; shutting down anyway (their messages come back)");
        }
        self.session.shutdown().await;
        info!(group = %self.group, "simple consumer shut down (gRPC)");
        Ok(())
    }
}

/// Received messages as [`ReceivedMessage`]s, hidden for `invisible` from
/// now.
fn received_messages(received: Vec<Received>, invisible: Duration) -> Vec<ReceivedMessage> {
    let invisible_ms = millis(invisible);
    let visible_at_ms = now_ms().saturating_add(invisible_ms);
    received
        .into_iter()
        .map(|Received { msg, receipt }| {
            let handle = ReceiptHandle::grpc(GrpcHandle {
                topic: msg.topic.clone(),
                message_id: msg.msg_id.clone(),
                handle: receipt.receipt_handle,
                broker_name: msg.broker_name.clone(),
                invisible_ms,
                visible_at_ms,
            });
            ReceivedMessage::new(msg, handle)
        })
        .collect()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn now_ms() -> u64 {
    u64::try_from(rmq_client_core::now_ms()).unwrap_or(0)
}

impl SimpleTransport for GrpcInner {
    fn receive<'a>(
        &'a self,
        request: ReceiveRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<ReceivedMessage>>> {
        Box::pin(GrpcInner::receive(self, request))
    }

    fn ack<'a>(&'a self, handles: &'a [&'a ReceiptHandle]) -> BoxFuture<'a, Result<()>> {
        Box::pin(GrpcInner::ack(self, handles))
    }

    fn change_invisible<'a>(
        &'a self,
        handle: &'a ReceiptHandle,
        invisible: Duration,
    ) -> BoxFuture<'a, Result<ReceiptHandle>> {
        Box::pin(self.change(handle, invisible))
    }
}

impl SimpleEngine for GrpcGuard {
    fn transport(&self) -> &dyn SimpleTransport {
        &*self.0
    }

    fn config(&self) -> &SimpleConsumerConfig {
        &self.0.config
    }

    fn group(&self) -> &str {
        &self.0.group
    }

    fn client_id(&self) -> &str {
        self.0.session.client_id()
    }

    fn subs(&self) -> MutexGuard<'_, Vec<Subscription>> {
        self.0.subscriptions.lock()
    }

    fn closing(&self) -> &CancellationToken {
        &self.0.cancel
    }

    fn track(&self) -> TaskTrackerToken {
        self.0.calls.token()
    }

    fn is_shutdown(&self) -> bool {
        self.0.cancel.is_cancelled()
    }

    fn subscribe(&self, sub: Subscription) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.0.subscribe(sub))
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async {
            if self.0.cancel.is_cancelled() {
                return Ok(());
            }
            self.0.stop().await
        })
    }
}
