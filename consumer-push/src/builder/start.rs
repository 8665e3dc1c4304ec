//! The ways to start a [`PushConsumerBuilder`]: with a listener, an
//! orderly listener or as a stream; validated first, then over the proxy
//! (an endpoint) or the brokers.

use std::sync::Arc;

use super::PushConsumerBuilder;
use crate::consumer::PushConsumer;
use crate::error::{Error, Result};
use crate::inner::Listener;
use crate::listener::concurrent::MessageListener;
use crate::listener::orderly::OrderlyListener;
use crate::listener::stream::{DeliveryStream, StreamListener};

impl PushConsumerBuilder {
    /// [`validate`](Self::validate) with this crate's error.
    pub(super) fn validate_detailed(&self) -> Result<()> {
        self.config.validate_detailed()?;
        if self.endpoint.is_some() {
            self.check_grpc()?;
        }
        Ok(())
    }

    /// The gRPC transport's checks: no name servers, nothing the proxy
    /// decides.
    fn check_grpc(&self) -> Result<()> {
        if self.client.namesrv_addr_given() {
            return Err(Error::Config(
                "endpoint(..) receives through the proxy; namesrv_addr(..) is for the brokers: give \
                 one of them (client_config(..) gives credentials, TLS and the request timeout to \
                 either)"
                    .into(),
            ));
        }
        crate::grpc::check_config(&self.config)
    }

    /// Validates and starts the consumer: over gRPC with an endpoint, else
    /// over remoting.
    async fn start_with(self, listener: Listener) -> Result<PushConsumer> {
        if let Some(endpoint) = self.endpoint.clone() {
            self.validate_detailed()?;
            let client = self.client.resolve()?;
            let guard = crate::grpc::start(self.config, &endpoint, &client, listener).await?;
            return Ok(PushConsumer::new(guard));
        }
        let (config, client) = self.into_parts()?;
        let guard = crate::lifecycle::start::start(config, client, listener).await?;
        Ok(PushConsumer::new(guard))
    }

    /// Validates, starts the client instance, registers the consumer
    /// (heartbeat), assigns queues (first rebalance) and starts pulling;
    /// `listener` gets the messages.
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) for invalid settings;
    /// [`Error::Client`](crate::Error::Client) when the client configuration
    /// is invalid or the group is already registered in this process's
    /// client instance ([`rmq_client_core::Error::DuplicateGroup`]);
    /// [`Error::OffsetStore`](crate::Error::OffsetStore) when the
    /// broadcasting offset directory is unusable. A subscribed topic
    /// without a route is not an error: it is logged and consumed once it
    /// exists. With an [`endpoint`](Self::endpoint):
    /// [`Error::Config`](crate::Error::Config) for a setting the proxy
    /// decides (see there) or an invalid endpoint,
    /// [`Error::Grpc`](crate::Error::Grpc) when the proxy cannot be
    /// reached.
    pub async fn start(self, listener: impl MessageListener) -> rmq_error::Result<PushConsumer> {
        self.start_arc(Arc::new(listener)).await
    }

    /// [`start`](Self::start) with a shared listener.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_arc(
        mut self,
        listener: Arc<dyn MessageListener>,
    ) -> rmq_error::Result<PushConsumer> {
        self.config.orderly = false;
        self.start_with(Listener::Concurrent(listener))
            .await
            .map_err(Into::into)
    }

    /// Starts a concurrent consumer whose messages come as a
    /// [`DeliveryStream`] of [`Delivery`](crate::Delivery)s instead of listener calls
    /// (rdkafka's `StreamConsumer`): each delivery is
    /// [acked](crate::Delivery::ack), [reconsumed later](crate::Delivery::reconsume_later)
    /// or dropped (= reconsume later). Process queues, flow control, the
    /// commit rule (a queue's offset never passes an undecided delivery),
    /// send-back and retries are [`start`](Self::start)'s; at most
    /// [`consume_concurrency`](Self::consume_concurrency) deliveries are
    /// undecided at once. The stream ends after
    /// [`shutdown`](PushConsumer::shutdown).
    ///
    /// ```no_run
    /// # async fn demo() -> rmq_error::Result<()> {
    /// use futures::StreamExt;
    /// use rmq_consumer_push::PushConsumer;
    ///
    /// let (consumer, mut deliveries) = PushConsumer::builder()
    ///     .group("orders")
    ///     .subscribe("orders", "*")
    ///     .start_stream()
    ///     .await?;
    /// while let Some(d) = deliveries.next().await {
    ///     if d.body.is_empty() {
    ///         d.reconsume_later();
    ///     } else {
    ///         d.ack();
    ///     }
    /// }
    /// # consumer.shutdown().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_stream(self) -> rmq_error::Result<(PushConsumer, DeliveryStream)> {
        let (listener, stream) = StreamListener::new(self.config.consume_concurrency);
        let shared = listener.shared().clone();
        let consumer = self.start(listener).await?;
        shared.set_stop(consumer.stop_consume_token());
        Ok((consumer, stream))
    }

    /// Like [`start`](Self::start), with an orderly listener: every queue is
    /// consumed in offset order, one listener call at a time, and — in
    /// clustering mode — only while this client holds the queue's broker
    /// lock (Java `registerMessageListener(MessageListenerOrderly)`).
    ///
    /// A suspended call gets the same messages again after the suspend time
    /// ([`suspend_current_queue_time`](Self::suspend_current_queue_time),
    /// 1 s) before anything later of its queue; after
    /// [`max_reconsume_times`](Self::max_reconsume_times) suspensions
    /// (default unlimited) a message goes to `%DLQ%<group>`. The offset
    /// moves only past consumed messages. Through the proxy
    /// ([`endpoint`](Self::endpoint)) each message group is consumed in
    /// order, the group must consume in order at the broker
    /// (`consumeMessageOrderly`), and a suspended call is retried after the
    /// proxy's backoff until the group's attempts are used up.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_orderly(
        self,
        listener: impl OrderlyListener,
    ) -> rmq_error::Result<PushConsumer> {
        self.start_orderly_arc(Arc::new(listener)).await
    }

    /// [`start_orderly`](Self::start_orderly) with a shared listener.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_orderly_arc(
        mut self,
        listener: Arc<dyn OrderlyListener>,
    ) -> rmq_error::Result<PushConsumer> {
        self.config.orderly = true;
        self.start_with(Listener::Orderly(listener))
            .await
            .map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn start_rejects_invalid_settings_before_any_io() {
        let r = PushConsumerBuilder::default()
            .group("G")
            .namesrv_addr("127.0.0.1:1")
            .start(crate::listener_fn(|_, _| {
                Box::pin(async { crate::ConsumeResult::Success })
            }))
            .await;
        let e = match r {
            Err(e) => e,
            Ok(_) => panic!("expected a config error"),
        };
        assert_eq!(e.kind(), rmq_error::ErrorKind::Config);
        match e.downcast_ref::<Error>() {
            Some(Error::Config(m)) => assert!(m.contains("no subscription")),
            other => panic!("expected a config error, got {other:?}"),
        }
    }
}
