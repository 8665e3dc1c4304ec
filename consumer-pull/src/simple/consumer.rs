//! [`SimpleConsumer`]: receive, ack, change the invisible time, a stream.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::Stream;
use rmq_consumer_base::{Expression, Subscription};

use crate::error::{Error, Result, unify};
use crate::simple::builder::SimpleConsumerBuilder;
use crate::simple::config::{MAX_BATCH, SimpleConsumerConfig};
use crate::simple::engine::SimpleEngine;
use crate::simple::message::{ReceiptHandle, ReceivedMessage};
use crate::simple::transport::{ReceiveRequest, SimpleTransport};

/// The smallest invisible time a receive accepts.
const MIN_INVISIBLE: Duration = Duration::from_secs(1);

/// A pop consumer (RocketMQ 5.x): [`receive`](Self::receive) messages,
/// then [`ack`](Self::ack) each, or hide it longer with
/// [`change_invisible_duration`](Self::change_invisible_duration); a
/// message neither acked nor hidden longer comes back (to any member of the
/// group) once its invisible time has passed, with its reconsume times
/// raised by one, and goes to `%DLQ%<group>` after
/// [`max_reconsume_times`](SimpleConsumerConfig::max_reconsume_times).
///
/// Cheap to clone; clones share the consumer. Handles and messages may move
/// to other tasks. Dropping the last clone without
/// [`shutdown`](Self::shutdown) stops it in the background.
#[derive(Clone)]
pub struct SimpleConsumer {
    /// The engine it was started on (the brokers' pop or the proxy's gRPC).
    engine: Arc<dyn SimpleEngine>,
    /// Which subscription the next receive reads.
    next_topic: Arc<AtomicUsize>,
}

impl fmt::Debug for SimpleConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimpleConsumer")
            .field("group", &self.group())
            .field("client_id", &self.client_id())
            .finish_non_exhaustive()
    }
}

impl SimpleConsumer {
    /// A builder with the defaults.
    pub fn builder() -> SimpleConsumerBuilder {
        SimpleConsumerBuilder::default()
    }

    pub(crate) fn new(engine: Arc<dyn SimpleEngine>) -> Self {
        SimpleConsumer {
            engine,
            next_topic: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn transport(&self) -> &dyn SimpleTransport {
        self.engine.transport()
    }

    fn check_open(&self) -> Result<()> {
        self.engine.check_open()
    }

    fn subs(&self) -> std::sync::MutexGuard<'_, Vec<Subscription>> {
        self.engine.subs()
    }

    /// The consumer's settings.
    pub fn config(&self) -> &SimpleConsumerConfig {
        self.engine.config()
    }

    /// The consumer group.
    pub fn group(&self) -> &str {
        self.engine.group()
    }

    /// This client's id in the group (`ip@instance`; over gRPC the id the
    /// proxy knows the session by).
    pub fn client_id(&self) -> &str {
        self.engine.client_id()
    }

    /// Whether `shutdown` ran (or the consumer was dropped).
    pub fn is_shutdown(&self) -> bool {
        self.engine.is_shutdown()
    }

    /// Receives from `topic` too, filtered by `expression` (replaces the
    /// topic's expression when it is subscribed already).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a bad topic or expression,
    /// [`Error::PopNotSupported`] when a broker of the topic is older than
    /// 5.0, [`Error::Shutdown`].
    pub async fn subscribe(
        &self,
        topic: impl Into<String>,
        expression: impl Into<Expression>,
    ) -> rmq_error::Result<()> {
        unify(async {
            self.check_open()?;
            self.engine
                .subscribe(Subscription::new(topic, expression))
                .await
        })
        .await
    }

    /// Stops receiving from `topic`.
    pub fn unsubscribe(&self, topic: &str) {
        let topic = self.engine.namespace().wrap(topic);
        self.subs().retain(|s| s.topic != topic);
    }

    /// Receives up to `max` (1 to 32) messages, hidden from every other
    /// receive of the group for `invisible` (at least 1 s). Waits up to the
    /// [`await_duration`](SimpleConsumerConfig::await_duration) for a first
    /// message (long polling at the broker) and answers what came, possibly
    /// nothing. Each call reads the next subscribed topic (and the next
    /// broker of it).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future (e.g. the branch of a `tokio::select!` that did
    /// not win) loses nothing: the messages the broker or proxy handed out
    /// for it stay hidden until `invisible` has passed, then come back to
    /// the group with their reconsume times raised by one; messages not
    /// handed out yet stay where they are. Nothing is acked on its behalf.
    /// To have them back sooner, receive with a short `invisible`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `max` or `invisible` out of range or
    /// no subscription, [`Error::PopNotSupported`] from a 4.x broker,
    /// [`Error::Client`] when the broker call failed (retryable ones say
    /// so), [`Error::Shutdown`].
    pub async fn receive(
        &self,
        max: usize,
        invisible: Duration,
    ) -> rmq_error::Result<Vec<ReceivedMessage>> {
        self.receive_detailed(max, invisible)
            .await
            .map_err(Into::into)
    }

    /// [`receive`](Self::receive) with this crate's error.
    async fn receive_detailed(
        &self,
        max: usize,
        invisible: Duration,
    ) -> Result<Vec<ReceivedMessage>> {
        self.check_open()?;
        if !(1..=MAX_BATCH).contains(&max) {
            return Err(Error::InvalidArgument(format!(
                "max is {max}; receive 1 to {MAX_BATCH} messages at a time"
            )));
        }
        if invisible < MIN_INVISIBLE {
            return Err(Error::InvalidArgument(format!(
                "invisible duration {invisible:?} is below {MIN_INVISIBLE:?}"
            )));
        }
        let sub = {
            let subs = self.subs();
            if subs.is_empty() {
                return Err(Error::InvalidArgument(
                    "the consumer has no subscription; call subscribe first".into(),
                ));
            }
            let i = self.next_topic.fetch_add(1, Ordering::Relaxed) % subs.len();
            subs.get(i).cloned()
        };
        let Some(sub) = sub else {
            return Ok(Vec::new());
        };
        let filter = sub.filter();
        let request = ReceiveRequest {
            topic: &sub.topic,
            filter: &filter,
            max,
            invisible,
            wait: self.config().await_duration,
        };
        tokio::select! {
            biased;
            () = self.engine.closing().cancelled() => Err(Error::Shutdown),
            r = self.transport().receive(request) => r,
        }
    }

    /// Acks a received message (by the message or its handle): it will not
    /// come back. An ack that has started when [`shutdown`](Self::shutdown)
    /// is called finishes first (shutdown waits for it, at most 5 s).
    ///
    /// # Errors
    ///
    /// [`Error::Client`] when the broker refused (an expired handle: the
    /// message came back already) or the call failed; [`Error::Shutdown`].
    pub async fn ack(&self, message: impl AsRef<ReceiptHandle>) -> rmq_error::Result<()> {
        unify(async {
            let _running = self.engine.track();
            self.check_open()?;
            self.transport().ack(&[message.as_ref()]).await
        })
        .await
    }

    /// Acks many messages in one request per broker (BATCH_ACK_MESSAGE).
    ///
    /// # Errors
    ///
    /// As [`ack`](Self::ack); on an error some brokers may have taken their
    /// acks.
    pub async fn ack_batch<H: AsRef<ReceiptHandle>>(
        &self,
        messages: &[H],
    ) -> rmq_error::Result<()> {
        unify(async {
            let _running = self.engine.track();
            self.check_open()?;
            if messages.is_empty() {
                return Ok(());
            }
            let handles: Vec<&ReceiptHandle> = messages.iter().map(AsRef::as_ref).collect();
            self.transport().ack(&handles).await
        })
        .await
    }

    /// Hides a received message for `invisible` from now and answers its
    /// new handle (the old one is then stale; [`ReceivedMessage::renew`]
    /// stores it in the message).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `invisible` below 1 s, else as
    /// [`ack`](Self::ack).
    pub async fn change_invisible_duration(
        &self,
        message: impl AsRef<ReceiptHandle>,
        invisible: Duration,
    ) -> rmq_error::Result<ReceiptHandle> {
        unify(async {
            let _running = self.engine.track();
            self.check_open()?;
            if invisible < MIN_INVISIBLE {
                return Err(Error::InvalidArgument(format!(
                    "invisible duration {invisible:?} is below {MIN_INVISIBLE:?}"
                )));
            }
            self.transport()
                .change_invisible(message.as_ref(), invisible)
                .await
        })
        .await
    }

    /// The received messages as a stream: receives `batch` (1 to 32) at a
    /// time, each hidden for `invisible`, and hands them out one by one; at
    /// most one batch is held ahead of the reader (the prefetch bound).
    /// Errors are items; the stream ends once the consumer is shut down.
    /// Ack what it yields as with [`receive`](Self::receive).
    pub fn messages(
        &self,
        batch: usize,
        invisible: Duration,
    ) -> impl Stream<Item = rmq_error::Result<ReceivedMessage>> + Send + 'static {
        let state = (self.clone(), VecDeque::<ReceivedMessage>::new());
        futures::stream::unfold(state, move |(consumer, mut buffered)| async move {
            loop {
                if let Some(m) = buffered.pop_front() {
                    return Some((Ok(m), (consumer, buffered)));
                }
                match consumer.receive_detailed(batch, invisible).await {
                    Ok(batch) => buffered.extend(batch),
                    Err(e) if e.is_shutdown() => return None,
                    Err(e) => return Some((Err(e.into()), (consumer, buffered))),
                }
            }
        })
    }

    /// Stops the consumer: receives in flight end with
    /// [`Error::Shutdown`] (what the broker popped for them comes back after
    /// its invisible time), acks and invisible-time changes in flight
    /// finish (waited for, at most 5 s), then the group is unregistered.
    /// Later calls answer [`Error::Shutdown`]. Messages received and not
    /// acked come back after their invisible time: to drain, stop
    /// receiving, ack what you finished, then shut down.
    ///
    /// # Errors
    ///
    /// None today; the signature leaves room.
    pub async fn shutdown(&self) -> rmq_error::Result<()> {
        unify(self.engine.shutdown()).await
    }
}
