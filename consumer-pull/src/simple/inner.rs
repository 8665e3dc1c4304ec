//! [`Inner`]: the simple consumer's shared state, its start and stop, and
//! the remoting [`SimpleTransport`] (pop, ack, batch ack, change invisible
//! time against the brokers).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_client_core::{ClientConfig, is_pop_unsupported, now_ms};
use rmq_consumer_base::{
    ConsumerCore, Guarded, HeartbeatGate, Registered, Registration, Subscription, offsets,
};
use rmq_protocol::body::{
    BatchAck, BatchAckMessageRequestBody, ConsumeFromWhere, ConsumeType, ConsumerData,
    QueryAssignmentRequestBody,
};
use rmq_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ConsumerSendMsgBackRequestHeader,
    PopMessageRequestHeader,
};
use rmq_protocol::message::property;
use rmq_protocol::pop::{ExtraInfo, POP_CK, pop_retry_origin};
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::{debug, info, warn};

use crate::error::{Error, Result};
use crate::simple::config::{MAX_BATCH, SimpleConsumerConfig};
use crate::simple::consumer::SimpleConsumer;
use crate::simple::message::{ReceiptHandle, ReceivedMessage};
use crate::simple::transport::{ReceiveRequest, SimpleTransport};

/// How long shutdown waits for the consumer's tasks.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// ConsumeInitMode.MAX: a group without an offset starts at the end (the
/// broker still starts at 0 while the queue's messages are all in memory).
const INIT_MODE_MAX: i32 = 1;

/// State shared by the handles.
pub(crate) struct Inner {
    pub(crate) core: ConsumerCore,
    pub(crate) config: SimpleConsumerConfig,
    subscriptions: Mutex<Vec<Subscription>>,
    heartbeat: HeartbeatGate,
    /// Which broker of a topic the next receive pops from.
    next_broker: AtomicUsize,
}

impl Guarded for Inner {
    const NAME: &'static str = "simple consumer";

    fn core(&self) -> &ConsumerCore {
        &self.core
    }
}

impl Registered for Inner {
    const CONSUME_TYPE: ConsumeType = ConsumeType::ConsumePop;

    fn consumer_data(&self) -> ConsumerData {
        let version = self.core.started_at_ms();
        let subscriptions = self.subs().iter().map(|s| s.to_data(version)).collect();
        ConsumerData {
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            ..self
                .config
                .options
                .consumer_data(Self::CONSUME_TYPE, subscriptions)
        }
    }
}

impl Inner {
    /// Starts the consumer and checks that the brokers of the subscribed
    /// topics pop.
    pub(crate) async fn start(
        config: SimpleConsumerConfig,
        client: ClientConfig,
    ) -> Result<SimpleConsumer> {
        let topics = config
            .subscriptions
            .iter()
            .map(|s| s.topic.clone())
            .collect();
        let options = config.options.clone();
        ConsumerCore::start(&options, client, topics, |core| async move {
            let inner = Arc::new(Inner {
                core,
                subscriptions: Mutex::new(config.subscriptions.clone()),
                config,
                heartbeat: HeartbeatGate::default(),
                next_broker: AtomicUsize::new(0),
            });
            let registration = Registration::new(inner.core.group(), &inner);
            inner.core.register(registration).await?;
            let checked = inner.check_brokers_pop().await;
            if let Err(e) = checked {
                inner
                    .core
                    .instance()
                    .unregister_consumer(inner.core.group())
                    .await;
                return Err(e);
            }
            info!(
                group = inner.core.group(),
                client_id = inner.core.instance().client_id(),
                "simple consumer started"
            );
            Ok(SimpleConsumer::new(inner))
        })
        .await
    }

    pub(crate) fn subs(&self) -> MutexGuard<'_, Vec<Subscription>> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds or replaces a subscription; checks the topic's brokers pop.
    pub(crate) async fn subscribe(&self, sub: Subscription) -> Result<()> {
        sub.check().map_err(Error::InvalidArgument)?;
        let topic = sub.topic.clone();
        Subscription::upsert(&mut self.subs(), sub);
        if let Err(e) = self.core.instance().route(&topic).await {
            warn!(group = self.core.group(), topic, error = %rmq_protocol::ErrorChain(&e), "no route for a topic yet");
        }
        self.core.instance().send_heartbeat_now().await;
        self.check_brokers_pop().await
    }

    /// The master addresses of the brokers of `topic` with readable
    /// queues, by broker name.
    async fn brokers_of(&self, topic: &str) -> Result<Vec<(String, String)>> {
        let instance = self.core.instance();
        let route = instance.route(topic).await?;
        let mut names: Vec<&str> = route
            .subscribe_queues()
            .iter()
            .map(|q| q.broker_name.as_str())
            .collect();
        names.dedup();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let mq = MessageQueue::new(topic, name, 0);
            out.push((name.to_owned(), offsets::master_addr(instance, &mq).await?));
        }
        Ok(out)
    }

    /// QUERY_ASSIGNMENT to every broker of the subscribed topics: harmless
    /// on 5.x, refused by a 4.x broker (which cannot pop).
    async fn check_brokers_pop(&self) -> Result<()> {
        let topics: Vec<String> = self.subs().iter().map(|s| s.topic.clone()).collect();
        let instance = self.core.instance();
        for topic in topics {
            let Ok(brokers) = self.brokers_of(&topic).await else {
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

    /// The address of the broker that popped `ck`.
    async fn addr_of(&self, topic: &str, ck: &ExtraInfo) -> Result<String> {
        let mq = MessageQueue::new(topic, ck.broker_name.clone(), ck.queue_id);
        offsets::master_addr(self.core.instance(), &mq).await
    }

    fn map_pop_err(e: rmq_client_core::Error, addr: &str) -> Error {
        if is_pop_unsupported(&e) {
            Error::PopNotSupported {
                addr: addr.to_owned(),
            }
        } else {
            Error::Client(e)
        }
    }

    async fn pop(&self, request: ReceiveRequest<'_>) -> Result<Vec<ReceivedMessage>> {
        let brokers = self.brokers_of(request.topic).await?;
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
        let instance = self.core.instance();
        self.heartbeat.ensure(instance, addr).await;
        let group = self.core.group();
        let header = PopMessageRequestHeader {
            consumer_group: group.to_owned(),
            topic: request.topic.to_owned(),
            queue_id: -1,
            max_msg_nums: i32::try_from(request.max.clamp(1, MAX_BATCH)).unwrap_or(1),
            invisible_time: millis(request.invisible),
            poll_time: millis(request.wait),
            born_time: now_ms(),
            init_mode: INIT_MODE_MAX,
            exp_type: Some(request.filter.kind().to_string()),
            exp: Some(request.filter.text().to_owned()),
            order: Some(false),
            attempt_id: None,
            broker_name: Some(broker_name.clone()),
        };
        let result = instance
            .pop_message(addr, broker_name, header, None)
            .await
            .map_err(|e| Self::map_pop_err(e, addr))?;
        let mut out = Vec::with_capacity(result.messages.len());
        for mut msg in result.messages {
            if let Some(origin) = pop_retry_origin(&msg.topic, group) {
                msg.topic = origin.to_owned();
            }
            let Some(ck) = msg.property(POP_CK).and_then(|c| ExtraInfo::parse(c).ok()) else {
                warn!(msg_id = %msg.msg_id, "popped message without a checkpoint; skipped");
                continue;
            };
            let handle = ReceiptHandle::pop(request.topic.to_owned(), ck);
            if msg.reconsume_times > self.config.max_reconsume_times {
                self.to_dlq(&msg, &handle, addr).await;
                continue;
            }
            out.push(ReceivedMessage::new(msg, handle));
        }
        Ok(out)
    }

    /// A message redelivered too often: CONSUMER_SEND_MSG_BACK straight to
    /// the DLQ, then ack it (what the 5.x proxy does). A failure is logged;
    /// the message then comes back after its invisible time.
    async fn to_dlq(&self, msg: &MessageExt, handle: &ReceiptHandle, addr: &str) {
        let header = ConsumerSendMsgBackRequestHeader {
            offset: msg.commit_log_offset,
            group: self.core.group().to_owned(),
            delay_level: -1,
            origin_msg_id: Some(
                msg.property(property::ORIGIN_MESSAGE_ID)
                    .unwrap_or(&msg.msg_id)
                    .to_owned(),
            ),
            origin_topic: Some(msg.topic.clone()),
            unit_mode: Some(false),
            max_reconsume_times: Some(self.config.max_reconsume_times),
            broker_name: Some(handle.broker_name().to_owned()),
        };
        let sent = self.core.instance().consumer_send_back(addr, header).await;
        match sent {
            Ok(()) => {
                if let Err(e) = self.ack_handles(&[handle]).await {
                    warn!(msg_id = %msg.msg_id, error = %rmq_protocol::ErrorChain(&e), "ack after DLQ failed");
                }
                info!(
                    group = self.core.group(),
                    msg_id = %msg.msg_id,
                    reconsume_times = msg.reconsume_times,
                    "message moved to the DLQ"
                );
            }
            Err(e) => {
                warn!(msg_id = %msg.msg_id, error = %rmq_protocol::ErrorChain(&e), "moving a message to the DLQ failed")
            }
        }
    }

    /// ACK_MESSAGE for one handle, BATCH_ACK_MESSAGE per broker for more.
    async fn ack_handles(&self, handles: &[&ReceiptHandle]) -> Result<()> {
        let group = self.core.group();
        let instance = self.core.instance();
        if let [one] = handles {
            let (topic, ck) = one.as_pop()?;
            let addr = self.addr_of(topic, ck).await?;
            let header = AckMessageRequestHeader {
                consumer_group: group.to_owned(),
                topic: ck.real_topic(topic, group),
                queue_id: ck.queue_id,
                extra_info: ck.to_string(),
                offset: ck.queue_offset,
                broker_name: Some(ck.broker_name.clone()),
            };
            return instance
                .ack_message(&addr, header)
                .await
                .map_err(|e| Self::map_pop_err(e, &addr));
        }
        // broker → (topic, retry, queue, checkpoint) → acked bits.
        type CkKey<'a> = (&'a str, &'a str, i32, i64, i64, i64, i32);
        let mut by_broker: BTreeMap<&str, BTreeMap<CkKey<'_>, BatchAck>> = BTreeMap::new();
        for h in handles {
            let (topic, ck) = h.as_pop()?;
            let key = (
                topic,
                ck.retry.as_str(),
                ck.queue_id,
                ck.ck_queue_offset,
                ck.pop_time,
                ck.invisible_time,
                ck.revive_qid,
            );
            let Ok(bit) = u32::try_from(ck.queue_offset - ck.ck_queue_offset) else {
                return Err(Error::InvalidArgument(format!(
                    "handle of offset {} before its checkpoint {}",
                    ck.queue_offset, ck.ck_queue_offset
                )));
            };
            by_broker
                .entry(ck.broker_name.as_str())
                .or_default()
                .entry(key)
                .or_insert_with(|| BatchAck {
                    consumer_group: group.to_owned(),
                    topic: topic.to_owned(),
                    retry: ck.retry.as_str().to_owned(),
                    start_offset: ck.ck_queue_offset,
                    queue_id: ck.queue_id,
                    revive_queue_id: ck.revive_qid,
                    pop_time: ck.pop_time,
                    invisible_time: ck.invisible_time,
                    bit_set: Default::default(),
                })
                .bit_set
                .insert(bit);
        }
        for (broker, acks) in by_broker {
            let Some(first) = handles.iter().find(|h| h.broker_name() == broker) else {
                continue;
            };
            let (topic, ck) = first.as_pop()?;
            let addr = self.addr_of(topic, ck).await?;
            let body = BatchAckMessageRequestBody {
                broker_name: broker.to_owned(),
                acks: acks.into_values().collect(),
            };
            instance
                .batch_ack_message(&addr, &body)
                .await
                .map_err(|e| Self::map_pop_err(e, &addr))?;
        }
        Ok(())
    }

    async fn change(&self, handle: &ReceiptHandle, invisible: Duration) -> Result<ReceiptHandle> {
        let group = self.core.group();
        let (topic, ck) = handle.as_pop()?;
        let addr = self.addr_of(topic, ck).await?;
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: group.to_owned(),
            topic: ck.real_topic(topic, group),
            queue_id: ck.queue_id,
            extra_info: ck.to_string(),
            offset: ck.queue_offset,
            invisible_time: millis(invisible),
            broker_name: Some(ck.broker_name.clone()),
        };
        let answer = self
            .core
            .instance()
            .change_invisible_time(&addr, header)
            .await
            .map_err(|e| Self::map_pop_err(e, &addr))?;
        // The new checkpoint covers this message alone (Java
        // `MQClientAPIImpl.changeInvisibleTimeAsync`).
        let renewed = ExtraInfo {
            ck_queue_offset: ck.queue_offset,
            pop_time: answer.pop_time,
            invisible_time: answer.invisible_time,
            revive_qid: answer.revive_qid,
            ..ck.clone()
        };
        Ok(ReceiptHandle::pop(topic.to_owned(), renewed))
    }

    /// The consumer's own shutdown steps.
    pub(crate) async fn stop(&self) -> Result<()> {
        self.core.cancel().cancel();
        self.core.close_and_wait(SHUTDOWN_WAIT).await;
        info!(group = %self.core.group(), "simple consumer shut down");
        Ok(())
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl SimpleTransport for Inner {
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
