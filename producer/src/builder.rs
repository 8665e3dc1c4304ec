//! [`ProducerBuilder`]: settings with Java defaults, then `start()`.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use rmq_client_core::{ClientConfigSource, ClientInstance};
use rmq_protocol::message::CompressionType;

use crate::config::ProducerConfig;
use crate::error::{Error, Result};
use crate::fault::FaultTable;
use crate::grpc::GrpcSender;
use crate::health::Health;
use crate::producer::{Backend, Inner, Producer};
use crate::route::Routes;
use crate::send::Sender;

/// Builds and starts a [`Producer`]. Every setter documents its Java name
/// and default; [`start`](ProducerBuilder::start) validates everything.
///
/// ```no_run
/// # async fn demo() -> rmq_error::Result<()> {
/// use std::time::Duration;
/// use rmq_producer::Producer;
///
/// let producer = Producer::builder()
///     .group("orders-producer")
///     .namesrv_addr("127.0.0.1:9876")
///     .send_timeout(Duration::from_secs(5))
///     .start()
///     .await?;
/// # producer.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct ProducerBuilder {
    config: ProducerConfig,
    client: ClientConfigSource,
    endpoint: Option<String>,
}

rmq_client_core::client_setters!(ProducerBuilder, client);

impl ProducerBuilder {
    /// Groups concurrent [`send`](Producer::send)s (and
    /// [`send_with_callback`](Producer::send_with_callback)s) of one topic
    /// into one SEND_BATCH_MESSAGE (Java 5.x `autoBatch`): a batch is sent
    /// when it holds `max_messages` messages or `max_bytes` body bytes, or
    /// `linger` after its first message. Each caller gets its own
    /// [`SendResult`](crate::SendResult) (its `UNIQ_KEY`, queue offset and
    /// offset id); when the batch fails, each gets an
    /// [`Error::BatchFailed`](crate::Error::BatchFailed) inside its
    /// [`Error::Send`](crate::Error::Send). Messages a batch cannot carry
    /// (delay level, timer, retry topic, a body at least `compress_over`
    /// bytes) are sent alone. Default: off. Remoting only: a producer of a
    /// proxy ([`endpoint`](Self::endpoint)) sends one by one.
    pub fn batching(self, linger: Duration, max_messages: usize, max_bytes: usize) -> Self {
        self.batching_config(crate::Batching::new(linger, max_messages, max_bytes))
    }

    /// [`batching`](Self::batching) with every setting of [`Batching`](crate::Batching).
    pub fn batching_config(mut self, batching: crate::Batching) -> Self {
        self.config.batching = Some(batching);
        self
    }

    /// The producer group (Java `producerGroup`). Required, and not
    /// `DEFAULT_PRODUCER` (Java refuses it too).
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.config.group = group.into();
        self
    }

    /// Total time one send may take, retries included (Java
    /// `sendMsgTimeout`). Default: 3 s.
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.config.send_timeout = timeout;
        self
    }

    /// Extra attempts after a failed send (Java `retryTimesWhenSendFailed`).
    /// Default: 2.
    pub fn retry_times_when_send_failed(mut self, times: u32) -> Self {
        self.config.retry_times_when_send_failed = times;
        self
    }

    /// Extra attempts for [`Producer::send_with_callback`] (Java
    /// `retryTimesWhenSendAsyncFailed`). Default: 2.
    pub fn retry_times_when_send_async_failed(mut self, times: u32) -> Self {
        self.config.retry_times_when_send_async_failed = times;
        self
    }

    /// Send again to another broker when the broker stored the message with
    /// a flush/slave problem (Java `retryAnotherBrokerWhenNotStoreOK`).
    /// Default: `false`.
    pub fn retry_another_broker_when_not_store_ok(mut self, retry: bool) -> Self {
        self.config.retry_another_broker_when_not_store_ok = retry;
        self
    }

    /// Compress bodies of at least this many bytes (Java
    /// `compressMsgBodyOverHowmuch`). Default: 4096. Batches are never
    /// compressed.
    pub fn compress_over(mut self, bytes: usize) -> Self {
        self.config.compress_over = bytes;
        self
    }

    /// Compression level (Java `rocketmq.message.compressLevel`): zlib 0–9,
    /// zstd −7–22, ignored by LZ4. Default: 5.
    pub fn compress_level(mut self, level: i32) -> Self {
        self.config.compress_level = level;
        self
    }

    /// Compression codec (Java `rocketmq.message.compressType`). Default:
    /// zlib (sysFlag `0x301`). LZ4 and zstd need 5.x consumers.
    pub fn compression_type(mut self, codec: CompressionType) -> Self {
        self.config.compression_type = codec;
        self
    }

    /// Largest body (or encoded batch), in bytes (Java `maxMessageSize`).
    /// Default: 4 MiB.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.config.max_message_size = bytes;
        self
    }

    /// Queue count of topics the broker auto-creates (Java
    /// `defaultTopicQueueNums`). Default: 4.
    pub fn default_topic_queue_nums(mut self, queues: i32) -> Self {
        self.config.default_topic_queue_nums = queues;
        self
    }

    /// Avoid brokers whose sends failed or were slow, for a while (Java
    /// `sendLatencyFaultEnable`). Default: `true`.
    pub fn send_latency_fault_enable(mut self, enable: bool) -> Self {
        self.config.send_latency_fault_enable = enable;
        self
    }

    /// Fail the start when no name server answers (default `true`, as the
    /// consumers): [`start`](Self::start) asks the name servers for the
    /// route of `TBW102` and, when none answers within the request timeout,
    /// returns the client error `NameServerUnavailable` instead of a
    /// producer whose every send would fail. With `false` the producer
    /// starts anyway and reports
    /// [`ProducerEvent::NameServerUnreachable`](crate::ProducerEvent::NameServerUnreachable)
    /// (then `NameServerReachable` once one answers). Remoting only: a
    /// producer of a proxy ([`endpoint`](Self::endpoint)) connects to the
    /// proxy at start.
    ///
    /// ```no_run
    /// # async fn demo() -> rmq_error::Result<()> {
    /// let producer = rmq_producer::Producer::builder()
    ///     .group("orders-producer")
    ///     .fail_fast(false) // start even while the name servers are down
    ///     .start()
    ///     .await?;
    /// # drop(producer); Ok(()) }
    /// ```
    pub fn fail_fast(mut self, on: bool) -> Self {
        self.config.fail_fast = on;
        self
    }

    /// RocketMQ message trace (Java `enableMsgTrace`, default off): after
    /// each send a `Pub` record (Java `SendMessageTraceHookImpl`; one per
    /// message of a batch or an auto-batched flush) goes to the trace
    /// topic, written in batches by a background task through this
    /// producer's client instance; records still queued are sent at
    /// shutdown. The broker must have the topic (`traceTopicEnable=true`
    /// creates `RMQ_SYS_TRACE_TOPIC`). Remoting transport only: a producer
    /// of a proxy ([`endpoint`](Self::endpoint)) writes no trace records.
    pub fn enable_trace(mut self, enable: bool) -> Self {
        self.config.enable_trace = enable;
        self
    }

    /// The trace topic instead of `RMQ_SYS_TRACE_TOPIC` (Java
    /// `customizedTraceTopic`).
    pub fn trace_topic(mut self, topic: impl Into<String>) -> Self {
        self.config.trace_topic = Some(topic.into());
        self
    }

    /// Send through the RocketMQ 5.x proxy at `endpoint` (`host:port` of its
    /// gRPC port, e.g. `127.0.0.1:8081`) instead of name servers and
    /// brokers; the name-server settings are then not used. The same
    /// [`Producer`] API: a message group is the `__SHARDINGKEY` property
    /// (FIFO), a delivery time `TIMER_DELIVER_MS`; delay levels and oneway
    /// (awaited, then dropped) differ, see [`Producer`]'s send methods.
    /// With [`transaction_listener`](Self::transaction_listener) the
    /// transactional producer goes through the proxy too (half messages,
    /// `EndTransaction`, the proxy's orphaned-transaction checks). Topics
    /// must have their 5.x message type
    /// (`+message.type=NORMAL|FIFO|DELAY|TRANSACTION`).
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The producer settings as they stand.
    pub fn config(&self) -> &ProducerConfig {
        &self.config
    }

    /// Validates the settings, joins (or starts) the client instance,
    /// registers the group (which heartbeats to the brokers at once) and
    /// returns the running producer.
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) for an invalid setting;
    /// [`Error::Client`](crate::Error::Client) when the
    /// client configuration is invalid (e.g. no name server and no
    /// `NAMESRV_ADDR`) or the group is already registered in this client
    /// instance.
    pub async fn start(self) -> rmq_error::Result<Producer> {
        self.start_detailed().await.map_err(Into::into)
    }

    /// [`start`](Self::start) with this crate's error.
    async fn start_detailed(self) -> Result<Producer> {
        if let Some(endpoint) = &self.endpoint {
            self.config.validate()?;
            let client = self.client.clone().resolve()?;
            let sender = GrpcSender::start(self.config, endpoint, &client).await?;
            return Ok(Producer {
                inner: Arc::new(Inner::new(Backend::Grpc(sender))),
            });
        }
        let (config, instance) = self.join_instance()?;
        let unreachable = match probe_name_servers(&config, &instance).await {
            Ok(unreachable) => unreachable,
            Err(e) => {
                instance.release().await;
                return Err(e);
            }
        };
        if let Err(e) = instance.register_producer(&config.group).await {
            instance.release().await;
            return Err(e.into());
        }
        Ok(Self::running(config, instance, unreachable))
    }

    /// Whether the producer goes through a proxy ([`endpoint`](Self::endpoint)).
    pub(crate) fn has_endpoint(&self) -> bool {
        self.endpoint.is_some()
    }

    /// The producer group.
    pub(crate) fn group_name(&self) -> &str {
        &self.config.group
    }

    /// Starts a producer of the proxy at the [`endpoint`](Self::endpoint) that declares `topics`
    /// and takes the proxy's commands (orphaned transactions) on `commands`.
    pub(crate) async fn start_grpc(
        self,
        topics: &[String],
        commands: tokio::sync::mpsc::Sender<rmq_grpc::ServerCommand>,
    ) -> Result<Producer> {
        let Some(endpoint) = &self.endpoint else {
            return Err(Error::Config("a proxy producer needs an endpoint".into()));
        };
        self.config.validate()?;
        let client = self.client.clone().resolve()?;
        let sender =
            GrpcSender::start_with(self.config, endpoint, &client, topics, Some(commands)).await?;
        Ok(Producer {
            inner: Arc::new(Inner::new(Backend::Grpc(sender))),
        })
    }

    /// Validates the settings and joins (or starts) the client instance;
    /// the caller registers the group, then calls [`running`](Self::running).
    pub(crate) fn join_instance(self) -> Result<(ProducerConfig, ClientInstance)> {
        if self.endpoint.is_some() {
            return Err(Error::TransportUnsupported(
                "a producer of a proxy (endpoint) has no client instance to join; \
                 start it with start()"
                    .into(),
            ));
        }
        self.config.validate()?;
        let mut client = self.client.resolve()?;
        let mut config = self.config;
        if !client.namespace().is_none() {
            config.enter_namespace(client.namespace());
            // The wrapped group must be a valid group too.
            config.validate()?;
        }
        client.change_instance_name_to_pid();
        let instance = ClientInstance::get_or_start(client)?;
        Ok((config, instance))
    }

    /// The producer of a group registered in `instance`; `unreachable`: no
    /// name server answered at start (the failure, for the event).
    pub(crate) fn running(
        config: ProducerConfig,
        instance: ClientInstance,
        unreachable: Option<String>,
    ) -> Producer {
        tracing::info!(group = %config.group, client_id = instance.client_id(), "producer started");
        let batcher = config.batching.map(crate::batching::Accumulator::new);
        let trace = crate::message_trace::start(&config, &instance);
        let health = Health::started(Some(&instance), unreachable);
        let sender = Sender {
            trace,
            routes: Routes::new(health.clone()),
            health,
            config,
            instance,
            faults: FaultTable::default(),
            counter: AtomicUsize::new(0),
        };
        Producer {
            inner: Arc::new(Inner::new(Backend::Remoting(sender)).with_batcher(batcher)),
        }
    }
}

/// Asks the name servers for the route of `TBW102`, without caching it (a
/// producer learns its brokers from the topics it sends to, as before the
/// check); any answer, even "no such topic", shows one is up. No answer:
/// with fail-fast the client error, else `Ok(Some(failure))` for the
/// producer's event.
pub(crate) async fn probe_name_servers(
    config: &ProducerConfig,
    instance: &ClientInstance,
) -> Result<Option<String>> {
    match instance
        .probe_name_servers(crate::validate::AUTO_CREATE_TOPIC)
        .await
    {
        Err(e @ rmq_client_core::Error::NameServerUnavailable { .. }) => {
            if config.fail_fast {
                return Err(e.into());
            }
            let failure = rmq_protocol::ErrorChain(&e).to_string();
            tracing::warn!(group = %config.group, error = %failure, "no name server answers; starting anyway (fail_fast(false))");
            Ok(Some(failure))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters() {
        let b = ProducerBuilder::default()
            .group("g")
            .send_timeout(Duration::from_secs(9))
            .retry_times_when_send_failed(5)
            .retry_times_when_send_async_failed(6)
            .retry_another_broker_when_not_store_ok(true)
            .compress_over(10)
            .compress_level(1)
            .compression_type(CompressionType::Zstd)
            .max_message_size(100)
            .default_topic_queue_nums(8)
            .send_latency_fault_enable(false);
        let c = b.config();
        assert_eq!(c.group(), "g");
        assert_eq!(c.send_timeout(), Duration::from_secs(9));
        assert_eq!(c.retry_times_when_send_failed(), 5);
        assert_eq!(c.retry_times_when_send_async_failed(), 6);
        assert!(c.retry_another_broker_when_not_store_ok());
        assert_eq!(c.compress_over(), 10);
        assert_eq!(c.compress_level(), 1);
        assert_eq!(c.compression_type(), CompressionType::Zstd);
        assert_eq!(c.max_message_size(), 100);
        assert_eq!(c.default_topic_queue_nums(), 8);
        assert!(!c.send_latency_fault_enable());
    }

    #[tokio::test]
    async fn start_rejects_bad_config_before_connecting() {
        let e = ProducerBuilder::default().start().await.unwrap_err();
        assert!(matches!(e.downcast_ref(), Some(Error::Config(_))), "{e}");
        assert_eq!(e.kind(), rmq_error::ErrorKind::Config);
        let e = ProducerBuilder::default()
            .group("g")
            .send_timeout(Duration::ZERO)
            .start()
            .await
            .unwrap_err();
        assert!(matches!(e.downcast_ref(), Some(Error::Config(_))), "{e}");
    }
}
