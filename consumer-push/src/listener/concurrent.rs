//! The listener the consumer hands messages to: [`MessageListener`],
//! [`ConsumeContext`], [`ConsumeResult`] and the closure adapter
//! [`listener_fn`].

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmq_consumer_base::Retry;
use rmq_protocol::{MessageExt, MessageQueue};

/// What a listener call decided (Java `ConsumeConcurrentlyStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsumeResult {
    /// The messages are consumed (up to and including
    /// [`ConsumeContext::ack_index`]; the ones after it failed).
    Success,
    /// Every message of the call failed: in clustering mode they go back to
    /// the broker (CONSUMER_SEND_MSG_BACK) and return through
    /// `%RETRY%<group>` after a delay; in broadcasting mode they are dropped
    /// (logged), as Java does.
    ReconsumeLater,
}

/// Per-call context (Java `ConsumeConcurrentlyContext`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumeContext {
    /// Shared by the calls of one pulled batch: a context per call costs no
    /// copy of the queue's names.
    queue: Arc<MessageQueue>,
    delay_level_when_next_consume: i32,
    ack_index: i32,
}

impl ConsumeContext {
    /// A context for messages of `queue` with Java's defaults: delay level 0
    /// (the broker decides), ack index `i32::MAX` (everything).
    pub fn new(queue: MessageQueue) -> Self {
        Self::shared(Arc::new(queue))
    }

    /// [`new`](Self::new) with a queue shared with other calls.
    pub(crate) fn shared(queue: Arc<MessageQueue>) -> Self {
        ConsumeContext {
            queue,
            delay_level_when_next_consume: 0,
            ack_index: i32::MAX,
        }
    }

    /// The queue the messages were pulled from (for retried messages: the
    /// group's `%RETRY%` queue; the messages' `topic` is the original one).
    pub fn queue(&self) -> &MessageQueue {
        &self.queue
    }

    /// The delay level failed messages are sent back with (Java
    /// `delayLevelWhenNextConsume`): 0 lets the broker choose
    /// (3 + reconsume times: 10 s, 30 s, 1 min, ...), 1–18 pick a level of
    /// the broker's `messageDelayLevel` table, a negative level sends them
    /// straight to `%DLQ%<group>`. Default: 0.
    pub fn delay_level_when_next_consume(&self) -> i32 {
        self.delay_level_when_next_consume
    }

    /// Sets [`delay_level_when_next_consume`](Self::delay_level_when_next_consume).
    #[deprecated(
        since = "0.1.0",
        note = "use `set_retry(Retry::Level(n))`, `set_retry(Retry::Dlq)` (for a negative level) or `set_retry(Retry::Broker)` (for 0)"
    )]
    pub fn set_delay_level(&mut self, level: i32) {
        self.delay_level_when_next_consume = level;
    }

    /// How the failed messages of this call come back:
    /// [`delay_level_when_next_consume`](Self::delay_level_when_next_consume)
    /// as a [`Retry`].
    pub fn retry(&self) -> Retry {
        Retry::from_delay_level(self.delay_level_when_next_consume)
    }

    /// Sets how the failed messages of this call come back:
    /// `Retry::Broker` (the default), `Retry::Level(n)` or `Retry::Dlq`.
    pub fn set_retry(&mut self, retry: Retry) {
        self.delay_level_when_next_consume = retry.delay_level();
    }

    /// Index of the last consumed message when the call returns
    /// [`ConsumeResult::Success`] (Java `ackIndex`): messages after it
    /// count as failed. Values ≥ the batch length mean "all" (the default
    /// `i32::MAX`); −1 means none. Ignored for
    /// [`ConsumeResult::ReconsumeLater`] (all failed).
    pub fn ack_index(&self) -> i32 {
        self.ack_index
    }

    /// Sets [`ack_index`](Self::ack_index).
    #[deprecated(
        since = "0.1.0",
        note = "use `set_success_count(n)`: the first n messages succeeded (ack_index n - 1)"
    )]
    pub fn set_ack_index(&mut self, index: i32) {
        self.ack_index = index;
    }

    /// When the call returns [`ConsumeResult::Success`]: how many messages,
    /// from the start of the batch, succeeded (the others are sent back as
    /// failed); `None` (the default) means all of them.
    ///
    /// ```
    /// # use rmq_consumer_push::{ConsumeContext, MessageQueue};
    /// let mut ctx = ConsumeContext::new(MessageQueue::new("orders", "broker-a", 0));
    /// assert_eq!(ctx.success_count(), None);
    /// ctx.set_success_count(2); // messages 0 and 1 done, the rest back for a retry
    /// assert_eq!(ctx.success_count(), Some(2));
    /// ```
    pub fn success_count(&self) -> Option<usize> {
        if self.ack_index == i32::MAX {
            return None;
        }
        // ack_index -1 (none) reads as 0.
        Some(usize::try_from(self.ack_index.saturating_add(1)).unwrap_or(0))
    }

    /// Marks the first `n` messages of the batch as succeeded when the call
    /// returns [`ConsumeResult::Success`]; the others count as failed
    /// (Java `ackIndex = n - 1`). `n` at least the batch length means all;
    /// `0` means none.
    pub fn set_success_count(&mut self, n: usize) {
        self.ack_index = match i32::try_from(n) {
            Ok(n) if n < i32::MAX => n - 1,
            _ => i32::MAX,
        };
    }
}

/// The user's message handler for concurrent consumption (Java
/// `MessageListenerConcurrently`).
///
/// The consumer calls it with batches of at most
/// `consume_batch_max_size` messages (default 1) of one queue, at most
/// `consume_concurrency` calls at a time (default 20), in no particular
/// order across calls. It runs on the tokio runtime, in the task that
/// pulls the messages' queue: await I/O, do not block the thread (CPU-heavy
/// work belongs in `tokio::task::spawn_blocking` or a pool of its own; a
/// call that blocks also holds back its queue's next pull answer).
///
/// A call that panics counts as [`ConsumeResult::ReconsumeLater`] (logged);
/// a call that exceeds the consume timeout (default 15 min) is dropped at
/// its next `.await` and counts as `ReconsumeLater` too. Either way the
/// consumer keeps running.
///
/// For stateless handlers, [`listener_fn`] adapts a closure.
///
/// ```
/// use rmq_consumer_push::{ConsumeContext, ConsumeResult, MessageExt, MessageListener, Retry, async_trait};
///
/// struct Handler;
///
/// #[async_trait]
/// impl MessageListener for Handler {
///     async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult {
///         for m in msgs {
///             if m.body.is_empty() {
///                 ctx.set_retry(Retry::Level(3)); // 10 s
///                 return ConsumeResult::ReconsumeLater;
///             }
///         }
///         ConsumeResult::Success
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait MessageListener: Send + Sync + 'static {
    /// Consumes `msgs` (retried messages carry their original topic and
    /// `reconsume_times` > 0).
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult;
}

#[async_trait::async_trait]
impl<L: MessageListener + ?Sized> MessageListener for Arc<L> {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult {
        (**self).consume(msgs, ctx).await
    }
}

#[async_trait::async_trait]
impl<L: MessageListener + ?Sized> MessageListener for Box<L> {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult {
        (**self).consume(msgs, ctx).await
    }
}

/// A [`MessageListener`] made from a closure by [`listener_fn`].
pub struct FnListener<F> {
    f: F,
}

impl<F> fmt::Debug for FnListener<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnListener").finish_non_exhaustive()
    }
}

/// Adapts a closure returning a boxed future into a [`MessageListener`].
///
/// ```
/// use rmq_consumer_push::{ConsumeResult, Retry, listener_fn};
///
/// let listener = listener_fn(|msgs, ctx| {
///     Box::pin(async move {
///         for m in msgs {
///             if m.tags() == Some("poison") {
///                 ctx.set_retry(Retry::Dlq); // straight to the DLQ
///                 return ConsumeResult::ReconsumeLater;
///             }
///         }
///         ConsumeResult::Success
///     })
/// });
/// # let _ = listener;
/// ```
///
/// # Why a boxed future and not an `async` closure
///
/// The consumer runs listener calls as tokio tasks, so the future must be
/// `Send`, and it borrows the messages and the context. Rust 1.85's async
/// closures (`async |msgs: &[MessageExt], ctx: &mut ConsumeContext| ..`)
/// cannot promise a `Send` future for every borrow (that needs return-type
/// notation, not stable yet). A closure returning
/// `BoxFuture<'a, ConsumeResult>` for arguments of lifetime `'a` says it
/// exactly, at the cost of one `Box::pin` — the shape sqlx uses for its
/// connection hooks. The [`listener!`](crate::listener!) macro writes the
/// `Box::pin` (and the clones of captured handles) for you.
pub fn listener_fn<F>(f: F) -> FnListener<F>
where
    F: for<'a> Fn(&'a [MessageExt], &'a mut ConsumeContext) -> BoxFuture<'a, ConsumeResult>
        + Send
        + Sync
        + 'static,
{
    FnListener { f }
}

#[async_trait::async_trait]
impl<F> MessageListener for FnListener<F>
where
    F: for<'a> Fn(&'a [MessageExt], &'a mut ConsumeContext) -> BoxFuture<'a, ConsumeResult>
        + Send
        + Sync
        + 'static,
{
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult {
        (self.f)(msgs, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn closure_adapter_borrows_and_sets_context() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let listener = listener_fn(move |msgs, ctx| {
            let seen = seen.clone();
            Box::pin(async move {
                seen.fetch_add(msgs.len(), Ordering::SeqCst);
                ctx.set_retry(Retry::Level(2));
                ctx.set_success_count(1);
                ConsumeResult::ReconsumeLater
            })
        });
        let listener: Arc<dyn MessageListener> = Arc::new(listener);
        let mut ctx = ConsumeContext::new(MessageQueue::new("T", "b", 1));
        assert_eq!(ctx.ack_index(), i32::MAX);
        assert_eq!(ctx.success_count(), None);
        assert_eq!(ctx.delay_level_when_next_consume(), 0);
        let msgs = vec![MessageExt::default(), MessageExt::default()];
        let r = listener.consume(&msgs, &mut ctx).await;
        assert_eq!(r, ConsumeResult::ReconsumeLater);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(ctx.delay_level_when_next_consume(), 2);
        assert_eq!(ctx.ack_index(), 0);
        assert_eq!(ctx.success_count(), Some(1));
        ctx.set_success_count(0);
        assert_eq!((ctx.ack_index(), ctx.success_count()), (-1, Some(0)));
        ctx.set_success_count(usize::MAX);
        assert_eq!((ctx.ack_index(), ctx.success_count()), (i32::MAX, None));
        assert_eq!(ctx.queue().queue_id, 1);
    }
}
