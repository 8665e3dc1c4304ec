//! [`Inner`]: the explicit pull consumer's shared state, its start
//! sequence, the pull and send-back calls, persisting and shutdown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_client_core::{ClientConfig, now_ms};
use rmq_consumer_base::engine::pull::{
    FetchError, Fetched, PullCursor, PullQuery, PullSpec, SubscriptionSource,
};
use rmq_consumer_base::{ConsumerCore, Expression, Guarded, HeartbeatGate, Registration, offsets};
use rmq_offset_store::PersistMode;
use rmq_protocol::header::ConsumerSendMsgBackRequestHeader;
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::{debug, info};

use crate::error::{Error, Result};
use crate::pull::config::PullConsumerConfig;
use crate::pull::consumer::{PullConsumer, PullResult};

/// How long shutdown waits for the persist loop to stop.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// One explicit pull: where, how many, how long the broker may hold it,
/// and the call's own timeout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pull {
    pub(crate) offset: i64,
    pub(crate) max: i32,
    pub(crate) hold: Option<Duration>,
    pub(crate) call_timeout: Duration,
}

/// State shared by the handles and the persist loop.
pub(crate) struct Inner {
    pub(crate) core: ConsumerCore,
    pub(crate) config: PullConsumerConfig,
    heartbeat: HeartbeatGate,
    /// Broker id each queue's last answer suggested (Java
    /// `pullFromWhichNodeTable`).
    suggested: Mutex<HashMap<MessageQueue, i64>>,
}

impl Guarded for Inner {
    const NAME: &'static str = "pull consumer";

    fn core(&self) -> &ConsumerCore {
        &self.core
    }

    fn drop_persist_queues(&self) -> Vec<MessageQueue> {
        let mut mqs: Vec<MessageQueue> = self
            .core
            .offset_store()
            .offset_table(None)
            .into_keys()
            .collect();
        mqs.sort();
        mqs
    }

    fn heartbeat_before_drop_persist(&self) -> bool {
        self.config.options.is_clustering()
    }
}

impl Inner {
    /// Starts the consumer: client instance, offset store, routes of the
    /// registered topics, registration, persist loop.
    pub(crate) async fn start(
        mut config: PullConsumerConfig,
        client: ClientConfig,
    ) -> Result<PullConsumer> {
        // Java `DefaultMQPullConsumer`: the group and the registered topics
        // are in the namespace on the brokers.
        let ns = client.namespace();
        if !ns.is_none() {
            config.options.enter_namespace(ns);
            for topic in &mut config.register_topics {
                ns.wrap_in_place(topic);
            }
        }
        let topics = config.register_topics.clone();
        let options = config.options.clone();
        ConsumerCore::start(&options, client, topics, |core| async move {
            let inner = Arc::new(Inner {
                core,
                config,
                heartbeat: HeartbeatGate::default(),
                suggested: Mutex::new(HashMap::new()),
            });
            let registration = Registration::new(inner.core.group(), &inner);
            inner.core.register(registration).await?;
            inner.spawn_persist_loop();
            info!(
                group = inner.core.group(),
                client_id = inner.core.instance().client_id(),
                "pull consumer started"
            );
            Ok(PullConsumer::new(inner))
        })
        .await
    }

    fn suggested(&self) -> MutexGuard<'_, HashMap<MessageQueue, i64>> {
        self.suggested
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// One pull of `queue` filtered by `expression`, the subscription in
    /// the request; tags re-checked on the client (the pull engine's
    /// fetch, its errors returned).
    pub(crate) async fn pull(
        &self,
        queue: &MessageQueue,
        expression: Expression,
        pull: Pull,
    ) -> Result<PullResult> {
        let queue = &self.core.namespace().wrap_queue(queue);
        if pull.offset < 0 {
            return Err(Error::InvalidArgument(format!(
                "offset {} is negative",
                pull.offset
            )));
        }
        if pull.max < 1 {
            return Err(Error::InvalidArgument(format!(
                "max_nums {} must be at least 1",
                pull.max
            )));
        }
        expression
            .check(&queue.topic)
            .map_err(Error::InvalidArgument)?;
        let sub = expression.to_subscription(&queue.topic, now_ms());
        let broker_id = self.suggested().get(queue).copied().unwrap_or(0);
        let mut cursor = PullCursor::at_broker(broker_id);
        let query = PullQuery {
            group: self.core.group(),
            mq: queue,
            sub: &sub,
            spec: PullSpec {
                offset: pull.offset,
                max: pull.max,
                hold: pull.hold,
                commit_offset: 0,
                commit: false,
                subscription: SubscriptionSource::InRequest,
                lite: false,
            },
            retry_topic: None,
            namespace: self.core.namespace(),
            timeout: Some(pull.call_timeout),
            gate: Some(&self.heartbeat),
        };
        let fetched = cursor.fetch(self.core.instance(), &query).await;
        // Every answer's suggestion counts, the last one wins.
        if matches!(fetched, Ok(_) | Err(FetchError::Decode(_))) {
            self.suggested().insert(queue.clone(), cursor.broker_id());
        }
        let Fetched {
            answer, messages, ..
        } = fetched?;
        Ok(PullResult {
            status: answer.status,
            next_begin_offset: answer.next_begin_offset,
            min_offset: answer.min_offset,
            max_offset: answer.max_offset,
            messages,
        })
    }

    /// CONSUMER_SEND_MSG_BACK of `msg` to the master of its broker (its
    /// store host when it names no broker).
    pub(crate) async fn send_back(&self, msg: &MessageExt, delay_level: i32) -> Result<()> {
        let instance = self.core.instance();
        // The message's topic left the namespace; the broker names it as
        // stored (Java wraps it again).
        let topic = self.core.namespace().wrap(&msg.topic);
        let queue = MessageQueue::new(topic.clone(), msg.broker_name.clone(), msg.queue_id);
        let addr = if msg.broker_name.is_empty() {
            msg.store_host.to_string()
        } else {
            offsets::master_addr(instance, &queue).await?
        };
        self.heartbeat.ensure(instance, &addr).await;
        let header = ConsumerSendMsgBackRequestHeader {
            offset: msg.commit_log_offset,
            group: self.core.group().to_owned(),
            delay_level,
            origin_msg_id: Some(msg.msg_id.clone()),
            origin_topic: Some(topic),
            unit_mode: Some(false),
            max_reconsume_times: Some(self.config.max_reconsume_times),
            broker_name: (!msg.broker_name.is_empty()).then(|| msg.broker_name.clone()),
        };
        instance.consumer_send_back(&addr, header).await?;
        debug!(group = %self.core.group(), msg_id = %msg.msg_id, delay_level, "message sent back");
        Ok(())
    }

    /// Before an offset call to the queue's broker: make sure the broker has
    /// seen the group (clustering only; the file store needs no broker).
    pub(crate) async fn ensure_heartbeat_for(&self, queue: &MessageQueue) {
        if !self.config.options.is_clustering() {
            return;
        }
        let instance = self.core.instance();
        match offsets::master_addr::<crate::error::PullConsumerKind>(instance, queue).await {
            Ok(addr) => self.heartbeat.ensure(instance, &addr).await,
            Err(e) => {
                debug!(%queue, error = %rmq_protocol::ErrorChain(&e), "no broker address for the heartbeat check")
            }
        }
    }

    /// Persists every in-memory offset.
    pub(crate) async fn persist_all(&self, mode: PersistMode) -> Result<()> {
        let store = self.core.offset_store();
        let mut mqs: Vec<MessageQueue> = store.offset_table(None).into_keys().collect();
        if mqs.is_empty() {
            return Ok(());
        }
        mqs.sort();
        for mq in &mqs {
            self.ensure_heartbeat_for(mq).await;
        }
        Ok(store.persist_all(&mqs, mode).await?)
    }

    /// The consumer's own shutdown steps: stop the persist loop, persist
    /// (waiting for the broker).
    pub(crate) async fn stop(&self) -> Result<()> {
        self.core.cancel().cancel();
        self.core.close_and_wait(SHUTDOWN_WAIT).await;
        let persisted = self.persist_all(PersistMode::Sync).await;
        info!(group = %self.core.group(), "pull consumer shut down");
        persisted
    }

    /// Every persist interval (client config, Java
    /// `persistConsumerOffsetInterval`, 5 s), persists the in-memory offsets
    /// (oneway, like Java's periodic persist).
    fn spawn_persist_loop(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let every = self
            .core
            .instance()
            .config()
            .persist_consumer_offset_interval();
        self.core
            .spawn_every(every, self.core.cancel().clone(), move || {
                let inner = weak.upgrade();
                async move {
                    match inner {
                        Some(inner) => inner.persist_all(PersistMode::Oneway).await,
                        None => Ok(()),
                    }
                }
            });
    }
}
