//! [`LitePullConsumer`]: background pulls into a bounded buffer, handed out
//! by [`poll`](LitePullConsumer::poll) or a [`MessageStream`] (Java
//! `DefaultLitePullConsumer`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rmq_client_core::now_ms;
use rmq_consumer_base::{DropGuard, Expression, Subscription};
use rmq_protocol::{MessageExt, MessageQueue};
use tokio::time::Instant;
use tracing::warn;

use crate::error::{Error, Result, unify, unify_now};
use crate::lite::assignment;
use crate::lite::buffer::BufferStats;
use crate::lite::builder::LitePullConsumerBuilder;
use crate::lite::config::LitePullConsumerConfig;
use crate::lite::inner::{Inner, Mode};
use crate::lite::stream::MessageStream;

/// A running lite pull consumer: a cheap-to-clone handle.
///
/// Queues come from the group rebalance ([`subscribe`](Self::subscribe))
/// or are fixed ([`assign`](Self::assign)). One background task per queue
/// long-polls the broker into a bounded buffer (per queue and in total);
/// when the buffer is full, pulling pauses until the application takes
/// messages with [`poll`](Self::poll) or a [`stream`](Self::stream). A slow
/// reader slows pulling instead of growing memory.
///
/// Offsets: with auto-commit (the default) a queue's offset to commit is
/// the one after the last message *handed out* by `poll` / the stream (or
/// a [`seek`](Self::seek) position), committed every 5 s, when a rebalance
/// takes a queue away, and at shutdown. With `auto_commit(false)` only the
/// application commits: per message ([`commit_message`](Self::commit_message),
/// [`commit_offsets`](Self::commit_offsets): a queue's offset never passes
/// a handed-out message not committed, the at-least-once way) or
/// everything handed out ([`commit`](Self::commit)). Every message carries
/// its queue and offset (`topic`, `broker_name`, `queue_id`,
/// `queue_offset`).
///
/// ```no_run
/// # async fn demo() -> rmq_error::Result<()> {
/// use futures::StreamExt;
/// use rmq_consumer_pull::LitePullConsumer;
///
/// let consumer = LitePullConsumer::builder()
///     .group("analytics")
///     .subscribe("clicks", "*")
///     .auto_commit(false)
///     .start()
///     .await?;
/// let mut messages = consumer.stream();
/// while let Some(msg) = messages.next().await {
///     let msg = msg?;
///     println!("{}", msg.msg_id);
///     consumer.commit().await?;
/// }
/// # Ok(()) }
/// ```
///
/// Dropping the last handle without [`shutdown`](Self::shutdown) stops
/// every task at once (best effort) without committing; streams then end.
#[derive(Clone)]
#[must_use = "dropping the last LitePullConsumer handle stops it without committing handed-out messages; call shutdown().await"]
pub struct LitePullConsumer {
    guard: Arc<DropGuard<Inner>>,
}

impl fmt::Debug for LitePullConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner();
        // One lock, released before formatting.
        let (mode, queues) = {
            let st = inner.state();
            (st.mode, st.buffer.queues().len())
        };
        f.debug_struct("LitePullConsumer")
            .field("group", &self.group())
            .field("client_id", &self.client_id())
            .field("mode", &mode)
            .field("queues", &queues)
            .field("shut_down", &self.is_shutdown())
            .finish()
    }
}

rmq_consumer_base::handle_getters!(LitePullConsumer, Inner, LitePullConsumerConfig);

impl LitePullConsumer {
    /// A builder with the Java client's defaults.
    pub fn builder() -> LitePullConsumerBuilder {
        LitePullConsumerBuilder::default()
    }

    pub(super) fn running(&self) -> Result<&Arc<Inner>> {
        let inner = self.inner();
        inner.core.check_open()?;
        Ok(inner)
    }

    /// Subscribes to `topic` (Java `subscribe`): the next rebalance (asked
    /// for now; at most one per second) assigns this consumer a share of
    /// its queues. Subscribing a topic again replaces its expression.
    ///
    /// # Errors
    ///
    /// [`Error::SubscriptionConflict`] when the consumer uses `assign`;
    /// [`Error::Config`] for a bad topic name or an empty SQL expression;
    /// [`Error::Shutdown`].
    pub async fn subscribe(
        &self,
        topic: &str,
        expression: impl Into<Expression>,
    ) -> rmq_error::Result<()> {
        unify(async {
        let inner = self.running()?;
        let wrapped = inner.core.namespace().wrap(topic);
        let topic = wrapped.as_str();
        let sub = Subscription::new(topic, expression);
        sub.check().map_err(Error::Config)?;
        {
            let mut st = inner.state();
            inner.set_mode(&mut st, Mode::Subscribe)?;
            st.subscriptions
                .insert(topic.to_owned(), Arc::new(sub.to_data(now_ms())));
        }
        let instance = inner.core.instance();
        if let Err(e) = instance.route(topic).await {
            warn!(group = %inner.core.group(), topic, error = %rmq_protocol::ErrorChain(&e), "no route for the topic yet");
        }
        instance.send_heartbeat_now().await;
        inner.trigger.notify();
        Ok(())
        })
        .await
    }

    /// Stops reading `topic`: its queues are dropped (committing what was
    /// handed out, with auto-commit) and the subscription is removed.
    ///
    /// # Errors
    ///
    /// [`Error::Shutdown`].
    pub async fn unsubscribe(&self, topic: &str) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.running()?;
            let wrapped = inner.core.namespace().wrap(topic);
            let topic = wrapped.as_str();
            let _ops = inner.ops.lock().await;
            let queues: Vec<MessageQueue> = {
                let mut st = inner.state();
                st.subscriptions.remove(topic);
                st.buffer
                    .queues()
                    .into_iter()
                    .filter(|mq| mq.topic == topic)
                    .collect()
            };
            for mq in &queues {
                assignment::drop_queue(inner, mq).await;
            }
            inner.core.health().revoked(topic, &queues);
            inner.core.instance().send_heartbeat_now().await;
            Ok(())
        })
        .await
    }

    /// Reads exactly `queues` from now on, without a group rebalance (Java
    /// `assign`): queues no longer in the set are dropped (committing what
    /// was handed out, with auto-commit), new ones start at their committed
    /// offset (else per [`ConsumeFrom`](crate::ConsumeFrom)).
    ///
    /// # Errors
    ///
    /// [`Error::SubscriptionConflict`] when the consumer uses `subscribe`;
    /// [`Error::InvalidArgument`] for an empty set; [`Error::Shutdown`].
    pub async fn assign(
        &self,
        queues: impl IntoIterator<Item = MessageQueue>,
    ) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.running()?;
            let ns = inner.core.namespace();
            let mut queues: Vec<MessageQueue> =
                queues.into_iter().map(|q| ns.wrap_queue(&q)).collect();
            if queues.is_empty() {
                return Err(Error::InvalidArgument(
                    "assign needs at least one queue".into(),
                ));
            }
            queues.sort();
            queues.dedup();
            inner.set_mode(&mut inner.state(), Mode::Assign)?;
            assignment::assign(inner, queues).await
        })
        .await
    }

    /// The queues this consumer reads now, sorted.
    pub fn assignment(&self) -> Vec<MessageQueue> {
        let inner = self.inner();
        let ns = inner.core.namespace();
        let queues = inner.state().buffer.queues();
        if ns.is_none() {
            return queues;
        }
        queues.iter().map(|q| ns.unwrap_queue(q)).collect()
    }

    /// Asks for a rebalance now (it runs at most once a second).
    pub fn rebalance_now(&self) {
        self.inner().trigger.notify();
    }

    /// Waits up to `timeout` for messages and hands out up to
    /// [`poll_batch_size`](LitePullConsumerBuilder::poll_batch_size) of
    /// them, taken queue by queue in round-robin order (within a queue, in
    /// offset order). Returns an empty batch when none arrived in time.
    /// Paused queues are skipped.
    ///
    /// # Errors
    ///
    /// A background error that retrying will not fix
    /// ([`Error::Pull`], [`Error::StartOffset`]), once each; then reading
    /// goes on. [`Error::Shutdown`] once the consumer is shut down.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: messages leave the buffer only in the final,
    /// synchronous step before `poll` returns, so a `poll` dropped in a
    /// `select!` loses nothing and hands out nothing.
    pub async fn poll(&self, timeout: Duration) -> rmq_error::Result<Vec<MessageExt>> {
        unify(async {
            let inner = self.inner();
            let deadline = Instant::now().checked_add(timeout);
            let max = inner.config.poll_batch_size;
            loop {
                let notified = inner.msg_ready.notified();
                tokio::pin!(notified);
                // Register before looking: a wake-up after the look is not lost.
                notified.as_mut().enable();
                if let Some(ready) = inner.try_take(max) {
                    return ready;
                }
                match deadline {
                    Some(at) => tokio::select! {
                        () = &mut notified => {}
                        () = tokio::time::sleep_until(at) => return Ok(Vec::new()),
                    },
                    None => notified.await,
                }
            }
        })
        .await
    }

    /// A stream of the buffered messages, one at a time, with the same
    /// bounded buffering as [`poll`](Self::poll) (a slow reader slows
    /// pulling). Errors arrive as items (see [`poll`](Self::poll)); the
    /// stream ends (`None`) only after [`shutdown`](Self::shutdown) (or
    /// when every handle was dropped). Several streams and `poll` callers
    /// share the buffer: each message goes to one of them.
    ///
    /// # Cancel safety
    ///
    /// `next().await` is cancel-safe: a message leaves the buffer only in
    /// the synchronous step that returns it.
    pub fn stream(&self) -> MessageStream {
        MessageStream::new(self.inner().clone())
    }

    /// Restarts `queue` at `offset` (Java `seek`): buffered messages of the
    /// queue are dropped, the queue's pull restarts there, and `offset` is
    /// the queue's handed-out position (what a commit stores until new
    /// messages are handed out).
    ///
    /// # Errors
    ///
    /// [`Error::NotAssigned`] when the queue is not assigned;
    /// [`Error::OffsetOutOfRange`] outside `[min_offset, max_offset]`;
    /// [`Error::Client`] / [`Error::BrokerNotFound`] when the range could
    /// not be read; [`Error::Shutdown`].
    pub async fn seek(&self, queue: &MessageQueue, offset: i64) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            assignment::seek(inner, queue, |_, _| Ok(offset)).await
        })
        .await
    }

    /// [`seek`](Self::seek) to the queue's min offset (Java `seekToBegin`).
    ///
    /// # Errors
    ///
    /// As [`seek`](Self::seek).
    pub async fn seek_to_begin(&self, queue: &MessageQueue) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            assignment::seek(inner, queue, |min, _| Ok(min)).await
        })
        .await
    }

    /// [`seek`](Self::seek) to the queue's max offset, skipping everything
    /// stored so far (Java `seekToEnd`).
    ///
    /// # Errors
    ///
    /// As [`seek`](Self::seek).
    pub async fn seek_to_end(&self, queue: &MessageQueue) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            assignment::seek(inner, queue, |_, max| Ok(max)).await
        })
        .await
    }

    /// Stops pulling and handing out messages of `queues` until
    /// [`resume`](Self::resume) (Java `pause`). Messages already buffered
    /// stay buffered.
    ///
    /// # Errors
    ///
    /// [`Error::NotAssigned`] naming the first queue that is not assigned
    /// (then nothing is paused); [`Error::Shutdown`].
    pub fn pause(&self, queues: &[MessageQueue]) -> rmq_error::Result<()> {
        unify_now(|| self.set_paused(queues, true))
    }

    /// Resumes paused `queues` (Java `resume`).
    ///
    /// # Errors
    ///
    /// As [`pause`](Self::pause).
    pub fn resume(&self, queues: &[MessageQueue]) -> rmq_error::Result<()> {
        unify_now(|| self.set_paused(queues, false))
    }

    fn set_paused(&self, queues: &[MessageQueue], paused: bool) -> Result<()> {
        let inner = self.running()?;
        let ns = inner.core.namespace();
        let queues: Vec<MessageQueue> = queues.iter().map(|q| ns.wrap_queue(q)).collect();
        {
            let mut st = inner.state();
            if let Some(missing) = queues.iter().find(|mq| !st.buffer.contains(mq)) {
                return Err(Error::NotAssigned {
                    queue: ns.unwrap_queue(missing),
                });
            }
            for mq in &queues {
                st.buffer.set_paused(mq, paused);
            }
        }
        if !paused {
            inner.wake_all();
        }
        Ok(())
    }

    /// Whether `queue` is paused; `None` when it is not assigned.
    pub fn is_paused(&self, queue: &MessageQueue) -> Option<bool> {
        let inner = self.inner();
        let queue = inner.core.namespace().wrap_queue(queue);
        inner.state().buffer.is_paused(&queue)
    }

    /// What the buffer holds now (per queue and in total) and the most it
    /// ever held, with its limits.
    pub fn buffered(&self) -> BufferStats {
        self.inner().state().buffer.stats()
    }

    /// Stops the consumer: no more messages are handed out (streams end,
    /// `poll` returns [`Error::Shutdown`]); the pull and rebalance tasks
    /// stop; with auto-commit the handed-out offsets are committed; every
    /// committed offset is persisted (waiting for the broker); the group is
    /// unregistered and the client instance released. Buffered messages not
    /// handed out are dropped (the next reader gets them). When it returns,
    /// no task of this consumer is running. Idempotent.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] when some offsets could not be persisted
    /// (everything else was still shut down).
    pub async fn shutdown(&self) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.inner();
            inner.core.shutdown(inner.stop()).await
        })
        .await
    }
}
