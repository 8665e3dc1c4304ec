//! [`PopInner`]: the simple consumer over the brokers (RocketMQ 5.x), on
//! the pop engine ([`rmq_consumer_base::engine::pop`]): its shared state,
//! its start and stop, and its [`SimpleTransport`] (a receive pops any
//! queue of the topic's next broker; acks are batched per broker; a longer
//! hide is CHANGE_MESSAGE_INVISIBLETIME).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_client_core::{ClientConfig, is_pop_unsupported};
use rmq_consumer_base::engine::pop::{
    FetchError, InitMode, PopCallError, PopCursor, PopHandle, PopQuery, ack_all, change_invisible,
    readable_brokers,
};
use rmq_consumer_base::{
    ConsumerCore, DropGuard, Guarded, HeartbeatGate, Registered, Registration, Subscription,
};
use rmq_protocol::MessageQueue;
use rmq_protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData, QueryAssignmentRequestBody};
use rmq_protocol::namespace::Namespace;
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tracing::{debug, info, warn};

use crate::error::{Error, Result};
use crate::simple::config::{MAX_BATCH, SimpleConsumerConfig};
use crate::simple::engine::SimpleEngine;
use crate::simple::message::{ReceiptHandle, ReceivedMessage};
use crate::simple::subscriptions::Subscriptions;
use crate::simple::transport::{ReceiveRequest, SimpleTransport};

/// How long shutdown waits for the consumer's tasks and the acks and
/// invisible-time changes in flight.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// State shared by the handles.
pub(crate) struct PopInner {
    core: ConsumerCore,
    config: SimpleConsumerConfig,
    subscriptions: Subscriptions,
    heartbeat: HeartbeatGate,
    /// Which broker of a topic the next receive pops from.
    next_broker: AtomicUsize,
}

impl Guarded for PopInner {
    const NAME: &'static str = "simple consumer";

    fn core(&self) -> &ConsumerCore {
        &self.core
    }
}

impl Registered for PopInner {
    const CONSUME_TYPE: ConsumeType = ConsumeType::ConsumePop;

    fn consumer_data(&self) -> ConsumerData {
        let version = self.core.started_at_ms();
        let subscriptions = self
            .subscriptions
            .lock()
            .iter()
            .map(|s| s.to_data(version))
            .collect();
        ConsumerData {
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            ..self
                .config
                .options
                .consumer_data(Self::CONSUME_TYPE, subscriptions)
        }
    }
}

impl PopInner {
    /// Starts the consumer and checks that the brokers of the subscribed
    /// topics pop; answers its engine (stopped when the last reference
    /// goes).
    pub(crate) async fn start(
        mut config: SimpleConsumerConfig,
        client: ClientConfig,
    ) -> Result<Arc<dyn SimpleEngine>> {
        // The group and the topics are in the namespace on the brokers.
        let ns = client.namespace();
        if !ns.is_none() {
            config.options.enter_namespace(ns);
            for sub in &mut config.subscriptions {
                ns.wrap_in_place(&mut sub.topic);
            }
        }
        let topics = config
            .subscriptions
            .iter()
            .map(|s| s.topic.clone())
            .collect();
        let options = config.options.clone();
        ConsumerCore::start(&options, client, topics, |core| async move {
            let inner = Arc::new(PopInner {
                core,
                subscriptions: Subscriptions::new(config.subscriptions.clone()),
                config,
                heartbeat: HeartbeatGate::default(),
                next_broker: AtomicUsize::new(0),
            });
            let registration = Registration::new(inner.core.group(), &inner);
            inner.core.register(registration).await?;
            let checked = inner.check_brokers_pop().await;
            if let Err(e) = checked {
                inner.core.abandon_start().await;
                return Err(e);
            }
            info!(
                group = inner.core.group(),
                client_id = inner.core.instance().client_id(),
                "simple consumer started"
            );
            let engine: Arc<dyn SimpleEngine> = Arc::new(DropGuard::new(inner));
            Ok(engine)
        })
        .await
    }

    /// Adds or replaces a subscription; checks the topic's brokers pop.
    async fn subscribe(&self, mut sub: Subscription) -> Result<()> {
        self.core.namespace().wrap_in_place(&mut sub.topic);
        let topic = self.subscriptions.add(sub)?;
        if let Err(e) = self.core.instance().route(&topic).await {
            warn!(group = self.core.group(), topic, error = %rmq_protocol::ErrorChain(&e), "no route for a topic yet");
        }
        self.core.instance().send_heartbeat_now().await;
        self.check_brokers_pop().await
    }

    /// QUERY_ASSIGNMENT to every broker of the subscribed topics: harmless
    /// on 5.x, refused by a 4.x broker (which cannot pop).
    async fn check_brokers_pop(&self) -> Result<()> {
        let topics: Vec<String> = self
            .subscriptions
            .lock()
            .iter()
            .map(|s| s.topic.clone())
            .collect();
        let instance = self.core.instance();
        for topic in topics {
            let Ok(brokers) = readable_brokers(instance, &topic).await else {
                continue;
            };
            for (_, addr) in brokers {
                let body = QueryAssignmentRequestBody {
                    client_id: instance.client_id().to_owned(),
                    consumer_group: self.core.group().to_owned(),
                    message_model: self.config.options.message_model(),
                    strategy_name: self.config.options.allocate_strategy().name().to_owned(),
                    topic: topic.clone(),
                };
                match instance.query_assignment(&addr, &body).await {
                    Ok(_) => {}
                    Err(e) if is_pop_unsupported(&e) => {
                        return Err(Error::PopNotSupported { addr });
                    }
                    Err(e) => {
                        debug!(topic, addr, error = %rmq_protocol::ErrorChain(&e), "pop check failed; receive will tell")
                    }
                }
            }
        }
        Ok(())
    }

    /// One pop of any queue of the topic's next broker; messages
    /// redelivered more often than allowed go to the DLQ instead (what the
    /// 5.x proxy does).
    async fn pop(&self, request: ReceiveRequest<'_>) -> Result<Vec<ReceivedMessage>> {
        let instance = self.core.instance();
        let brokers = readable_brokers(instance, request.topic)
            .await
            .map_err(Error::from_lookup)?;
        if brokers.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "topic {} has no readable queue",
                request.topic
            )));
        }
        let pick = self.next_broker.fetch_add(1, Ordering::Relaxed) % brokers.len();
        let Some((broker_name, addr)) = brokers.get(pick) else {
            return Ok(Vec::new());
        };
        self.heartbeat.ensure(instance, addr).await;
        let mq = MessageQueue::new(request.topic, broker_name.clone(), -1);
        let filter = request
            .filter
            .to_subscription(request.topic, self.core.started_at_ms());
        let query = PopQuery {
            group: self.core.group(),
            client_id: instance.client_id(),
            mq: &mq,
            filter: &filter,
            max: i32::try_from(request.max.clamp(1, MAX_BATCH)).unwrap_or(1),
            invisible: request.invisible,
            poll: request.wait,
            init_mode: InitMode::Max,
            order: false,
            dlq_after: Some(self.config.max_reconsume_times),
            namespace: self.core.namespace(),
        };
        let answer = PopCursor::new()
            .fetch(instance, &query)
            .await
            .map_err(|e| match e {
                FetchError::NoBroker(e) => Error::from_lookup(e),
                FetchError::Pop { addr, error } => pop_error(error, &addr),
            })?;
        Ok(answer
            .popped
            .into_iter()
            .map(|p| ReceivedMessage::new(p.msg, ReceiptHandle::pop(p.handle)))
            .collect())
    }

    /// Acks `handles`, one request per broker.
    async fn ack_handles(&self, handles: &[&ReceiptHandle]) -> Result<()> {
        let handles = handles
            .iter()
            .map(|h| h.as_pop())
            .collect::<Result<Vec<&PopHandle>>>()?;
        let failed = ack_all(self.core.instance(), self.core.group(), &handles).await;
        match failed.into_iter().next() {
            Some(failure) => Err(call_error(failure.error)),
            None => Ok(()),
        }
    }

    async fn change(&self, handle: &ReceiptHandle, invisible: Duration) -> Result<ReceiptHandle> {
        let h = handle.as_pop()?;
        let renewed = change_invisible(self.core.instance(), self.core.group(), h, invisible)
            .await
            .map_err(call_error)?;
        Ok(ReceiptHandle::pop(renewed))
    }

    /// The consumer's own shutdown steps: receives in flight end, acks and
    /// changes in flight finish (bounded).
    async fn stop(&self) -> Result<()> {
        self.core.cancel().cancel();
        if !self.core.close_and_wait(SHUTDOWN_WAIT).await {
            warn!(group = %self.core.group(), "acks still running after {SHUTDOWN_WAIT:?}; shutting down anyway (their messages come back)");
        }
        info!(group = %self.core.group(), "simple consumer shut down");
        Ok(())
    }
}

/// A broker's refusal or a failed call to `addr`; a broker that does not
/// pop is [`Error::PopNotSupported`].
fn pop_error(e: rmq_client_core::Error, addr: &str) -> Error {
    if is_pop_unsupported(&e) {
        Error::PopNotSupported {
            addr: addr.to_owned(),
        }
    } else {
        Error::Client(e)
    }
}

fn call_error(e: PopCallError) -> Error {
    match e {
        PopCallError::NoBroker(e) => Error::from_lookup(e),
        e @ PopCallError::BeforeCheckpoint { .. } => Error::InvalidArgument(e.to_string()),
        PopCallError::Call { addr, error } => pop_error(error, &addr),
    }
}

impl SimpleTransport for PopInner {
    fn receive<'a>(
        &'a self,
        request: ReceiveRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<ReceivedMessage>>> {
        Box::pin(self.pop(request))
    }

    fn ack<'a>(&'a self, handles: &'a [&'a ReceiptHandle]) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.ack_handles(handles))
    }

    fn change_invisible<'a>(
        &'a self,
        handle: &'a ReceiptHandle,
        invisible: Duration,
    ) -> BoxFuture<'a, Result<ReceiptHandle>> {
        Box::pin(self.change(handle, invisible))
    }
}

impl SimpleEngine for DropGuard<PopInner> {
    fn transport(&self) -> &dyn SimpleTransport {
        &**self.inner()
    }

    fn config(&self) -> &SimpleConsumerConfig {
        &self.inner().config
    }

    fn group(&self) -> &str {
        self.inner().core.group()
    }

    fn client_id(&self) -> &str {
        self.inner().core.instance().client_id()
    }

    fn subs(&self) -> MutexGuard<'_, Vec<Subscription>> {
        self.inner().subscriptions.lock()
    }

    fn namespace(&self) -> &Namespace {
        self.inner().core.namespace()
    }

    fn closing(&self) -> &CancellationToken {
        self.inner().core.cancel()
    }

    fn track(&self) -> TaskTrackerToken {
        self.inner().core.tasks().token()
    }

    fn is_shutdown(&self) -> bool {
        self.inner().core.is_closed()
    }

    fn subscribe(&self, sub: Subscription) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.inner().subscribe(sub))
    }

    fn shutdown(&self) -> BoxFuture<'_, Result<()>> {
        let inner = self.inner();
        Box::pin(inner.core.shutdown(inner.stop()))
    }
}
