//! [`Producer`]: the running producer handle, its state and lifecycle; the
//! send methods are in `send` (single messages) and `batch` (batches and
//! auto-batching).

mod batch;
mod single;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmq_client_core::{ClientInstance, SendResult};
use rmq_protocol::MessageQueue;
use rmq_protocol::namespace::Namespace;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use crate::batching::Accumulator;
use crate::builder::ProducerBuilder;
use crate::config::ProducerConfig;
use crate::error::{Error, Result, Unsent};
use crate::grpc::GrpcSender;
use crate::health::{Health, ProducerEvent, ProducerState};
use crate::send::{Outcome, Sender};
use crate::telemetry::SendMetrics;

/// A running RocketMQ producer: a cheap-to-clone handle; every clone sends
/// through the same client instance, queue counter and fault table.
///
/// Many tasks may send at once on one producer: no lock is held across an
/// await on the send path. Call [`shutdown`](Producer::shutdown) once when
/// done.
///
/// ```no_run
/// # async fn demo() -> rmq_error::Result<()> {
/// use rmq_producer::{Message, Producer};
///
/// let producer = Producer::builder().group("orders-producer").start().await?;
/// let sent = producer
///     .send(Message::new("orders", "hello").with_tags("created").with_keys(["order-42"]))
///     .await?;
/// println!("{} stored at {} offset {}", sent.msg_id, sent.message_queue, sent.queue_offset);
/// producer.shutdown().await?;
/// # Ok(()) }
/// ```
///
/// # Cancel safety
///
/// Dropping a send future before it resolves abandons the send: the message
/// may or may not have been stored.
#[derive(Debug, Clone)]
pub struct Producer {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) backend: Backend,
    shut_down: AtomicBool,
    /// Tasks of [`Producer::send_with_callback`],
    /// [`Producer::request_with_callback`] and of batch flushes.
    pub(crate) tasks: TaskTracker,
    /// The batches being filled, with [`ProducerBuilder::batching`].
    batcher: Option<Arc<Accumulator>>,
    /// Metric handles and the `send` span.
    telemetry: SendMetrics,
    health: Arc<Health>,
}

/// The transport a producer sends through.
#[derive(Debug)]
pub(crate) enum Backend {
    /// Name servers and brokers (the remoting protocol).
    Remoting(Sender),
    /// A RocketMQ 5.x proxy (gRPC).
    Grpc(GrpcSender),
}

impl Backend {
    fn config(&self) -> &ProducerConfig {
        match self {
            Backend::Remoting(s) => &s.config,
            Backend::Grpc(g) => &g.config,
        }
    }
}

impl Inner {
    pub(crate) fn new(backend: Backend) -> Self {
        let health = match &backend {
            Backend::Remoting(sender) => sender.health.clone(),
            Backend::Grpc(_) => Health::started(None, None),
        };
        Inner {
            backend,
            shut_down: AtomicBool::new(false),
            tasks: TaskTracker::new(),
            batcher: None,
            telemetry: SendMetrics::default(),
            health,
        }
    }

    /// With auto-batching (remoting only).
    pub(crate) fn with_batcher(mut self, batcher: Option<Accumulator>) -> Self {
        self.batcher = batcher.map(Arc::new);
        self
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.health.shut_down();
        if self.shut_down.load(Ordering::Acquire) {
            return;
        }
        // Best effort: the last handle went away without `shutdown()`.
        tracing::warn!(
            group = %self.backend.config().group,
            "producer dropped without shutdown(); unregistering in the background"
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            match &self.backend {
                Backend::Remoting(sender) => {
                    let instance = sender.instance.clone();
                    let group = sender.config.group.clone();
                    rt.spawn(async move {
                        instance.unregister_producer(&group).await;
                        instance.release().await;
                    });
                }
                Backend::Grpc(g) => {
                    let session = g.session.clone();
                    rt.spawn(async move { session.shutdown().await });
                }
            }
        }
    }
}

impl Producer {
    /// A builder with the Java defaults.
    pub fn builder() -> ProducerBuilder {
        ProducerBuilder::default()
    }

    /// The producer's settings.
    pub fn config(&self) -> &ProducerConfig {
        self.inner.backend.config()
    }

    /// The producer's state now: [`ProducerState::Running`] until
    /// [`shutdown`](Self::shutdown).
    ///
    /// ```no_run
    /// # async fn demo(producer: rmq_producer::Producer) {
    /// use rmq_producer::ProducerState;
    /// assert_eq!(producer.state(), ProducerState::Running);
    /// # }
    /// ```
    pub fn state(&self) -> ProducerState {
        self.inner.health.state()
    }

    /// A receiver of the state (`changed().await` wakes on every change).
    pub fn watch_state(&self) -> tokio::sync::watch::Receiver<ProducerState> {
        self.inner.health.watch_state()
    }

    /// The producer's events: the recent ones (up to 64: `Started`, broker
    /// connections lost and restored, name servers unreachable and
    /// reachable again, topics not found), then every later one as it
    /// happens; a reader more than 256 events behind skips the oldest.
    /// Ends after [`ProducerEvent::ShutDown`] once every handle is gone.
    ///
    /// ```no_run
    /// # async fn demo(producer: rmq_producer::Producer) {
    /// use futures::StreamExt;
    /// use rmq_producer::ProducerEvent;
    ///
    /// let mut events = producer.events();
    /// tokio::spawn(async move {
    ///     while let Some(event) = events.next().await {
    ///         if let ProducerEvent::BrokerConnectionLost { addr, error } = &event {
    ///             eprintln!("broker {addr} unreachable: {error}");
    ///         }
    ///     }
    /// });
    /// # }
    /// ```
    pub fn events(&self) -> impl futures::Stream<Item = ProducerEvent> + Send + Unpin + 'static {
        self.inner.health.events()
    }

    /// The client instance this producer sends through (routes, client id);
    /// `None` for a producer of a proxy ([`ProducerBuilder::endpoint`]).
    pub fn client_instance(&self) -> Option<&ClientInstance> {
        match &self.inner.backend {
            Backend::Remoting(sender) => Some(&sender.instance),
            Backend::Grpc(_) => None,
        }
    }

    /// The client id: the client instance's, or the proxy session's.
    pub fn client_id(&self) -> &str {
        match &self.inner.backend {
            Backend::Remoting(sender) => sender.instance.client_id(),
            Backend::Grpc(g) => g.session.client_id(),
        }
    }

    /// The proxy session this producer sends through; `None` over remoting.
    pub(crate) fn grpc_session(&self) -> Option<&rmq_grpc::Session> {
        match &self.inner.backend {
            Backend::Remoting(_) => None,
            Backend::Grpc(g) => Some(&g.session),
        }
    }

    /// Whether this producer sends through a RocketMQ 5.x proxy (gRPC).
    pub fn is_grpc(&self) -> bool {
        matches!(self.inner.backend, Backend::Grpc(_))
    }

    /// Whether [`shutdown`](Producer::shutdown) was called.
    pub fn is_shutdown(&self) -> bool {
        self.inner.shut_down.load(Ordering::Acquire)
    }

    /// The queues a send to `topic` would choose from (Java
    /// `fetchPublishMessageQueues`), e.g. to pick one for
    /// [`send_to_queue`](Producer::send_to_queue). For a topic without a
    /// route these are the queues derived from `TBW102`.
    ///
    /// # Errors
    ///
    /// [`Error::Shutdown`], the route lookup's error, or [`Error::Timeout`]
    /// after the send timeout.
    pub async fn publish_queues(&self, topic: &str) -> rmq_error::Result<Vec<MessageQueue>> {
        self.publish_queues_detailed(topic)
            .await
            .map_err(Into::into)
    }

    async fn publish_queues_detailed(&self, topic: &str) -> Result<Vec<MessageQueue>> {
        self.check_running()?;
        let sender = match &self.inner.backend {
            Backend::Remoting(sender) => sender,
            Backend::Grpc(g) => return g.publish_queues(topic).await,
        };
        let deadline = Instant::now() + self.config().send_timeout;
        let ns = self.namespace();
        let publish = sender.publish_queues(&ns.wrap(topic), deadline).await?;
        Ok(publish
            .queues()
            .iter()
            .map(|q| ns.unwrap_queue(q))
            .collect())
    }

    /// The namespace names are wrapped into over the brokers (none
    /// through a proxy).
    pub(crate) fn namespace(&self) -> &Namespace {
        &self.config().namespace
    }

    pub(crate) fn check_running(&self) -> Result<()> {
        if self.is_shutdown() {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Stops the producer: refuses new sends, waits (up to the send
    /// timeout) for [`send_with_callback`](Producer::send_with_callback)
    /// sends, unregisters the group from the brokers and releases the
    /// client instance (the last user stops it). Idempotent; other handles
    /// see the producer shut down.
    ///
    /// Returns a `Result` like the consumers' `shutdown`, so one `?`
    /// handles every handle of an application.
    ///
    /// # Errors
    ///
    /// None today: every step is best effort (a callback send still
    /// running after the grace period is logged, the unregistering is
    /// oneway). Later and concurrent calls return `Ok(())`.
    pub async fn shutdown(&self) -> rmq_error::Result<()> {
        if self.inner.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if let Some(acc) = &self.inner.batcher {
            for batch in acc.take_all() {
                self.spawn_flush(batch);
            }
        }
        let tasks = &self.inner.tasks;
        tasks.close();
        let grace = self.config().send_timeout + Duration::from_secs(1);
        if tokio::time::timeout(grace, tasks.wait()).await.is_err() {
            tracing::warn!(
                pending = tasks.len(),
                "callback sends still running at shutdown"
            );
        }
        crate::message_trace::shutdown(&self.inner.backend).await;
        match &self.inner.backend {
            Backend::Remoting(sender) => {
                sender
                    .instance
                    .unregister_producer(&self.config().group)
                    .await;
                sender.instance.release().await;
            }
            Backend::Grpc(g) => g.session.shutdown().await,
        }
        self.inner.health.shut_down();
        tracing::info!(group = %self.config().group, "producer shut down");
        Ok(())
    }
}

/// What a send hands back to the application, out of the producer's
/// namespace (Java restores the topic of the message and of the send
/// result's queue).
pub(crate) trait LeaveNamespace {
    /// Takes the names out of `namespace`.
    fn leave_namespace(&mut self, namespace: &Namespace);
}

impl LeaveNamespace for () {
    fn leave_namespace(&mut self, _: &Namespace) {}
}

impl LeaveNamespace for SendResult {
    fn leave_namespace(&mut self, namespace: &Namespace) {
        namespace.unwrap_in_place(&mut self.message_queue.topic);
    }
}

impl LeaveNamespace for Unsent {
    fn leave_namespace(&mut self, namespace: &Namespace) {
        match self {
            Unsent::Message(m) => namespace.unwrap_in_place(&mut m.topic),
            Unsent::Batch(b) => {
                for m in b {
                    namespace.unwrap_in_place(&mut m.topic);
                }
            }
        }
    }
}

/// Wraps a failed outcome into [`Error::Send`] with the unsent message(s);
/// the result and the unsent messages leave `namespace`.
fn hand_back<T: LeaveNamespace>(
    namespace: &Namespace,
    mut outcome: Outcome<T>,
    mut unsent: Unsent,
) -> Result<T> {
    if !namespace.is_none() {
        if let Ok(r) = &mut outcome.result {
            r.leave_namespace(namespace);
        }
        unsent.leave_namespace(namespace);
    }
    outcome.result.map_err(|source| {
        let topic = match &unsent {
            Unsent::Message(m) => m.topic.clone(),
            Unsent::Batch(b) => b.first().map(|m| m.topic.clone()).unwrap_or_default(),
        };
        Error::Send {
            topic,
            attempts: outcome.attempts,
            source: Box::new(source),
            unsent,
        }
    })
}
