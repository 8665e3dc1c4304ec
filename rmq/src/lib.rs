//! rmq: an async-native Rust client for Apache RocketMQ.
//!
//! This crate is the facade: it re-exports the layers (one feature each) and
//! a [`prelude`] with what the common case needs.
//!
//! ```no_run
//! use rmq::prelude::*;
//!
//! # async fn run() -> rmq::Result<()> {
//! let producer = Producer::builder().group("orders-producer").start().await?;
//! let sent = producer
//!     .send(Message::new("orders", "order created").with_tags("created"))
//!     .await?;
//! println!("{} stored at {} offset {}", sent.msg_id, sent.message_queue, sent.queue_offset);
//! producer.shutdown().await;
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

mod error;

pub use error::{Error, Result};

pub use rmq_client_core as client_core;
pub use rmq_protocol as protocol;
pub use rmq_remoting as remoting;

pub use rmq_client_core::{ClientConfig, Credentials, SendResult, SendStatus};
pub use rmq_protocol::{Message, MessageExt, MessageQueue};
/// TLS settings (feature `tls`).
#[cfg(feature = "tls")]
pub use rmq_remoting::TlsConfig;

/// The producer layer.
#[cfg(feature = "producer")]
pub use rmq_producer as producer;
#[cfg(all(feature = "producer", not(feature = "consumer-push")))]
pub use rmq_producer::async_trait;
#[cfg(feature = "producer")]
pub use rmq_producer::{Producer, ProducerBuilder, select_by_hash};
#[cfg(feature = "producer")]
pub use rmq_producer::{
    TransactionListener, TransactionProducer, TransactionProducerBuilder, TransactionState,
    transaction_fn,
};

/// The push consumer layer.
#[cfg(feature = "consumer-push")]
pub use rmq_consumer_push as consumer_push;
#[cfg(feature = "consumer-push")]
pub use rmq_consumer_push::{
    ConsumeContext, ConsumeFrom, ConsumeResult, MessageListener, MessageModel, OrderlyContext,
    OrderlyListener, OrderlyResult, PushConsumer, PushConsumerBuilder, async_trait, listener_fn,
    orderly_listener_fn,
};

/// The pull consumers' layer.
#[cfg(feature = "consumer-pull")]
pub use rmq_consumer_pull as consumer_pull;
#[cfg(feature = "consumer-pull")]
pub use rmq_consumer_pull::{
    Expression, LitePullConsumer, LitePullConsumerBuilder, MessageStream, PullConsumer,
    PullConsumerBuilder, PullStatus,
};
/// The pop consumer (RocketMQ 5.x).
#[cfg(feature = "consumer-pull")]
pub use rmq_consumer_pull::{
    ReceiptHandle, ReceivedMessage, SimpleConsumer, SimpleConsumerBuilder,
};

/// What every consumer shares (subscriptions, group options, lifecycle).
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
pub use rmq_consumer_base as consumer_base;
/// Consumer offset stores: the built-in ones and the trait for one's own.
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
pub use rmq_offset_store as offset_store;
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
pub use rmq_offset_store::{OffsetStore, OffsetTable, PersistMode, ReadOffsetType};

/// What the common case needs: `use rmq::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "tls")]
    pub use crate::TlsConfig;
    #[cfg(all(feature = "producer", not(feature = "consumer-push")))]
    pub use crate::async_trait;
    pub use crate::{
        ClientConfig, Credentials, Message, MessageExt, MessageQueue, SendResult, SendStatus,
    };
    #[cfg(feature = "consumer-push")]
    pub use crate::{
        ConsumeContext, ConsumeFrom, ConsumeResult, MessageListener, MessageModel, OrderlyContext,
        OrderlyListener, OrderlyResult, PushConsumer, async_trait, listener_fn,
        orderly_listener_fn,
    };
    #[cfg(feature = "producer")]
    pub use crate::{
        Producer, TransactionListener, TransactionProducer, TransactionState, select_by_hash,
        transaction_fn,
    };
}
