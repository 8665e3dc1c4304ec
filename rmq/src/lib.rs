#![doc = include_str!("docs/crate.md")]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use rmq_error::{Error, ErrorExt, ErrorKind, Result};

/// The error type's crate: [`Error`], [`ErrorKind`], [`ErrorExt`] and the
/// [`Classify`](error::Classify) trait the layers implement for their
/// errors.
pub use rmq_error as error;

pub use rmq_client_core as client_core;
pub use rmq_protocol as protocol;
pub use rmq_remoting as remoting;

#[doc = include_str!("docs/client_config.md")]
pub use rmq_client_core::ClientConfig;
pub use rmq_client_core::{
    BrokerVersion, ClientConfigBuilder, Credentials, PullStatus, SendResult, SendStatus,
};
#[doc = include_str!("docs/message.md")]
pub use rmq_protocol::Message;
pub use rmq_protocol::message::CompressionType;
pub use rmq_protocol::message::property;
pub use rmq_protocol::{ErrorChain, MessageExt, MessageQueue, Properties, ResponseCode};
#[doc = include_str!("docs/tls_config.md")]
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use rmq_remoting::TlsConfig;

/// A broker address's reachability, as the heartbeats see it (what the
/// producer and consumer `BrokerConnectionLost` / `BrokerConnectionRestored`
/// events carry).
pub use rmq_client_core::BrokerLink;

/// Items of one feature: each gets `#[cfg(feature = ...)]` and, on docs.rs,
/// the badge naming the feature.
macro_rules! feature_items {
    ($feature:literal: $($item:item)*) => {
        $(
            #[cfg(feature = $feature)]
            #[cfg_attr(docsrs, doc(cfg(feature = $feature)))]
            $item
        )*
    };
}

feature_items! { "opentelemetry":
    /// OpenTelemetry context propagation through message properties: the
    /// W3C `traceparent` a send writes, and [`remote_context`](otel::remote_context)
    /// to continue it from a message of a pull, lite pull or simple
    /// consumer (the push consumer's `process` span does it itself).
    pub mod otel {
        pub use rmq_client_core::otel::{
            TRACEPARENT, TRACESTATE, parse_traceparent, remote_context, remote_span_context,
            traceparent,
        };
    }
}

/// Items of either consumer feature (`consumer-push` or `consumer-pull`),
/// with the docs.rs badge.
macro_rules! consumer_items {
    ($($item:item)*) => {
        $(
            #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
            #[cfg_attr(
                docsrs,
                doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
            )]
            $item
        )*
    };
}

feature_items! { "producer":
    /// The producer layer.
    pub use rmq_producer as producer;
    #[doc = include_str!("docs/producer.md")]
    pub use rmq_producer::Producer;
    #[doc = include_str!("docs/producer_builder.md")]
    pub use rmq_producer::ProducerBuilder;
    #[doc = include_str!("docs/select_by_hash.md")]
    pub use rmq_producer::select_by_hash;
    pub use rmq_producer::{
        InvalidMessage, JavaHashCode, ProducerConfig, RecallError, TransactionListener,
        TransactionProducer, TransactionProducerBuilder, TransactionState, Unsent, UnsentExt,
        hash_index, transaction_fn,
    };
    #[doc = include_str!("docs/create_reply_message.md")]
    pub use rmq_producer::create_reply_message;
    #[doc = include_str!("docs/recall_handle.md")]
    pub use rmq_producer::RecallHandle;
    #[doc = include_str!("docs/producer_event.md")]
    pub use rmq_producer::{ProducerEvent, ProducerState};
}
#[cfg(all(feature = "producer", not(feature = "consumer-push")))]
pub use rmq_producer::async_trait;

feature_items! { "consumer-push":
    /// The push consumer layer.
    pub use rmq_consumer_push as consumer_push;
    #[doc = include_str!("docs/message_listener.md")]
    pub use rmq_consumer_push::MessageListener;
    #[doc = include_str!("docs/push_consumer.md")]
    pub use rmq_consumer_push::PushConsumer;
    #[doc = include_str!("docs/push_consumer_builder.md")]
    pub use rmq_consumer_push::PushConsumerBuilder;
    #[doc = include_str!("docs/listener.md")]
    pub use rmq_consumer_push::listener;
    #[doc = include_str!("docs/listener_fn.md")]
    pub use rmq_consumer_push::listener_fn;
    #[doc = include_str!("docs/orderly_listener.md")]
    pub use rmq_consumer_push::orderly_listener;
    #[doc = include_str!("docs/orderly_listener_fn.md")]
    pub use rmq_consumer_push::orderly_listener_fn;
    pub use rmq_consumer_push::{
        ConsumeContext, ConsumeResult, FnListener, OrderlyContext, OrderlyFnListener,
        OrderlyListener, OrderlyResult, PushConsumerConfig, QueueSnapshot, async_trait,
    };
    /// One message of [`PushConsumerBuilder::start_stream`]: `ack()`,
    /// `reconsume_later()`, or dropped (= reconsume later).
    pub use rmq_consumer_push::{Delivery, DeliveryStream};
}

feature_items! { "consumer-pull":
    /// The pull consumers' layer.
    pub use rmq_consumer_pull as consumer_pull;
    #[doc = include_str!("docs/lite_pull_consumer.md")]
    pub use rmq_consumer_pull::LitePullConsumer;
    #[doc = include_str!("docs/lite_pull_consumer_builder.md")]
    pub use rmq_consumer_pull::LitePullConsumerBuilder;
    #[doc = include_str!("docs/pull_consumer.md")]
    pub use rmq_consumer_pull::PullConsumer;
    #[doc = include_str!("docs/pull_consumer_builder.md")]
    pub use rmq_consumer_pull::PullConsumerBuilder;
    pub use rmq_consumer_pull::{
        BufferStats, LitePullConsumerConfig, MessageStream, PullConsumerConfig, PullResult,
    };
    /// The pop consumer (RocketMQ 5.x).
    pub use rmq_consumer_pull::{
        ReceiptHandle, ReceivedMessage, SimpleConsumer, SimpleConsumerBuilder,
    };
}

consumer_items! {
    /// What every consumer shares (subscriptions, group options, lifecycle).
    pub use rmq_consumer_base as consumer_base;
    #[doc = include_str!("docs/expression.md")]
    pub use rmq_consumer_base::Expression;
    pub use rmq_consumer_base::{ConsumeFrom, GroupOptions, MaxReconsume, Retry, Subscription};
    #[doc = include_str!("docs/consumer_event.md")]
    pub use rmq_consumer_base::{ConsumerEvent, ConsumerState, RebalanceListener};
    /// Consumer offset stores: the built-in ones and the trait for one's own.
    pub use rmq_offset_store as offset_store;
    pub use rmq_offset_store::{OffsetStore, OffsetTable, PersistMode, ReadOffsetType};
    pub use rmq_protocol::body::{ExpressionType, MessageModel};
    #[doc = include_str!("docs/allocate_strategy.md")]
    pub use rmq_rebalance::AllocateStrategy;
    pub use rmq_rebalance::{
        AllocateAveragely, AllocateAveragelyByCircle, AllocateByConfig, AllocateByMachineRoom,
        AllocateConsistentHash, AllocateError, AllocateMachineRoomNearby, HashFunction,
        MachineRoomResolver, Md5Hash,
    };
}

#[doc = include_str!("docs/prelude.md")]
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
    pub use crate::{LitePullConsumer, PullConsumer, PullStatus, SimpleConsumer};
    #[cfg(feature = "producer")]
    pub use crate::{
        Producer, TransactionListener, TransactionProducer, TransactionState, UnsentExt,
        select_by_hash, transaction_fn,
    };
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The guides' examples (`docs/`), compiled as doctests.
#[cfg(doctest)]
mod guide_doctests {
    #[doc = include_str!("../../docs/production.md")]
    pub struct Production;
    #[doc = include_str!("../../docs/security.md")]
    pub struct Security;
    #[doc = include_str!("../../docs/grpc-proxy.md")]
    pub struct GrpcProxy;
    #[doc = include_str!("../../docs/transactions.md")]
    pub struct Transactions;
    #[doc = include_str!("../../docs/failover.md")]
    pub struct Failover;
    #[doc = include_str!("../../docs/testing.md")]
    pub struct Testing;
    #[doc = include_str!("../../docs/observability.md")]
    pub struct Observability;
    #[doc = include_str!("../../docs/performance.md")]
    pub struct Performance;
    #[doc = include_str!("../../docs/cli.md")]
    pub struct Cli;
    #[doc = include_str!("../../docs/releases.md")]
    pub struct Releases;
}
