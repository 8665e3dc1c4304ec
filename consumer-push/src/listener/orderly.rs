//! The listener of an orderly consumer: [`OrderlyListener`],
//! [`OrderlyContext`], [`OrderlyResult`] and the closure adapter
//! [`orderly_listener_fn`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_protocol::{MessageExt, MessageQueue};

/// Shortest suspend the consumer applies (Java clamps to 10 ms).
pub(crate) const MIN_SUSPEND: Duration = Duration::from_millis(10);
/// Longest suspend the consumer applies (Java clamps to 30 s).
pub(crate) const MAX_SUSPEND: Duration = Duration::from_secs(30);

/// What an orderly listener call decided (Java `ConsumeOrderlyStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderlyResult {
    /// The messages are consumed. With
    /// [`auto_commit`](OrderlyContext::auto_commit) (the default) the
    /// queue's offset moves past them; without it, they are committed by a
    /// later [`Commit`](OrderlyResult::Commit).
    Success,
    /// Consuming failed: the same messages are delivered again, before
    /// anything later of the queue, after the context's
    /// [suspend time](OrderlyContext::suspend_current_queue_time) (default
    /// 1 s), with `reconsume_times` + 1. Past the max reconsume times they
    /// go to `%DLQ%<group>` and the queue moves on.
    SuspendCurrentQueueAMoment,
    /// Manual commit (`auto_commit = false`): everything taken since the
    /// last commit is consumed; the offset moves past it. With auto-commit
    /// it counts as `Success` (logged), as in Java.
    Commit,
    /// Manual commit (`auto_commit = false`): everything taken since the
    /// last commit is delivered again after the suspend time (reconsume
    /// times unchanged). With auto-commit it counts as `Success` (logged),
    /// as in Java.
    Rollback,
}

/// Per-call context of an orderly listener (Java `ConsumeOrderlyContext`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderlyContext {
    queue: MessageQueue,
    auto_commit: bool,
    suspend_current_queue_time: Duration,
}

impl OrderlyContext {
    /// A context for messages of `queue`: auto-commit on, the given
    /// suspend time (the consumer passes its
    /// [`suspend_current_queue_time`](crate::PushConsumerConfig::suspend_current_queue_time)).
    pub fn new(queue: MessageQueue, suspend_current_queue_time: Duration) -> Self {
        OrderlyContext {
            queue,
            auto_commit: true,
            suspend_current_queue_time,
        }
    }

    /// The queue the messages come from (all messages of one call share
    /// it; for retried messages the group's `%RETRY%` queue).
    pub fn queue(&self) -> &MessageQueue {
        &self.queue
    }

    /// Whether the offset moves after every `Success` (Java
    /// `autoCommit`). Default: `true`.
    pub fn auto_commit(&self) -> bool {
        self.auto_commit
    }

    /// Sets [`auto_commit`](Self::auto_commit) for this call's result: with
    /// `false`, `Success` keeps the messages uncommitted until a call
    /// returns [`OrderlyResult::Commit`]; [`OrderlyResult::Rollback`]
    /// delivers everything uncommitted again.
    pub fn set_auto_commit(&mut self, auto_commit: bool) {
        self.auto_commit = auto_commit;
    }

    /// How long the queue pauses after
    /// [`SuspendCurrentQueueAMoment`](OrderlyResult::SuspendCurrentQueueAMoment)
    /// or [`Rollback`](OrderlyResult::Rollback) (Java
    /// `suspendCurrentQueueTimeMillis`). Applied within 10 ms ..= 30 s.
    pub fn suspend_current_queue_time(&self) -> Duration {
        self.suspend_current_queue_time
    }

    /// Sets [`suspend_current_queue_time`](Self::suspend_current_queue_time)
    /// for this call.
    pub fn set_suspend_current_queue_time(&mut self, time: Duration) {
        self.suspend_current_queue_time = time;
    }

    /// The suspend time as applied (clamped like Java).
    pub(crate) fn effective_suspend(&self) -> Duration {
        self.suspend_current_queue_time
            .clamp(MIN_SUSPEND, MAX_SUSPEND)
    }
}

/// The user's message handler for orderly consumption (Java
/// `MessageListenerOrderly`).
///
/// Every queue is consumed strictly in offset order, by one call at a time
/// (and, in clustering mode, only while this client holds the queue's
/// broker lock, so by one member of the group at a time); calls of
/// different queues run in parallel up to `consume_concurrency`. A call
/// gets at most `consume_batch_max_size` messages (default 1).
///
/// A call that panics or exceeds the consume timeout counts as
/// [`OrderlyResult::SuspendCurrentQueueAMoment`] (as a Java exception or
/// `null` does).
///
/// For stateless handlers, [`orderly_listener_fn`] adapts a closure.
///
/// ```
/// use rmq_consumer_push::{MessageExt, OrderlyContext, OrderlyListener, OrderlyResult, async_trait};
///
/// struct Ledger;
///
/// #[async_trait]
/// impl OrderlyListener for Ledger {
///     async fn consume(&self, msgs: &[MessageExt], _ctx: &mut OrderlyContext) -> OrderlyResult {
///         for m in msgs {
///             if m.body.is_empty() {
///                 return OrderlyResult::SuspendCurrentQueueAMoment; // same messages again in 1 s
///             }
///         }
///         OrderlyResult::Success
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait OrderlyListener: Send + Sync + 'static {
    /// Consumes `msgs`, consecutive messages of one queue in offset order
    /// (`reconsume_times` counts the earlier suspended deliveries).
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut OrderlyContext) -> OrderlyResult;
}

#[async_trait::async_trait]
impl<L: OrderlyListener + ?Sized> OrderlyListener for Arc<L> {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut OrderlyContext) -> OrderlyResult {
        (**self).consume(msgs, ctx).await
    }
}

#[async_trait::async_trait]
impl<L: OrderlyListener + ?Sized> OrderlyListener for Box<L> {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut OrderlyContext) -> OrderlyResult {
        (**self).consume(msgs, ctx).await
    }
}

/// An [`OrderlyListener`] made from a closure by [`orderly_listener_fn`].
pub struct OrderlyFnListener<F> {
    f: F,
}

impl<F> fmt::Debug for OrderlyFnListener<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OrderlyFnListener").finish_non_exhaustive()
    }
}

/// Adapts a closure returning a boxed future into an [`OrderlyListener`]
/// (the same shape as [`listener_fn`](crate::listener_fn); see there why
/// the future is boxed).
///
/// ```
/// use rmq_consumer_push::{OrderlyResult, orderly_listener_fn};
///
/// let listener = orderly_listener_fn(|msgs, ctx| {
///     Box::pin(async move {
///         println!("{} message(s) of {}", msgs.len(), ctx.queue());
///         OrderlyResult::Success
///     })
/// });
/// # let _ = listener;
/// ```
pub fn orderly_listener_fn<F>(f: F) -> OrderlyFnListener<F>
where
    F: for<'a> Fn(&'a [MessageExt], &'a mut OrderlyContext) -> BoxFuture<'a, OrderlyResult>
        + Send
        + Sync
        + 'static,
{
    OrderlyFnListener { f }
}

#[async_trait::async_trait]
impl<F> OrderlyListener for OrderlyFnListener<F>
where
    F: for<'a> Fn(&'a [MessageExt], &'a mut OrderlyContext) -> BoxFuture<'a, OrderlyResult>
        + Send
        + Sync
        + 'static,
{
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut OrderlyContext) -> OrderlyResult {
        (self.f)(msgs, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn closure_adapter_and_context() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let listener = orderly_listener_fn(move |msgs, ctx| {
            let seen = seen.clone();
            Box::pin(async move {
                seen.fetch_add(msgs.len(), Ordering::SeqCst);
                ctx.set_auto_commit(false);
                ctx.set_suspend_current_queue_time(Duration::from_millis(1));
                OrderlyResult::Rollback
            })
        });
        let listener: Arc<dyn OrderlyListener> = Arc::new(listener);
        let mut ctx = OrderlyContext::new(MessageQueue::new("T", "b", 2), Duration::from_secs(1));
        assert!(ctx.auto_commit());
        assert_eq!(ctx.suspend_current_queue_time(), Duration::from_secs(1));
        let r = listener.consume(&[MessageExt::default()], &mut ctx).await;
        assert_eq!(r, OrderlyResult::Rollback);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(!ctx.auto_commit());
        assert_eq!(ctx.queue().queue_id, 2);
        // Java clamps to [10 ms, 30 s].
        assert_eq!(ctx.effective_suspend(), MIN_SUSPEND);
        ctx.set_suspend_current_queue_time(Duration::from_secs(60));
        assert_eq!(ctx.effective_suspend(), MAX_SUSPEND);
        ctx.set_suspend_current_queue_time(Duration::from_millis(500));
        assert_eq!(ctx.effective_suspend(), Duration::from_millis(500));
    }
}
