//! The single-message sends of [`Producer`]: `send`, `send_oneway`,
//! `send_to_queue`, `send_with_selector`, `send_with_callback`.

use rmq_client_core::SendResult;
use rmq_protocol::{Message, MessageQueue};
use tokio::time::Instant;
use tracing::Instrument;

use super::{Backend, Producer, hand_back};
use crate::error::{Error, InvalidMessage, Result, Unsent};
use crate::prepare::prepare_message;
use crate::send::Outcome;
use crate::telemetry::SendObservation;

impl Producer {
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
    pub async fn send(&self, msg: Message) -> rmq_error::Result<SendResult> {
        self.send_detailed(msg).await.map_err(Into::into)
    }

    /// [`send`](Self::send) with this crate's error.
    pub(crate) async fn send_detailed(&self, msg: Message) -> Result<SendResult> {
        let retries = self.config().retry_times_when_send_failed;
        self.send_retrying(msg, retries, false).await
    }

    /// One send with up to `retries` retries. `admitted`: a
    /// [`send_with_callback`](Self::send_with_callback) task, whose message
    /// was accepted while the producer ran; it is sent even when
    /// [`shutdown`](Producer::shutdown) began before the task first ran
    /// (shutdown waits for these tasks before it closes the connections),
    /// directly rather than through the auto-batching accumulator that
    /// shutdown has closed.
    async fn send_retrying(
        &self,
        mut msg: Message,
        retries: u32,
        admitted: bool,
    ) -> Result<SendResult> {
        if let (Some(acc), Backend::Remoting(_)) = (&self.inner.batcher, &self.inner.backend) {
            if acc.accepts(&msg, self.config()) && self.check_running().is_ok() {
                match Box::pin(self.send_batched(msg, acc)).await {
                    // Shutdown closed the accumulator in between: an
                    // admitted message is still sent, on its own.
                    Err(Error::Send {
                        source,
                        unsent: Unsent::Message(m),
                        ..
                    }) if admitted && matches!(*source, Error::Shutdown) => msg = *m,
                    other => return other,
                }
            }
        }
        let running = if admitted {
            Ok(())
        } else {
            self.check_running()
        };
        let trace_started = crate::message_trace::started(&self.inner.backend);
        let obs = self.inner.telemetry.start(&msg.topic, 1);
        obs.propagate(std::slice::from_mut(&mut msg));
        // The transports' futures are boxed: inline, they made this future
        // (and every task that awaits or spawns a send) kilobytes large, and
        // futures are moved by value.
        let outcome = async {
            match (running, &self.inner.backend) {
                (Err(e), _) => Outcome::failed(e),
                (Ok(()), Backend::Grpc(g)) => {
                    Box::pin(g.send(std::slice::from_mut(&mut msg))).await
                }
                (Ok(()), Backend::Remoting(sender)) => {
                    match prepare_message(&mut msg, self.config()) {
                        Err(e) => Outcome::failed(e),
                        Ok(prepared) => {
                            Box::pin(sender.send_with_retries(&prepared, retries)).await
                        }
                    }
                }
            }
        }
        .instrument(obs.span().clone())
        .await;
        self.end_single(obs, trace_started, msg, outcome)
    }

    /// The end of one message's send: its telemetry, its topic out of the
    /// namespace again, its trace record, and the message handed back when
    /// the send failed.
    fn end_single(
        &self,
        obs: SendObservation,
        trace_started: Option<i64>,
        mut msg: Message,
        outcome: Outcome<SendResult>,
    ) -> Result<SendResult> {
        obs.finish(&outcome);
        self.namespace().unwrap_in_place(&mut msg.topic);
        crate::message_trace::on_sent(&self.inner.backend, trace_started, &msg, &outcome);
        hand_back(self.namespace(), outcome, Unsent::Message(Box::new(msg)))
    }

    /// Sends one message without waiting for the broker's answer (Java
    /// `sendOneway`): resolves once the request is written. One attempt, no
    /// retry; the outcome is unknown.
    ///
    /// # Errors
    ///
    /// An [`Error::Send`] handing the message back when it could not be
    /// written.
    pub async fn send_oneway(&self, mut msg: Message) -> rmq_error::Result<()> {
        let obs = self.inner.telemetry.start(&msg.topic, 1);
        obs.propagate(std::slice::from_mut(&mut msg));
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
        hand_back(self.namespace(), outcome, Unsent::Message(Box::new(msg))).map_err(Into::into)
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
    ) -> rmq_error::Result<SendResult> {
        let trace_started = crate::message_trace::started(&self.inner.backend);
        let obs = self.inner.telemetry.start(&msg.topic, 1);
        obs.propagate(std::slice::from_mut(&mut msg));
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
                            let queue = self.namespace().wrap_queue(queue);
                            Outcome::once(sender.send_once(&prepared, &queue, deadline).await)
                        }
                    },
                },
            }
        }
        .instrument(obs.span().clone())
        .await;
        self.end_single(obs, trace_started, msg, outcome)
            .map_err(Into::into)
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
    /// # async fn demo(producer: rmq_producer::Producer) -> rmq_error::Result<()> {
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
    pub async fn send_with_selector<F>(
        &self,
        mut msg: Message,
        select: F,
    ) -> rmq_error::Result<SendResult>
    where
        F: FnOnce(&[MessageQueue], &Message) -> usize,
    {
        let trace_started = crate::message_trace::started(&self.inner.backend);
        let obs = self.inner.telemetry.start(&msg.topic, 1);
        obs.propagate(std::slice::from_mut(&mut msg));
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
                                    // The selector sees the queues (and the
                                    // message) out of the namespace.
                                    let ns = self.namespace();
                                    let index = if ns.is_none() {
                                        select(queues, &msg)
                                    } else {
                                        let mut user = msg.clone();
                                        ns.unwrap_in_place(&mut user.topic);
                                        let shown: Vec<MessageQueue> =
                                            queues.iter().map(|q| ns.unwrap_queue(q)).collect();
                                        select(&shown, &user)
                                    };
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
        self.end_single(obs, trace_started, msg, outcome)
            .map_err(Into::into)
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
        F: FnOnce(rmq_error::Result<SendResult>) + Send + 'static,
    {
        if self.is_shutdown() {
            callback(
                hand_back(
                    self.namespace(),
                    Outcome::failed(Error::Shutdown),
                    Unsent::Message(Box::new(msg)),
                )
                .map_err(Into::into),
            );
            return;
        }
        let producer = self.clone();
        let retries = self.config().retry_times_when_send_async_failed;
        self.inner.tasks.spawn(async move {
            let result = producer.send_retrying(msg, retries, true).await;
            callback(result.map_err(Into::into));
        });
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
