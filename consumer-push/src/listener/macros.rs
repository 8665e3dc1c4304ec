//! `listener!` and `orderly_listener!`: closures as listeners without the
//! `Box::pin` and without cloning captured handles by hand.

/// A [`MessageListener`](crate::MessageListener) from an async body: what
/// [`listener_fn`](crate::listener_fn) takes, with the `Box::pin` written
/// for you. `clone(a, b)` first clones those captured values (an `Arc`
/// counter, a channel sender, a client) into each call.
///
/// The form reads like a Rust 1.85 async closure. A real `async |msgs, ctx|`
/// closure cannot be taken directly: the consumer runs each call as a
/// tokio task, so its future must be `Send`, and stable Rust cannot yet
/// require that of an `AsyncFn`'s future (return-type notation).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use rmq_consumer_push::{ConsumeResult, Retry, listener};
///
/// let seen = Arc::new(AtomicUsize::new(0));
/// let listener = listener!(clone(seen) async |msgs, ctx| {
///     for m in msgs {
///         if m.body.is_empty() {
///             ctx.set_retry(Retry::Level(3));
///             return ConsumeResult::ReconsumeLater;
///         }
///     }
///     seen.fetch_add(msgs.len(), Ordering::Relaxed);
///     ConsumeResult::Success
/// });
/// // Without captured handles:
/// let quiet = listener!(async |_msgs, _ctx| ConsumeResult::Success);
/// # let _ = (listener, quiet);
/// ```
#[macro_export]
macro_rules! listener {
    (clone($($c:ident),* $(,)?) $(async)? $(move)? |$msgs:tt $(: $mt:ty)?, $ctx:tt $(: $ct:ty)?| $($body:tt)+) => {
        $crate::listener_fn(move |$msgs $(: $mt)?, $ctx $(: $ct)?| {
            $(let $c = ::std::clone::Clone::clone(&$c);)*
            ::std::boxed::Box::pin(async move { $($body)+ })
        })
    };
    ($(async)? $(move)? |$msgs:tt $(: $mt:ty)?, $ctx:tt $(: $ct:ty)?| $($body:tt)+) => {
        $crate::listener!(clone() |$msgs $(: $mt)?, $ctx $(: $ct)?| $($body)+)
    };
}

/// An [`OrderlyListener`](crate::OrderlyListener) from an async body: what
/// [`orderly_listener_fn`](crate::orderly_listener_fn) takes, with the
/// `Box::pin` written for you; `clone(..)` as in [`listener!`](crate::listener!).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicI64, Ordering};
/// use rmq_consumer_push::{OrderlyResult, orderly_listener};
///
/// let last = Arc::new(AtomicI64::new(-1));
/// let listener = orderly_listener!(clone(last) async |msgs, _ctx| {
///     for m in msgs {
///         last.store(m.queue_offset, Ordering::Relaxed);
///     }
///     OrderlyResult::Success
/// });
/// # let _ = listener;
/// ```
#[macro_export]
macro_rules! orderly_listener {
    (clone($($c:ident),* $(,)?) $(async)? $(move)? |$msgs:tt $(: $mt:ty)?, $ctx:tt $(: $ct:ty)?| $($body:tt)+) => {
        $crate::orderly_listener_fn(move |$msgs $(: $mt)?, $ctx $(: $ct)?| {
            $(let $c = ::std::clone::Clone::clone(&$c);)*
            ::std::boxed::Box::pin(async move { $($body)+ })
        })
    };
    ($(async)? $(move)? |$msgs:tt $(: $mt:ty)?, $ctx:tt $(: $ct:ty)?| $($body:tt)+) => {
        $crate::orderly_listener!(clone() |$msgs $(: $mt)?, $ctx $(: $ct)?| $($body)+)
    };
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::{
        ConsumeContext, ConsumeResult, MessageExt, MessageListener, MessageQueue, OrderlyContext,
        OrderlyListener, OrderlyResult, Retry,
    };

    #[tokio::test]
    async fn listener_macro_clones_borrows_and_sets_context() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let listener = listener!(clone(seen) async |msgs, ctx: &mut ConsumeContext| {
            seen.fetch_add(msgs.len(), Ordering::SeqCst);
            ctx.set_retry(Retry::Dlq);
            ConsumeResult::ReconsumeLater
        });
        let msgs = vec![MessageExt::default(); 3];
        let mut ctx = ConsumeContext::new(MessageQueue::new("T", "b", 0));
        assert_eq!(
            listener.consume(&msgs, &mut ctx).await,
            ConsumeResult::ReconsumeLater
        );
        assert_eq!(
            listener.consume(&msgs, &mut ctx).await,
            ConsumeResult::ReconsumeLater
        );
        assert_eq!(calls.load(Ordering::SeqCst), 6);
        assert_eq!(ctx.retry(), Retry::Dlq);

        let plain = listener!(|_m, _c| ConsumeResult::Success);
        assert_eq!(plain.consume(&msgs, &mut ctx).await, ConsumeResult::Success);
    }

    #[tokio::test]
    async fn orderly_macro_runs_the_body() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let listener = orderly_listener!(clone(seen,) move |msgs, _ctx| {
            seen.fetch_add(msgs.len(), Ordering::SeqCst);
            OrderlyResult::Success
        });
        let msgs = vec![MessageExt::default(); 2];
        let mut ctx = OrderlyContext::new(
            MessageQueue::new("T", "b", 0),
            std::time::Duration::from_secs(1),
        );
        assert_eq!(
            listener.consume(&msgs, &mut ctx).await,
            OrderlyResult::Success
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
