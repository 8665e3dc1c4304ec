//! The local-transaction side of transactional messages: [`TransactionState`],
//! the async [`TransactionListener`] and the closure adapter
//! [`transaction_fn`].

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmq_protocol::header::EndTransactionRequestHeader;
use rmq_protocol::{Message, MessageExt};

/// The state of a local transaction (Java `LocalTransactionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionState {
    /// The local transaction committed: the broker delivers the message.
    Commit,
    /// The local transaction rolled back: the broker drops the message.
    Rollback,
    /// Not known (yet): the broker asks again later with
    /// [`TransactionListener::check`], every `transactionCheckInterval`, at
    /// most `transactionCheckMax` times (default 15), then drops the
    /// message.
    Unknown,
}

impl TransactionState {
    /// The END_TRANSACTION `commitOrRollback` value (Java
    /// `MessageSysFlag.TRANSACTION_*_TYPE`).
    pub fn commit_or_rollback(self) -> i32 {
        match self {
            TransactionState::Commit => EndTransactionRequestHeader::COMMIT,
            TransactionState::Rollback => EndTransactionRequestHeader::ROLLBACK,
            TransactionState::Unknown => EndTransactionRequestHeader::NOT_TYPE,
        }
    }
}

impl fmt::Display for TransactionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransactionState::Commit => "commit",
            TransactionState::Rollback => "rollback",
            TransactionState::Unknown => "unknown",
        })
    }
}

/// The application's side of transactional messages (Java
/// `TransactionListener`), async: the local transaction can await a real
/// database.
///
/// * [`execute`](TransactionListener::execute) runs once per
///   [`send_in_transaction`](crate::TransactionProducer::send_in_transaction),
///   after the broker stored the half message (invisible to consumers),
///   in the caller's task, with the caller's `arg`. Its answer commits or
///   rolls the message back.
/// * [`check`](TransactionListener::check) runs when the broker asks for a
///   transaction it has no answer for (`Unknown`, a lost END_TRANSACTION, a
///   producer that crashed): on any producer of the group that is running,
///   on a bounded pool of tasks. It must find the outcome from durable
///   state (e.g. look the row up by the message's key), not from memory:
///   the producer that sent the message may be gone.
///
/// A panicking or timed-out `execute` or `check` counts as
/// [`TransactionState::Unknown`], never as a commit.
///
/// ```
/// use rmq_producer::{Message, MessageExt, TransactionListener, TransactionState, async_trait};
///
/// struct Orders; // e.g. holding a database pool
///
/// #[async_trait]
/// impl TransactionListener<u64> for Orders {
///     async fn execute(&self, msg: &Message, order_id: u64) -> TransactionState {
///         // INSERT the order row, keyed by `order_id` (also the message key) ...
///         let _ = (msg, order_id);
///         TransactionState::Commit
///     }
///
///     async fn check(&self, msg: &MessageExt) -> TransactionState {
///         // SELECT the row by `msg.keys()`: found → Commit, absent → Rollback.
///         let _ = msg;
///         TransactionState::Rollback
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait TransactionListener<A = ()>: Send + Sync + 'static
where
    A: Send + 'static,
{
    /// Runs the local transaction for `msg` (the half message as sent: its
    /// [`unique_key`](Message::unique_key) is the id
    /// [`check`](TransactionListener::check) later sees as `msg_id`).
    async fn execute(&self, msg: &Message, arg: A) -> TransactionState;

    /// Finds the outcome of the local transaction of `msg` (the half
    /// message as the broker stored it; `msg_id` is its `UNIQ_KEY`).
    async fn check(&self, msg: &MessageExt) -> TransactionState;
}

#[async_trait::async_trait]
impl<A, L> TransactionListener<A> for Arc<L>
where
    A: Send + 'static,
    L: TransactionListener<A> + ?Sized,
{
    async fn execute(&self, msg: &Message, arg: A) -> TransactionState {
        (**self).execute(msg, arg).await
    }

    async fn check(&self, msg: &MessageExt) -> TransactionState {
        (**self).check(msg).await
    }
}

/// A [`TransactionListener`] made of two closures by [`transaction_fn`].
pub struct FnTransactionListener<E, C> {
    execute: E,
    check: C,
}

impl<E, C> fmt::Debug for FnTransactionListener<E, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTransactionListener")
            .finish_non_exhaustive()
    }
}

/// Adapts two closures returning boxed futures into a
/// [`TransactionListener`]: `execute(msg, arg)` and `check(msg)`.
///
/// ```
/// use rmq_producer::{TransactionState, transaction_fn};
///
/// let listener = transaction_fn(
///     |msg, order_id: u64| {
///         Box::pin(async move {
///             let _ = (msg, order_id); // write the order ...
///             TransactionState::Commit
///         })
///     },
///     |msg| {
///         Box::pin(async move {
///             let _ = msg; // look the order up ...
///             TransactionState::Unknown
///         })
///     },
/// );
/// # let _ = listener;
/// ```
///
/// The futures borrow the message, so they are `BoxFuture<'a, _>` for a
/// message of lifetime `'a` (the shape of
/// `rmq_consumer_push::listener_fn`, and why it is not an `async` closure:
/// Rust 1.85 cannot promise a `Send` future for every borrow of one).
pub fn transaction_fn<A, E, C>(execute: E, check: C) -> FnTransactionListener<E, C>
where
    A: Send + 'static,
    E: for<'a> Fn(&'a Message, A) -> BoxFuture<'a, TransactionState> + Send + Sync + 'static,
    C: for<'a> Fn(&'a MessageExt) -> BoxFuture<'a, TransactionState> + Send + Sync + 'static,
{
    FnTransactionListener { execute, check }
}

#[async_trait::async_trait]
impl<A, E, C> TransactionListener<A> for FnTransactionListener<E, C>
where
    A: Send + 'static,
    E: for<'a> Fn(&'a Message, A) -> BoxFuture<'a, TransactionState> + Send + Sync + 'static,
    C: for<'a> Fn(&'a MessageExt) -> BoxFuture<'a, TransactionState> + Send + Sync + 'static,
{
    async fn execute(&self, msg: &Message, arg: A) -> TransactionState {
        (self.execute)(msg, arg).await
    }

    async fn check(&self, msg: &MessageExt) -> TransactionState {
        (self.check)(msg).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values() {
        assert_eq!(TransactionState::Commit.commit_or_rollback(), 8);
        assert_eq!(TransactionState::Rollback.commit_or_rollback(), 12);
        assert_eq!(TransactionState::Unknown.commit_or_rollback(), 0);
        assert_eq!(TransactionState::Rollback.to_string(), "rollback");
    }

    #[tokio::test]
    async fn closures_and_arcs_are_listeners() {
        let l = Arc::new(transaction_fn(
            |msg: &Message, n: u32| {
                Box::pin(async move {
                    if n == 1 && msg.topic == "t" {
                        TransactionState::Commit
                    } else {
                        TransactionState::Rollback
                    }
                })
            },
            |msg: &MessageExt| {
                Box::pin(async move {
                    if msg.body.is_empty() {
                        TransactionState::Unknown
                    } else {
                        TransactionState::Commit
                    }
                })
            },
        ));
        let msg = Message::new("t", "x");
        assert_eq!(l.execute(&msg, 1).await, TransactionState::Commit);
        assert_eq!(l.execute(&msg, 2).await, TransactionState::Rollback);
        let dynamic: Arc<dyn TransactionListener<u32>> = l;
        assert_eq!(
            dynamic.check(&MessageExt::default()).await,
            TransactionState::Unknown
        );
    }
}
