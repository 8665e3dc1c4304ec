//! [`SimpleConsumerBuilder`]: settings of the simple consumer, then
//! `start()`.

use std::time::Duration;

use rmq_client_core::ClientConfigSource;
use rmq_consumer_base::{Expression, Subscription};

use crate::error::unify;
use crate::simple::config::SimpleConsumerConfig;
use crate::simple::consumer::SimpleConsumer;
use crate::simple::grpc::GrpcInner;
use crate::simple::pop::PopInner;

/// Builds and starts a [`SimpleConsumer`].
///
/// ```no_run
/// # async fn demo() -> rmq_error::Result<()> {
/// use std::time::Duration;
/// use rmq_consumer_pull::SimpleConsumer;
/// use rmq_consumer_base::Expression;
///
/// let consumer = SimpleConsumer::builder()
///     .group("billing")
///     .namesrv_addr("127.0.0.1:9876")
///     .subscribe("invoices", Expression::tag("*"))
///     .start()
///     .await?;
/// for m in consumer.receive(16, Duration::from_secs(30)).await? {
///     consumer.ack(&m).await?;
/// }
/// # consumer.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct SimpleConsumerBuilder {
    config: SimpleConsumerConfig,
    client: ClientConfigSource,
    endpoint: Option<String>,
}

rmq_consumer_base::group_setters!(SimpleConsumerBuilder, SimpleConsumerConfig);

impl SimpleConsumerBuilder {
    /// Receives from `topic`, filtered by `expression` (tags or SQL92).
    /// Subscribing a topic again replaces its expression.
    pub fn subscribe(
        mut self,
        topic: impl Into<String>,
        expression: impl Into<Expression>,
    ) -> Self {
        Subscription::upsert(
            &mut self.config.subscriptions,
            Subscription::new(topic, expression),
        );
        self
    }

    /// How long a receive waits for a first message. Default: 15 s.
    pub fn await_duration(mut self, wait: Duration) -> Self {
        self.config.await_duration = wait;
        self
    }

    /// Redeliveries after which a message goes to the group's DLQ instead
    /// of to the application. Default: 16.
    #[deprecated(since = "0.1.0", note = "use `max_reconsume(MaxReconsume::Times(n))`")]
    pub fn max_reconsume_times(mut self, times: i32) -> Self {
        self.config.max_reconsume_times = times;
        self
    }

    /// Redeliveries after which a message goes to the group's DLQ instead
    /// of to the application: `MaxReconsume::Times(n)`, or
    /// `MaxReconsume::Default` (16).
    pub fn max_reconsume(mut self, max: rmq_consumer_base::MaxReconsume) -> Self {
        self.config.max_reconsume_times = match max {
            rmq_consumer_base::MaxReconsume::Default => 16,
            other => other.to_java(),
        };
        self
    }

    /// Starts the consumer (with [`endpoint`](Self::endpoint): a session
    /// with the proxy, its settings answered): client instance, routes of the subscribed
    /// topics, registration (CONSUME_POP), and a check that their brokers
    /// pop.
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) for bad settings,
    /// [`Error::PopNotSupported`](crate::Error::PopNotSupported) when a
    /// broker of a subscribed topic is older than 5.0,
    /// [`Error::Client`](crate::Error::Client) when the client cannot start.
    pub async fn start(self) -> rmq_error::Result<SimpleConsumer> {
        unify(async {
            if let Some(endpoint) = self.endpoint.clone() {
                self.config.validate_detailed()?;
                let client = self.client.resolve()?;
                let engine = GrpcInner::start(self.config, &endpoint, &client).await?;
                return Ok(SimpleConsumer::new(engine));
            }
            let (config, client) = self.into_parts()?;
            Ok(SimpleConsumer::new(PopInner::start(config, client).await?))
        })
        .await
    }

    /// Receive through the RocketMQ 5.x proxy at `endpoint` (`host:port`
    /// of its gRPC port) instead of from the brokers: the same API, over
    /// `ReceiveMessage` / `AckMessage` / `ChangeInvisibleDuration` (the
    /// name-server settings are then not used). The proxy refuses an
    /// invisible time below its `minInvisibleTimeMillsForRecv` (10 s by
    /// default).
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }
}
