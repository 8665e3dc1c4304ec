//! The simple consumer over the RocketMQ 5.x proxy ([`rmq_grpc::Session`]):
//! chosen by [`SimpleConsumerBuilder::endpoint`](crate::SimpleConsumerBuilder::endpoint).
//!
//! As the Java gRPC client (`SimpleConsumerImpl`): the session's settings
//! are a `SIMPLE_CONSUMER` of the group with its subscriptions; a receive
//! takes the next readable queue of the topic's route (`QueryRoute`, master
//! brokers) and long-polls `ReceiveMessage` there; acks are `AckMessage`
//! (one request per topic), a longer hide is `ChangeInvisibleDuration`.
//! The proxy counts the deliveries and moves a message to `%DLQ%<group>`
//! after the group's retry limit. It refuses an invisible time below its
//! `minInvisibleTimeMillsForRecv` (10 s by default) with
//! `ILLEGAL_INVISIBLE_TIME`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_client_core::ClientConfig;
use rmq_consumer_base::{Expression, Subscription};
use rmq_grpc::{ClientSettings, Session, proto};
use rmq_protocol::body::ExpressionType;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::error::{Error, Result};
use crate::simple::config::SimpleConsumerConfig;
use crate::simple::message::{GrpcHandle, ReceiptHandle, ReceivedMessage};
use crate::simple::transport::{ReceiveRequest, SimpleTransport};

/// How long a topic's readable queues from `QueryRoute` are used before
/// asking again.
const ROUTE_TTL: Duration = Duration::from_secs(30);

type CachedQueues = (Instant, Arc<Vec<proto::MessageQueue>>);

/// The gRPC state of a simple consumer.
pub(crate) struct GrpcInner {
    pub(crate) config: SimpleConsumerConfig,
    pub(crate) session: Session,
    group: String,
    subscriptions: Mutex<Vec<Subscription>>,
    queues: Mutex<HashMap<String, CachedQueues>>,
    next_queue: AtomicUsize,
    pub(crate) cancel: CancellationToken,
}

/// The subscription entries of the settings.
pub(crate) fn entries(subs: &[Subscription]) -> Vec<proto::SubscriptionEntry> {
    subs.iter()
        .map(|s| {
            let e = s.filter();
            rmq_grpc::subscription_entry(&s.topic, is_sql(&e), e.text())
        })
        .collect()
}

pub(crate) fn is_sql(e: &Expression) -> bool {
    e.kind() == ExpressionType::Sql92
}

impl GrpcInner {
    /// Starts the session with the proxy at `endpoint`.
    pub(crate) async fn start(
        config: SimpleConsumerConfig,
        endpoint: &str,
        client: &ClientConfig,
    ) -> Result<GrpcInner> {
        let group = config.options.group().to_owned();
        let grpc = rmq_consumer_base::grpc_config(endpoint, client)
            .map_err(|e| Error::Config(rmq_protocol::ErrorChain(&e).to_string()))?;
        let settings = ClientSettings::consumer(
            proto::ClientType::SimpleConsumer,
            &group,
            entries(&config.subscriptions),
            false,
            config.await_duration,
        );
        let session = Session::start(grpc, settings, None).await?;
        info!(
            group,
            endpoint,
            client_id = session.client_id(),
            "simple consumer started (gRPC)"
        );
        Ok(GrpcInner {
            subscriptions: Mutex::new(config.subscriptions.clone()),
            config,
            session,
            group,
            queues: Mutex::new(HashMap::new()),
            next_queue: AtomicUsize::new(0),
            cancel: CancellationToken::new(),
        })
    }

    pub(crate) fn group(&self) -> &str {
        &self.group
    }

    pub(crate) fn subs(&self) -> MutexGuard<'_, Vec<Subscription>> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds or replaces a subscription and sends the new settings.
    pub(crate) async fn subscribe(&self, sub: Subscription) -> Result<()> {
        sub.check().map_err(Error::InvalidArgument)?;
        let topic = sub.topic.clone();
        let entries = {
            let mut subs = self.subs();
            Subscription::upsert(&mut subs, sub);
            entries(&subs)
        };
        self.session
            .update_pub_sub(rmq_grpc::consumer_pub_sub(
                &self.group,
                entries,
                false,
                self.config.await_duration,
            ))
            .await;
        self.readable_queues(&topic).await.map(|_| ())
    }

    /// The readable queues of master brokers of `topic` (cached).
    async fn readable_queues(&self, topic: &str) -> Result<Arc<Vec<proto::MessageQueue>>> {
        if let Some((at, q)) = self
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
        {
            if at.elapsed() < ROUTE_TTL {
                return Ok(q.clone());
            }
        }
        let all = self.session.query_route(topic).await?;
        let readable: Vec<_> = all
            .into_iter()
            .filter(|q| {
                let p =
                    proto::Permission::try_from(q.permission).unwrap_or(proto::Permission::None);
                matches!(p, proto::Permission::Read | proto::Permission::ReadWrite)
                    && q.broker.as_ref().is_some_and(|b| b.id == 0)
            })
            .collect();
        if readable.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "topic {topic} has no readable queue at the proxy"
            )));
        }
        let readable = Arc::new(readable);
        self.queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_owned(), (Instant::now(), readable.clone()));
        Ok(readable)
    }

    async fn receive(&self, request: ReceiveRequest<'_>) -> Result<Vec<ReceivedMessage>> {
        let queues = self.readable_queues(request.topic).await?;
        let i = self.next_queue.fetch_add(1, Ordering::Relaxed) % queues.len().max(1);
        let Some(queue) = queues.get(i).cloned() else {
            return Ok(Vec::new());
        };
        let broker = queue
            .broker
            .as_ref()
            .map(|b| b.name.clone())
            .unwrap_or_default();
        let req = proto::ReceiveMessageRequest {
            group: Some(rmq_grpc::resource("", &self.group)),
            message_queue: Some(queue),
            filter_expression: Some(rmq_grpc::filter_expression(
                is_sql(request.filter),
                request.filter.text(),
            )),
            batch_size: i32::try_from(request.max).unwrap_or(32),
            invisible_duration: Some(rmq_grpc::duration(request.invisible)),
            auto_renew: false,
            long_polling_timeout: None,
            attempt_id: None,
        };
        let received = self.session.receive_message(req, request.wait).await?;
        received_messages(received, &broker, request.invisible)
    }

    async fn ack(&self, handles: &[&ReceiptHandle]) -> Result<()> {
        let mut by_topic: BTreeMap<&str, Vec<(String, String)>> = BTreeMap::new();
        for h in handles {
            let g = h.as_grpc()?;
            by_topic
                .entry(g.topic.as_str())
                .or_default()
                .push((g.message_id.clone(), g.handle.clone()));
        }
        for (topic, entries) in by_topic {
            let results = self
                .session
                .ack_message(topic, &self.group, entries)
                .await?;
            for r in results {
                if let Some(s) = r.status.filter(|s| s.code != proto::Code::Ok as i32) {
                    return Err(Error::Grpc(rmq_grpc::Error::Proxy {
                        rpc: "AckMessage",
                        code: s.code,
                        message: format!("message {}: {}", r.message_id, s.message),
                    }));
                }
            }
        }
        Ok(())
    }

    async fn change(&self, handle: &ReceiptHandle, invisible: Duration) -> Result<ReceiptHandle> {
        let g = handle.as_grpc()?;
        let renewed = self
            .session
            .change_invisible_duration(&g.topic, &self.group, &g.message_id, &g.handle, invisible)
            .await?;
        Ok(ReceiptHandle::grpc(GrpcHandle {
            handle: renewed,
            invisible_ms: millis(invisible),
            visible_at_ms: now_ms().saturating_add(millis(invisible)),
            ..g.clone()
        }))
    }

    /// The consumer's own shutdown steps.
    pub(crate) async fn stop(&self) -> Result<()> {
        self.cancel.cancel();
        self.session.shutdown().await;
        info!(group = %self.group, "simple consumer shut down (gRPC)");
        Ok(())
    }
}

/// Received proxy messages as [`ReceivedMessage`]s of `broker`, hidden for
/// `invisible` from now.
pub(crate) fn received_messages(
    received: Vec<proto::Message>,
    broker: &str,
    invisible: Duration,
) -> Result<Vec<ReceivedMessage>> {
    let visible_at_ms = now_ms().saturating_add(millis(invisible));
    let mut out = Vec::with_capacity(received.len());
    for m in received {
        let (msg, receipt) = rmq_grpc::message_ext(m, broker)?;
        let handle = ReceiptHandle::grpc(GrpcHandle {
            topic: msg.topic.clone(),
            message_id: msg.msg_id.clone(),
            handle: receipt.receipt_handle,
            broker_name: broker.to_owned(),
            invisible_ms: millis(invisible),
            visible_at_ms,
        });
        out.push(ReceivedMessage::new(msg, handle));
    }
    Ok(out)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn now_ms() -> u64 {
    u64::try_from(rmq_client_core::now_ms()).unwrap_or(0)
}

impl SimpleTransport for GrpcInner {
    fn receive<'a>(
        &'a self,
        request: ReceiveRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<ReceivedMessage>>> {
        Box::pin(GrpcInner::receive(self, request))
    }

    fn ack<'a>(&'a self, handles: &'a [&'a ReceiptHandle]) -> BoxFuture<'a, Result<()>> {
        Box::pin(GrpcInner::ack(self, handles))
    }

    fn change_invisible<'a>(
        &'a self,
        handle: &'a ReceiptHandle,
        invisible: Duration,
    ) -> BoxFuture<'a, Result<ReceiptHandle>> {
        Box::pin(self.change(handle, invisible))
    }
}
