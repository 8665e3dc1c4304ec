//! rmq: an async-native Rust client for Apache RocketMQ.
//!
//! This crate is the facade: it re-exports the layers (one feature each:
//! `producer`, `consumer-push`, `consumer-pull`, all on by default, and
//! `tls`) and a [`prelude`] with what the common case needs. Every type a
//! signature of the producer or the consumers names is reachable as
//! `rmq::...`; every error converts into [`rmq::Error`](Error) with `?`.
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
//! producer.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Name servers default to the `NAMESRV_ADDR` environment variable; set
//! them on any builder with `namesrv_addr("a:9876;b:9876")` or
//! `namesrv_addrs(["a:9876", "b:9876"])`:
//!
//! ```no_run
//! # async fn run() -> rmq::Result<()> {
//! let producer = rmq::Producer::builder()
//!     .group("orders-producer")
//!     .namesrv_addrs(["10.0.0.1:9876", "10.0.0.2:9876"])
//!     .start()
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! Errors print their whole cause chain, and say what to fix:
//!
//! ```
//! let e = rmq::ClientConfig::builder().namesrv_addr("localhost").build().unwrap_err();
//! let e = rmq::Error::from(e);
//! assert_eq!(
//!     e.to_string(),
//!     "invalid client configuration: name-server address \"localhost\" is not host:port \
//!      (e.g. \"127.0.0.1:9876\")"
//! );
//! ```
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;

pub use error::{Error, ErrorExt, ErrorKind, Result};

pub use rmq_client_core as client_core;
pub use rmq_protocol as protocol;
pub use rmq_remoting as remoting;

/// The client configuration shared by producers and consumers.
///
/// ```
/// use std::time::Duration;
///
/// let config = rmq::ClientConfig::builder()
///     .namesrv_addrs(["127.0.0.1:9876"])
///     .request_timeout(Duration::from_secs(3))
///     .build()?;
/// assert_eq!(config.namesrv_addrs(), ["127.0.0.1:9876"]);
/// # Ok::<(), rmq::Error>(())
/// ```
pub use rmq_client_core::ClientConfig;
pub use rmq_client_core::{
    BrokerVersion, ClientConfigBuilder, Credentials, PullStatus, SendResult, SendStatus,
};
/// A message to send.
///
/// ```
/// use std::time::Duration;
///
/// let msg = rmq::Message::new("orders", "order created")
///     .with_tags("created")
///     .with_key("order-42")
///     .with_property("region", "eu")
///     .deliver_after(Duration::from_secs(60)); // 5.x brokers: a timer message
/// assert_eq!(msg.tags(), Some("created"));
/// assert!(msg.deliver_time().is_some());
/// ```
pub use rmq_protocol::Message;
pub use rmq_protocol::message::CompressionType;
pub use rmq_protocol::message::property;
pub use rmq_protocol::{ErrorChain, MessageExt, MessageQueue, ResponseCode};
/// TLS settings (feature `tls`).
///
/// ```no_run
/// let config = rmq::ClientConfig::builder()
///     .tls(rmq::TlsConfig::new().with_ca_file("/etc/rocketmq/ca.pem"))
///     .build()?;
/// # Ok::<(), rmq::Error>(())
/// ```
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use rmq_remoting::TlsConfig;

/// A broker address's reachability, as the heartbeats see it (what the
/// producer and consumer `BrokerConnectionLost` / `BrokerConnectionRestored`
/// events carry).
pub use rmq_client_core::BrokerLink;
/// The producer layer.
#[cfg(feature = "producer")]
#[cfg_attr(docsrs, doc(cfg(feature = "producer")))]
pub use rmq_producer as producer;
/// The producer: sync, oneway, ordered, batch and delivery-time sends.
///
/// ```no_run
/// use rmq::{Message, Producer};
///
/// # async fn run() -> rmq::Result<()> {
/// let producer = Producer::builder().group("orders-producer").start().await?;
/// let sent = producer.send(Message::new("orders", "created")).await?;
/// producer.send_oneway(Message::new("metrics", "ping")).await?;
/// producer
///     .send_batch(vec![Message::new("orders", "a"), Message::new("orders", "b")])
///     .await?;
/// println!("{} at offset {}", sent.msg_id, sent.queue_offset);
/// producer.shutdown().await?;
/// # Ok(())
/// # }
/// ```
///
/// A failed send hands the message back:
///
/// ```no_run
/// # async fn run(producer: rmq::Producer, msg: rmq::Message) {
/// if let Err(e) = producer.send(msg).await {
///     if e.is_retryable() {
///         let msg = e.into_message(); // send it again later
///     }
/// }
/// # }
/// ```
#[cfg(feature = "producer")]
#[cfg_attr(docsrs, doc(cfg(feature = "producer")))]
pub use rmq_producer::Producer;
/// Builds a [`Producer`]; every setter names the Java default.
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn run() -> rmq::Result<()> {
/// let producer = rmq::Producer::builder()
///     .group("orders-producer")
///     .send_timeout(Duration::from_secs(3))
///     .retry_times_when_send_failed(2)
///     .compression_type(rmq::CompressionType::Zstd)
///     .start()
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "producer")]
#[cfg_attr(docsrs, doc(cfg(feature = "producer")))]
pub use rmq_producer::ProducerBuilder;
#[cfg(all(feature = "producer", not(feature = "consumer-push")))]
pub use rmq_producer::async_trait;
/// A queue selector for ordered messages: every message of one key goes to
/// one queue (Java `SelectMessageQueueByHash`).
///
/// ```no_run
/// # async fn run(producer: rmq::Producer) -> rmq::Result<()> {
/// let order_id = "order-42";
/// producer
///     .send_with_selector(rmq::Message::new("orders", "paid"), rmq::select_by_hash(order_id))
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "producer")]
#[cfg_attr(docsrs, doc(cfg(feature = "producer")))]
pub use rmq_producer::select_by_hash;
#[cfg(feature = "producer")]
#[cfg_attr(docsrs, doc(cfg(feature = "producer")))]
pub use rmq_producer::{
    InvalidMessage, JavaHashCode, ProducerConfig, TransactionListener, TransactionProducer,
    TransactionProducerBuilder, TransactionState, Unsent, hash_index, transaction_fn,
};
/// A producer's health: [`Producer::state`] and [`Producer::events`].
///
/// ```no_run
/// use futures::StreamExt;
/// use rmq::{Producer, ProducerEvent};
///
/// # async fn run() -> rmq::Result<()> {
/// let producer = Producer::builder().group("orders-producer").start().await?;
/// let mut events = producer.events();
/// tokio::spawn(async move {
///     while let Some(event) = events.next().await {
///         match event {
///             ProducerEvent::BrokerConnectionLost { addr, error } => eprintln!("{addr} lost: {error}"),
///             ProducerEvent::BrokerConnectionRestored { addr } => eprintln!("{addr} back"),
///             _ => {}
///         }
///     }
/// });
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "producer")]
#[cfg_attr(docsrs, doc(cfg(feature = "producer")))]
pub use rmq_producer::{ProducerEvent, ProducerState};

/// The push consumer layer.
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push as consumer_push;
/// A listener that carries state: implement the trait.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use rmq::prelude::*;
///
/// struct Counter(Arc<AtomicUsize>);
///
/// #[async_trait]
/// impl MessageListener for Counter {
///     async fn consume(&self, msgs: &[MessageExt], _ctx: &mut ConsumeContext) -> ConsumeResult {
///         self.0.fetch_add(msgs.len(), Ordering::Relaxed);
///         ConsumeResult::Success
///     }
/// }
/// # async fn run() -> rmq::Result<()> {
/// let consumer = PushConsumer::builder()
///     .group("counter")
///     .subscribe("orders", "*")
///     .start(Counter(Arc::default()))
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::MessageListener;
/// The push consumer: the client pulls, calls the listener, commits.
///
/// ```no_run
/// use rmq::prelude::*;
///
/// # async fn run() -> rmq::Result<()> {
/// let consumer = PushConsumer::builder()
///     .group("orders-consumer")
///     .subscribe("orders", "created || paid")
///     .start(listener_fn(|msgs, _ctx| Box::pin(async move {
///         for m in msgs {
///             println!("{} {:?}", m.msg_id, m.message.tags());
///         }
///         ConsumeResult::Success
///     })))
///     .await?;
/// tokio::signal::ctrl_c().await.ok();
/// consumer.shutdown().await?; // drain, commit offsets, unregister
/// # Ok(())
/// # }
/// ```
///
/// What each queue holds, for monitoring:
///
/// ```no_run
/// # fn show(consumer: &rmq::PushConsumer) {
/// for q in consumer.inspect() {
///     println!("{q:?}");
/// }
/// # }
/// ```
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::PushConsumer;
/// Builds a [`PushConsumer`]; every setter names the Java default.
///
/// ```no_run
/// use std::time::Duration;
/// use rmq::prelude::*;
///
/// # async fn run() -> rmq::Result<()> {
/// let consumer = PushConsumer::builder()
///     .group("billing")
///     .subscribe_sql("orders", "amount > 100")
///     .consume_from(ConsumeFrom::FirstOffset)
///     .allocate_strategy(rmq::AllocateAveragelyByCircle)
///     .consume_concurrency(32)
///     .max_reconsume(MaxReconsume::Times(5)) // then %DLQ%<group>; or MaxReconsume::Unlimited
///     .consume_timeout(Duration::from_secs(15 * 60))
///     .start(listener_fn(|_msgs, _ctx| Box::pin(async { ConsumeResult::Success })))
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::PushConsumerBuilder;
/// A listener from an async body, without `Box::pin`; `clone(..)` clones
/// captured handles into each call.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use rmq::prelude::*;
///
/// # async fn run() -> rmq::Result<()> {
/// let done = Arc::new(AtomicUsize::new(0));
/// let consumer = PushConsumer::builder()
///     .group("orders-consumer")
///     .subscribe("orders", "*")
///     .start(rmq::listener!(clone(done) async |msgs, ctx| {
///         for m in msgs {
///             if m.body.is_empty() {
///                 ctx.set_retry(Retry::Level(3));
///                 return ConsumeResult::ReconsumeLater;
///             }
///         }
///         done.fetch_add(msgs.len(), Ordering::Relaxed);
///         ConsumeResult::Success
///     }))
///     .await?;
/// consumer.shutdown().await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::listener;
/// A listener from a closure (concurrent consumption); the
/// [`listener!`](crate::listener!) macro writes the `Box::pin` for you.
///
/// ```no_run
/// use rmq::prelude::*;
///
/// let listener = listener_fn(|msgs, ctx| Box::pin(async move {
///     if msgs.iter().any(|m| m.message.body.is_empty()) {
///         ctx.set_retry(Retry::Level(3)); // back through %RETRY%<group> after level 3
///         // Retry::Dlq: straight to %DLQ%<group>; Retry::Broker: the broker's schedule
///         return ConsumeResult::ReconsumeLater;
///     }
///     ConsumeResult::Success
/// }));
/// # let _ = listener;
/// ```
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::listener_fn;
/// An orderly listener from an async body, without `Box::pin`.
///
/// ```
/// use rmq::prelude::*;
///
/// let listener = rmq::orderly_listener!(async |msgs, _ctx| {
///     println!("{} messages in order", msgs.len());
///     OrderlyResult::Success
/// });
/// # let _ = listener;
/// ```
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::orderly_listener;
/// An orderly listener from a closure: each queue in offset order.
///
/// ```no_run
/// use rmq::prelude::*;
///
/// # async fn run() -> rmq::Result<()> {
/// let consumer = PushConsumer::builder()
///     .group("ledger")
///     .subscribe("transfers", "*")
///     .start_orderly(orderly_listener_fn(|msgs, _ctx| Box::pin(async move {
///         for m in msgs {
///             println!("{} in order on {}", m.queue_offset, m.queue_id);
///         }
///         OrderlyResult::Success
///     })))
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::orderly_listener_fn;
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::{
    ConsumeContext, ConsumeResult, FnListener, OrderlyContext, OrderlyFnListener, OrderlyListener,
    OrderlyResult, PushConsumerConfig, QueueSnapshot, async_trait,
};
/// One message of [`PushConsumer::start_stream`]: `ack()`,
/// `reconsume_later()`, or dropped (= reconsume later).
#[cfg(feature = "consumer-push")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
pub use rmq_consumer_push::{Delivery, DeliveryStream};

/// The pull consumers' layer.
#[cfg(feature = "consumer-pull")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-pull")))]
pub use rmq_consumer_pull as consumer_pull;
/// The lite pull consumer: a `Stream` (or `poll`) of the subscribed or
/// assigned queues' messages.
///
/// ```no_run
/// use futures::StreamExt;
/// use rmq::LitePullConsumer;
///
/// # async fn run() -> rmq::Result<()> {
/// let consumer = LitePullConsumer::builder()
///     .group("analytics")
///     .subscribe("clicks", "*")
///     .auto_commit(false)
///     .start()
///     .await?;
/// let mut messages = consumer.stream(); // bounded: a slow reader slows pulling
/// while let Some(msg) = messages.next().await {
///     let msg = msg?;
///     println!("{}", msg.msg_id);
///     consumer.commit().await?; // everything handed out so far
/// }
/// consumer.shutdown().await?;
/// # Ok(())
/// # }
/// ```
///
/// Batches with `poll`, positions with `seek`:
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn run(consumer: rmq::LitePullConsumer) -> rmq::Result<()> {
/// for queue in consumer.assignment() {
///     consumer.seek_to_begin(&queue).await?;
/// }
/// let batch = consumer.poll(Duration::from_secs(1)).await?;
/// println!("{} messages", batch.len());
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "consumer-pull")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-pull")))]
pub use rmq_consumer_pull::LitePullConsumer;
/// Builds a [`LitePullConsumer`].
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn run() -> rmq::Result<()> {
/// let queue = rmq::MessageQueue::new("clicks", "broker-a", 0);
/// let consumer = rmq::LitePullConsumer::builder()
///     .group("replayer")
///     .assign([queue])
///     .auto_commit_interval(Duration::from_secs(5))
///     .poll_batch_size(64)
///     .start()
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "consumer-pull")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-pull")))]
pub use rmq_consumer_pull::LitePullConsumerBuilder;
/// The explicit pull consumer: the application names queue and offset.
///
/// ```no_run
/// # async fn run() -> rmq::Result<()> {
/// let pull = rmq::PullConsumer::builder().group("replay").start().await?;
/// for queue in pull.fetch_subscribe_queues("orders").await? {
///     let mut offset = pull.min_offset(&queue).await?;
///     loop {
///         let result = pull.pull(&queue, "*", offset, 32).await?;
///         println!("{} messages", result.messages.len());
///         if result.next_begin_offset == offset {
///             break;
///         }
///         offset = result.next_begin_offset;
///     }
/// }
/// pull.shutdown().await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "consumer-pull")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-pull")))]
pub use rmq_consumer_pull::PullConsumer;
/// Builds a [`PullConsumer`].
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn run() -> rmq::Result<()> {
/// let pull = rmq::PullConsumer::builder()
///     .group("replay")
///     .register_topic("orders")
///     .pull_timeout(Duration::from_secs(10))
///     .start()
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "consumer-pull")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-pull")))]
pub use rmq_consumer_pull::PullConsumerBuilder;
#[cfg(feature = "consumer-pull")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer-pull")))]
pub use rmq_consumer_pull::{
    BufferStats, LitePullConsumerConfig, MessageStream, PullConsumerConfig, PullResult,
};
/// The pop consumer (RocketMQ 5.x).
#[cfg(feature = "consumer-pull")]
pub use rmq_consumer_pull::{
    ReceiptHandle, ReceivedMessage, SimpleConsumer, SimpleConsumerBuilder,
};

/// What every consumer shares (subscriptions, group options, lifecycle).
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_consumer_base as consumer_base;
/// A subscription's filter: a tag expression or SQL92.
///
/// ```
/// let by_tag = rmq::Expression::tag("created || paid");
/// let by_sql = rmq::Expression::sql("amount > 100");
/// let from_str: rmq::Expression = "*".into();
/// # let _ = (by_tag, by_sql, from_str);
/// ```
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_consumer_base::Expression;
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_consumer_base::{ConsumeFrom, GroupOptions, MaxReconsume, Retry, Subscription};
/// A consumer's health: `state()`, `watch_state()` and `events()` of every
/// consumer, and the rebalance callbacks.
///
/// ```no_run
/// use futures::StreamExt;
/// use rmq::{ConsumerEvent, LitePullConsumer};
///
/// # async fn run() -> rmq::Result<()> {
/// let consumer = LitePullConsumer::builder().group("g").subscribe("t", "*").start().await?;
/// let mut events = consumer.events();
/// while let Some(event) = events.next().await {
///     match event {
///         ConsumerEvent::TopicNotFound { topic } => eprintln!("create {topic}"),
///         ConsumerEvent::BrokerConnectionLost { addr, .. } => eprintln!("{addr} lost"),
///         ConsumerEvent::BrokerConnectionRestored { addr } => eprintln!("{addr} back"),
///         ConsumerEvent::ShutDown => break,
///         _ => {}
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_consumer_base::{ConsumerEvent, ConsumerState, RebalanceListener};
/// Consumer offset stores: the built-in ones and the trait for one's own.
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_offset_store as offset_store;
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_offset_store::{OffsetStore, OffsetTable, PersistMode, ReadOffsetType};
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_protocol::body::{ExpressionType, MessageModel};
/// Queue allocation strategies, identical to Java's (a consumer group mixing
/// rmq and Java members must use the same one).
///
/// ```no_run
/// # async fn run() -> rmq::Result<()> {
/// let consumer = rmq::LitePullConsumer::builder()
///     .group("analytics")
///     .subscribe("clicks", "*")
///     .allocate_strategy(rmq::AllocateConsistentHash::new(10))
///     .start()
///     .await?;
/// # Ok(())
/// # }
/// ```
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_rebalance::AllocateStrategy;
#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
)]
pub use rmq_rebalance::{
    AllocateAveragely, AllocateAveragelyByCircle, AllocateByConfig, AllocateByMachineRoom,
    AllocateConsistentHash, AllocateError, AllocateMachineRoomNearby, HashFunction,
    MachineRoomResolver, Md5Hash,
};

/// What the common case needs: `use rmq::prelude::*;` brings in the three
/// consumers, the producer, messages, the listener helpers and the result
/// enums.
///
/// ```no_run
/// use rmq::prelude::*;
///
/// # async fn run() -> rmq::Result<()> {
/// let producer = Producer::builder().group("p").start().await?;
/// let lite = LitePullConsumer::builder().group("l").subscribe("t", "*").start().await?;
/// let pull = PullConsumer::builder().group("x").start().await?;
/// let push = PushConsumer::builder()
///     .group("c")
///     .subscribe("t", Expression::tag("*"))
///     .consume_from(ConsumeFrom::LastOffset)
///     .start(listener_fn(|_m, _c| Box::pin(async { ConsumeResult::Success })))
///     .await?;
/// # Ok(())
/// # }
/// ```
pub mod prelude {
    #[cfg(feature = "tls")]
    pub use crate::TlsConfig;
    #[cfg(all(feature = "producer", not(feature = "consumer-push")))]
    pub use crate::async_trait;
    pub use crate::{
        ClientConfig, Credentials, Error, ErrorExt, ErrorKind, Message, MessageExt, MessageQueue,
        SendResult, SendStatus,
    };
    #[cfg(feature = "consumer-push")]
    pub use crate::{
        ConsumeContext, ConsumeResult, MessageListener, OrderlyContext, OrderlyListener,
        OrderlyResult, PushConsumer, async_trait, listener_fn, orderly_listener_fn,
    };
    #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
    pub use crate::{ConsumeFrom, Expression, MaxReconsume, MessageModel, Retry};
    #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
    pub use crate::{ConsumerEvent, ConsumerState};
    #[cfg(feature = "consumer-pull")]
    pub use crate::{LitePullConsumer, PullConsumer, PullStatus};
    #[cfg(feature = "producer")]
    pub use crate::{
        Producer, TransactionListener, TransactionProducer, TransactionState, select_by_hash,
        transaction_fn,
    };
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
