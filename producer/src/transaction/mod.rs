//! Transactional messages (Java `TransactionMQProducer`): a half message the
//! broker keeps invisible, the application's local transaction
//! ([`TransactionListener::execute`]), then END_TRANSACTION commit /
//! rollback; for transactions left open, the broker's check-backs
//! (CHECK_TRANSACTION_STATE, answered by [`TransactionListener::check`] on a
//! bounded pool of tasks).
//!
//! | file | what |
//! |---|---|
//! | `listener.rs` | [`TransactionState`], [`TransactionListener`], [`transaction_fn`] |
//! | `builder.rs` | [`ProducerBuilder::transaction_listener`](crate::ProducerBuilder::transaction_listener), [`TransactionProducerBuilder`] |
//! | `producer.rs` | [`TransactionProducer`]: `send_in_transaction`, END_TRANSACTION, `shutdown` |
//! | `check.rs` | the check queue registered in the client instance, the dispatcher, the answers |

mod builder;
mod check;
mod listener;
mod producer;

pub use builder::{
    DEFAULT_CHECK_CONCURRENCY, DEFAULT_CHECK_QUEUE_CAPACITY, DEFAULT_LISTENER_TIMEOUT,
    TransactionProducerBuilder,
};
pub use listener::{FnTransactionListener, TransactionListener, TransactionState, transaction_fn};
pub use producer::TransactionProducer;
