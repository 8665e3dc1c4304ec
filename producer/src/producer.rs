//! [`Producer`]: the running producer handle and its send methods.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmq_client_core::{ClientInstance, SendResult};
use rmq_protocol::{Message, MessageQueue};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use crate::batching::{Accumulator, Added, Entry};
use crate::builder::ProducerBuilder;
use crate::config::ProducerConfig;
use crate::error::{Error, InvalidMessage, Result, Unsent};
use crate::grpc::GrpcSender;
use crate::health::{Health, ProducerEvent, ProducerState};
use crate::prepare::{prepare_batch, prepare_message, stamp};
use crate::send::{Outcome, Sender};
use crate::telemetry::SendMetrics;
use tracing::Instrument;

/// A running RocketMQ producer: a cheap-to-clone handle; every clone sends
/// through the same client instance, queue counter and fault table.
///
/// Many tasks may send at once on one producer: no lock is held across an
/// await on the send path. Call [`shutdown`](Producer::shutdown) once when
/// done.
///
/// ```no_run
/// # async fn demo() -> Result<(), rmq_producer::Error> {
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
    backend: Backend,
    shut_down: AtomicBool,
    /// Tasks of [`Producer::send_with_callback`] and of batch flushes.
    tasks: TaskTracker,
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
        let health = Health::started(match &backend {
            Backend::Remoting(sender) => Some(&sender.instance),
            Backend::Grpc(_) => None,
        });
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
    /// connections lost and restored), then every later one as it
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
    pub async fn publish_queues(&self, topic: &str) -> Result<Vec<MessageQueue>> {
        self.check_running()?;
        let sender = match &self.inner.backend {
            Backend::Remoting(sender) => sender,
            Backend::Grpc(g) => return g.publish_queues(topic).await,
        };
        let deadline = Instant::now() + self.config().send_timeout;
        let publish = sender.publish_queues(topic, deadline).await?;
        Ok(publish.queues().to_vec())
    }

    fn check_running(&self) -> Result<()> {
        if self.is_shutdown() {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Sends one message and waits for the broker to store it (Java
    /// `send(msg)`): up to 1 + `retry_times_when_send_failed` attempts
    /// within the send timeout, on other brokers where possible.
    ///
    /// The message gets a `UNIQ_KEY` (its [`SendResult::msg_id`]) unless it
    /// has one, and `WAIT=true` unless `WAIT` is set. Bodies of at least
    /// `compress_over` bytes are compressed.
    ///
    /// # Errors
    ///
    /// An [`Error::Send`] handing the message back: invalid message, no
    /// route, the last attempt's error, or [`Error::Timeout`].
    pub async fn send(&self, msg: Message) -> Result<SendResult> {
        let retries = self.config().retry_times_when_send_failed;
        self.send_retrying(msg, retries).await
    }

    async fn send_retrying(&self, mut msg: Message, retries: u32) -> Result<SendResult> {
        if let (Some(acc), Backend::Remoting(_)) = (&self.inner.batcher, &self.inner.backend) {
            if acc.accepts(&msg, self.config()) && self.check_running().is_ok() {
                return self.send_batched(msg, acc).await;
            }
        }
        let trace_started = crate::trace::started(&self.inner.backend);
        let obs = self.inner.telemetry.start(&msg.topic, 1);
        let outcome = async {
            match (self.check_running(), &self.inner.backend) {
                (Err(e), _) => Outcome::failed(e),
                (Ok(()), Backend::Grpc(g)) => g.send(std::slice::from_mut(&mut msg)).await,
                (Ok(()), Backend::Remoting(sender)) => {
                    match prepare_message(&mut msg, self.config()) {
                        Err(e) => Outcome::failed(e),
                        Ok(prepared) => sender.send_with_retries(&prepared, retries).await,
                    }
                }
            }
        }
        .instrument(obs.span().clone())
        .await;
        obs.finish(&outcome);
        crate::trace::on_sent(&self.inner.backend, trace_started, &msg, &outcome);
        hand_back(outcome, Unsent::Message(Box::new(msg)))
    }

    /// Adds `msg` to its topic's pending batch and waits for that batch's
    /// answer (see [`crate::Batching`]).
    async fn send_batched(&self, mut msg: Message, acc: &Arc<Accumulator>) -> Result<SendResult> {
        if let Err(e) = crate::validate::check_message(&msg, self.config().max_message_size) {
            return hand_back(Outcome::failed(e.into()), Unsent::Message(Box::new(msg)));
        }
        stamp(&mut msg);
        let Some(permit) = acc.room(msg.body.len()).await else {
            return hand_back(
                Outcome::failed(Error::Shutdown),
                Unsent::Message(Box::new(msg)),
            );
        };
        let topic = msg.topic.clone();
        let (reply, answer) = tokio::sync::oneshot::channel();
        let (added, earlier) = acc.add(Entry {
            msg,
            reply,
            _permit: permit,
        });
        if let Some(batch) = earlier {
            self.spawn_flush(batch);
        }
        match added {
            Added::Flush(batch) => self.spawn_flush(batch),
            Added::StartTimer(key, generation) => {
                let producer = self.clone();
                let acc = acc.clone();
                self.inner.tasks.spawn(async move {
                    tokio::time::sleep(acc.config.linger).await;
                    let batch = acc.take(&key, generation);
                    producer.flush(batch).await;
                });
            }
            Added::Queued => {}
        }
        match answer.await {
            Ok((result, attempts, msg)) => {
                hand_back(Outcome { attempts, result }, Unsent::Message(Box::new(msg)))
            }
            // The flush task ended without answering (the runtime shut down).
            Err(_) => Err(Error::Send {
                topic,
                attempts: 0,
                source: Box::new(Error::Shutdown),
                unsent: Unsent::Batch(Vec::new()),
            }),
        }
    }

    fn spawn_flush(&self, batch: Vec<Entry>) {
        let producer = self.clone();
        self.inner
            .tasks
            .spawn(async move { producer.flush(batch).await });
    }

    /// Sends one pending batch (a lone message as a plain send) and answers
    /// each of its callers.
    async fn flush(&self, batch: Vec<Entry>) {
        let Backend::Remoting(sender) = &self.inner.backend else {
            return;
        };
        let retries = self.config().retry_times_when_send_failed;
        let (mut msgs, replies): (Vec<Message>, Vec<_>) = batch
            .into_iter()
            .map(|e| (e.msg, (e.reply, e._permit)))
            .unzip();
        let outcome = if let [only] = msgs.as_mut_slice() {
            match prepare_message(only, self.config()) {
                Err(e) => Outcome::failed(e),
                Ok(prepared) => sender.send_with_retries(&prepared, retries).await,
            }
        } else if msgs.is_empty() {
            return;
        } else {
            match prepare_batch(&mut msgs, self.config()) {
                Err(e) => Outcome::failed(e),
                Ok(prepared) => sender.send_with_retries(&prepared, retries).await,
            }
        };
        let attempts = outcome.attempts;
        let n = msgs.len();
        match outcome.result {
            Ok(sent) if n == 1 => {
                for ((reply, _permit), msg) in replies.into_iter().zip(msgs) {
                    let _ = reply.send((Ok(sent.clone()), attempts, msg));
                }
            }
            Ok(sent) => {
                let ids: Vec<String> = msgs
                    .iter()
                    .map(|m| m.unique_key().unwrap_or_default().to_owned())
                    .collect();
                let results = crate::batching::split_result(&sent, &ids);
                for (((reply, _permit), msg), r) in replies.into_iter().zip(msgs).zip(results) {
                    let _ = reply.send((Ok(r), attempts, msg));
                }
            }
            Err(e) => {
                let cause = Arc::new(e);
                for ((reply, _permit), msg) in replies.into_iter().zip(msgs) {
                    let e = Error::BatchFailed {
                        messages: n,
                        source: cause.clone(),
                    };
                    let _ = reply.send((Err(e), attempts, msg));
                }
            }
        }
    }

    /// Sends one message without waiting for the broker's answer (Java
    /// `sendOneway`): resolves once the request is written. One attempt, no
    /// retry; the outcome is unknown.
    ///
    /// # Errors
    ///
    /// An [`Error::Send`] handing the message back when it could not be
    /// written.
    pub async fn send_oneway(&self, mut msg: Message) -> Result<()> {
        let obs = self.inner.telemetry.start(&msg.topic, 1);
        let outcome = async {
            match (self.check_running(), &self.inner.backend) {
                (Err(e), _) => Outcome::failed(e),
                // The proxy has no oneway send: the answer is awaited and dropped.
                (Ok(()), Backend::Grpc(g)) => {
                    let sent = g.send(std::slice::from_mut(&mut msg)).await;
                    Outcome {
                        attempts: sent.attempts,
                        result: sent.result.map(|_| ()),
                    }
                }
                (Ok(()), Backend::Remoting(sender)) => {
                    match prepare_message(&mut msg, self.config()) {
                        Err(e) => Outcome::failed(e),
                        Ok(prepared) => sender.send_oneway(&prepared).await,
                    }
                }
            }
        }
        .instrument(obs.span().clone())
        .await;
        obs.finish(&outcome);
        hand_back(outcome, Unsent::Message(Box::new(msg)))
    }

    /// Sends one message to `queue` (Java `send(msg, mq)`): one attempt, no
    /// retry. `queue.topic` must be the message's topic.
    ///
    /// # Errors
    ///
    /// As [`send`](Producer::send), and [`InvalidMessage::QueueTopic`];
    /// [`Error::Unsupported`] for a producer of a proxy (it picks queues).
    pub async fn send_to_queue(
        &self,
        mut msg: Message,
        queue: &MessageQueue,
    ) -> Result<SendResult> {
        let trace_started = crate::trace::started(&self.inner.backend);
        let obs = self.inner.telemetry.start(&msg.topic, 1);
        let outcome = async {
            match self.check_running() {
                Err(e) => Outcome::failed(e),
                Ok(()) if queue.topic != msg.topic => Outcome::failed(
                    InvalidMessage::QueueTopic {
                        message_topic: msg.topic.clone(),
                        queue_topic: queue.topic.clone(),
                    }
                    .into(),
                ),
                Ok(()) => match &self.inner.backend {
                    Backend::Grpc(_) => Outcome::failed(unaimed()),
                    Backend::Remoting(sender) => match prepare_message(&mut msg, self.config()) {
                        Err(e) => Outcome::failed(e),
                        Ok(prepared) => {
                            let deadline = Instant::now() + self.config().send_timeout;
                            Outcome::once(sender.send_once(&prepared, queue, deadline).await)
                        }
                    },
                },
            }
        }
        .instrument(obs.span().clone())
        .await;
        obs.finish(&outcome);
        crate::trace::on_sent(&self.inner.backend, trace_started, &msg, &outcome);
        hand_back(outcome, Unsent::Message(Box::new(msg)))
    }

    /// Sends one message to the queue `select` picks from the topic's
    /// publish queues (Java `send(msg, selector, arg)`): one attempt, no
    /// retry, so that a key's messages never move to another queue.
    ///
    /// `select` returns an index into the queue list. For ordered sends use
    /// [`select_by_hash`](crate::select_by_hash) (Java
    /// `SelectMessageQueueByHash`):
    ///
    /// ```no_run
    /// # async fn demo(producer: rmq_producer::Producer) -> Result<(), rmq_producer::Error> {
    /// use rmq_producer::{Message, select_by_hash};
    ///
    /// let order_id = "order-42";
    /// producer.send_with_selector(Message::new("orders", "paid"), select_by_hash(order_id)).await?;
    /// producer.send_with_selector(Message::new("orders", "x"), |queues, _msg| queues.len() - 1).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`send`](Producer::send), and [`Error::BadQueueIndex`] for an index
    /// outside the list; [`Error::Unsupported`] for a producer of a proxy
    /// (it picks queues: use a message group for ordering).
    pub async fn send_with_selector<F>(&self, mut msg: Message, select: F) -> Result<SendResult>
    where
        F: FnOnce(&[MessageQueue], &Message) -> usize,
    {
        let trace_started = crate::trace::started(&self.inner.backend);
        let obs = self.inner.telemetry.start(&msg.topic, 1);
        let outcome = async {
            match (self.check_running(), &self.inner.backend) {
                (Err(e), _) => Outcome::failed(e),
                (Ok(()), Backend::Grpc(_)) => Outcome::failed(unaimed()),
                (Ok(()), Backend::Remoting(sender)) => {
                    match prepare_message(&mut msg, self.config()) {
                        Err(e) => Outcome::failed(e),
                        Ok(prepared) => {
                            let deadline = Instant::now() + self.config().send_timeout;
                            match sender.publish_queues(&msg.topic, deadline).await {
                                Err(e) => Outcome::failed(e),
                                Ok(publish) => {
                                    let queues = publish.queues();
                                    let index = select(queues, &msg);
                                    match queues.get(index) {
                                        None => Outcome::failed(Error::BadQueueIndex {
                                            index,
                                            len: queues.len(),
                                        }),
                                        Some(queue) => Outcome::once(
                                            sender.send_once(&prepared, queue, deadline).await,
                                        ),
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        .instrument(obs.span().clone())
        .await;
        obs.finish(&outcome);
        crate::trace::on_sent(&self.inner.backend, trace_started, &msg, &outcome);
        hand_back(outcome, Unsent::Message(Box::new(msg)))
    }

    /// Sends messages of one topic in one request (Java `send(Collection)`,
    /// SEND_BATCH_MESSAGE): stored contiguously in one queue. Retried like
    /// [`send`](Producer::send).
    ///
    /// Rules: at least one message, one topic (not a retry topic), no delay
    /// level, one `WAIT` value, every message valid, at most
    /// `max_message_size` bytes encoded. Bodies are not compressed. Each
    /// message gets its own `UNIQ_KEY`; [`SendResult::msg_id`] lists them in
    /// order, joined with `,`, and `queue_offset` is the first message's.
    ///
    /// # Errors
    ///
    /// An [`Error::Send`] handing the batch back.
    pub async fn send_batch(&self, mut msgs: Vec<Message>) -> Result<SendResult> {
        let retries = self.config().retry_times_when_send_failed;
        let obs = self
            .inner
            .telemetry
            .start(msgs.first().map_or("", |m| m.topic.as_str()), msgs.len());
        let outcome = async {
            match (self.check_running(), &self.inner.backend) {
                (Err(e), _) => Outcome::failed(e),
                (Ok(()), Backend::Grpc(g)) => g.send(&mut msgs).await,
                (Ok(()), Backend::Remoting(sender)) => {
                    match prepare_batch(&mut msgs, self.config()) {
                        Err(e) => Outcome::failed(e),
                        Ok(prepared) => sender.send_with_retries(&prepared, retries).await,
                    }
                }
            }
        }
        .instrument(obs.span().clone())
        .await;
        obs.finish(&outcome);
        hand_back(outcome, Unsent::Batch(msgs))
    }

    /// Sends in the background and calls `callback` with the result (Java
    /// `send(msg, SendCallback)`), retrying up to
    /// `retry_times_when_send_async_failed` times. Returns at once.
    /// [`shutdown`](Producer::shutdown) waits for these sends to finish.
    ///
    /// Must be called within a Tokio runtime. After shutdown the callback
    /// is called at once with [`Error::Shutdown`] (inside an
    /// [`Error::Send`]).
    pub fn send_with_callback<F>(&self, msg: Message, callback: F)
    where
        F: FnOnce(Result<SendResult>) + Send + 'static,
    {
        if self.is_shutdown() {
            callback(hand_back(
                Outcome::failed(Error::Shutdown),
                Unsent::Message(Box::new(msg)),
            ));
            return;
        }
        let producer = self.clone();
        let retries = self.config().retry_times_when_send_async_failed;
        self.inner.tasks.spawn(async move {
            let result = producer.send_retrying(msg, retries).await;
            callback(result);
        });
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
    pub async fn shutdown(&self) -> Result<()> {
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
        crate::trace::shutdown(&self.inner.backend).await;
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

/// A send aimed at a queue, through the proxy (which picks queues itself).
fn unaimed() -> Error {
    Error::TransportUnsupported(
        "the RocketMQ proxy picks the queue itself: a send through an endpoint cannot be aimed at a \
         queue; for ordering give the messages a message group (the __SHARDINGKEY property)"
            .into(),
    )
}

/// Wraps a failed outcome into [`Error::Send`] with the unsent message(s).
fn hand_back<T>(outcome: Outcome<T>, unsent: Unsent) -> Result<T> {
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
