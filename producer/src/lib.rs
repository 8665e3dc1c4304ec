//! The RocketMQ producer of rmq: send, oneway, to a queue, with a queue
//! selector (ordered sends), batches, delay levels; retries on another
//! broker and latency fault tolerance, with the Java client's defaults.
//!
//! ```no_run
//! use rmq_producer::{Message, Producer, select_by_hash};
//!
//! # async fn demo() -> rmq_error::Result<()> {
//! let producer = Producer::builder()
//!     .group("orders-producer") // name servers default to NAMESRV_ADDR
//!     .start()
//!     .await?;
//!
//! let sent = producer
//!     .send(Message::new("orders", "created").with_tags("created").with_keys(["order-42"]))
//!     .await?;
//! println!("{} in {} at {}", sent.msg_id, sent.message_queue, sent.queue_offset);
//!
//! // Ordered: every message of one order goes to one queue.
//! producer
//!     .send_with_selector(Message::new("orders", "paid"), select_by_hash("order-42"))
//!     .await?;
//!
//! producer.send_oneway(Message::new("orders", "ping")).await?;
//! producer.send(Message::new("orders", "later").with_delay_level(3)).await?;
//! producer
//!     .send_batch(vec![Message::new("orders", "a"), Message::new("orders", "b")])
//!     .await?;
//! producer.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! Transactional messages: [`ProducerBuilder::transaction_listener`] with an
//! async [`TransactionListener`] makes a [`TransactionProducer`]
//! (`send_in_transaction`, check-backs).
//!
//! RocketMQ 5.x: [`Producer::recall`] recalls a timer message before its
//! delivery (5.3.2+, with the send result's `recall_handle`);
//! [`Message::with_priority`] (5.4+) and [`Message::with_lite_topic`] (5.5+)
//! send priority and lite-topic messages; an older broker gets a typed
//! "unsupported" refusal, never a silent downgrade. [`Producer::request`]
//! sends a request and waits for its reply, which the replier makes with
//! [`create_reply_message`] (remoting, 4.9.x and 5.x).
//!
//! Every public call returns [`rmq_error::Error`] (`rmq::Error` in the
//! facade): `kind()`, `is_retryable()`, `is_timeout()`, and a `Display` that
//! prints the whole cause chain. It wraps this crate's detailed [`Error`]
//! (`e.downcast_ref::<rmq_producer::Error>()`), whose variants the methods'
//! `# Errors` sections name. A failed send's error hands the message back
//! ([`UnsentExt::into_message`]) with the `UNIQ_KEY` it was given, so a
//! resend keeps its id. See `DESIGN.md` in the crate for the send path.
#![warn(missing_docs)]

mod batching;
mod builder;
mod config;
mod error;
mod fault;
mod grpc;
mod health;
mod message_trace;
mod msg_id;
mod prepare;
mod producer;
mod recall;
mod request;
mod route;
mod selector;
mod send;
pub mod telemetry;
mod transaction;
mod validate;

/// Re-exported for implementing [`TransactionListener`].
pub use async_trait::async_trait;
pub use batching::Batching;
pub use builder::ProducerBuilder;
pub use config::{DEFAULT_PRODUCER_GROUP, ProducerConfig};
pub use error::{Error, InvalidMessage, Result, Unsent, UnsentExt};
pub use health::{ProducerEvent, ProducerState};
pub use producer::Producer;
pub use recall::RecallError;
pub use rmq_client_core::{ClientConfig, SendResult, SendStatus};
pub use rmq_protocol::message::{CompressionType, RecallHandle, create_reply_message};
pub use rmq_protocol::{Message, MessageExt, MessageQueue};
pub use selector::{JavaHashCode, hash_index, select_by_hash};
pub use transaction::{
    DEFAULT_CHECK_CONCURRENCY, DEFAULT_CHECK_QUEUE_CAPACITY, DEFAULT_LISTENER_TIMEOUT,
    FnTransactionListener, TransactionListener, TransactionProducer, TransactionProducerBuilder,
    TransactionState, transaction_fn,
};
pub use validate::{
    AUTO_CREATE_TOPIC, FORBIDDEN_TOPICS, GROUP_MAX_LEN, RETRY_TOPIC_PREFIX, TOPIC_MAX_LEN,
    check_batch, check_message, check_topic,
};
