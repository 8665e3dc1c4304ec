//! The push consumer's start sequence over the brokers (Java
//! `DefaultMQPushConsumerImpl.start`): the client instance, the shared
//! state, registration, the first rebalance (or the pop assignments) and
//! the background loops.

use std::sync::Arc;

use rmq_client_core::ClientConfig;
use rmq_consumer_base::{ConsumerCore, DropGuard, Registration};
use rmq_offset_store::PersistMode;
use rmq_protocol::body::MessageModel;
use rmq_rebalance::QueueLocks;
use tokio::sync::Semaphore;
use tracing::info;

use crate::config::{PushConsumerConfig, retry_topic};
use crate::error::Result;
use crate::inner::{Inner, Listener};
use crate::message_trace;
use crate::pull::lock_renewal;
use crate::pull::queues::QueueTable;
use crate::pull::rebalance;
use crate::pull::subscriptions::Subscriptions;
use crate::telemetry::ConsumerMetrics;

/// The start sequence (Java `DefaultMQPushConsumerImpl.start`).
pub(crate) async fn start(
    mut config: PushConsumerConfig,
    client: ClientConfig,
    listener: Listener,
) -> Result<Arc<DropGuard<Inner>>> {
    config.validate_detailed()?;
    let ns = client.namespace();
    if !ns.is_none() {
        // Java `DefaultMQPushConsumer.start` and `subscribe`: the group and
        // the topics are in the namespace on the brokers, and so the retry
        // topic is `%RETRY%<namespace>%<group>`.
        config.options.enter_namespace(ns);
        for sub in &mut config.subscriptions {
            ns.wrap_in_place(&mut sub.topic);
        }
        config.validate_detailed()?;
    }
    let retry = retry_topic(config.group());
    let clustering = config.message_model() == MessageModel::Clustering;
    let mut topics: Vec<String> = config
        .subscriptions
        .iter()
        .map(|s| s.topic.clone())
        .collect();
    if clustering {
        topics.push(retry.clone());
    }
    let options = config.options.clone();
    ConsumerCore::start(&options, client, topics, |core| {
        start_on(core, config, retry.clone(), listener)
    })
    .await
}

async fn start_on(
    core: ConsumerCore,
    config: PushConsumerConfig,
    retry: String,
    listener: Listener,
) -> Result<Arc<DropGuard<Inner>>> {
    let clustering = config.message_model() == MessageModel::Clustering;
    let subscriptions = Subscriptions::new(
        &config.subscriptions,
        clustering.then_some(retry.as_str()),
        core.started_at_ms(),
    );
    let stop_consume = core.cancel().child_token();
    let stop_pull = stop_consume.child_token();
    let locks = (clustering && matches!(listener, Listener::Orderly(_))).then(|| {
        Arc::new(
            QueueLocks::new(core.instance().clone(), core.group().to_owned())
                .with_lease(config.lock_lease),
        )
    });
    let inner = Arc::new(Inner {
        retry_topic: retry,
        listener,
        locks,
        semaphore: Arc::new(Semaphore::new(config.consume_concurrency)),
        subscriptions,
        queues: QueueTable::default(),
        stop_consume,
        stop_pull,
        trigger: rebalance::trigger(config.rebalance_interval),
        metrics: ConsumerMetrics::new(core.group()),
        trace: message_trace::start(&config, core.instance()),
        core,
        config,
    });

    // Registering heartbeats at once: the broker must know the group and
    // its subscriptions before offsets or pulls.
    inner
        .core
        .register(Registration::new(inner.core.group(), &inner))
        .await?;
    let guard = Arc::new(DropGuard::new(inner.clone()));
    // First rebalance inline, so queues are assigned when start returns
    // (a new trigger is due at once: consume that run).
    inner.trigger.wait().await;
    if inner.config.pop_mode {
        // The brokers keep the offsets: no rebalance, no persisting.
        if let Err(e) = crate::pop::start(&inner).await {
            // The root token cancels stop_consume and stop_pull, its children.
            inner.core.abandon_start().await;
            return Err(e);
        }
    } else {
        rebalance::rebalance_once(&inner).await;
        rebalance::spawn(&inner);
        spawn_persist_loop(&inner);
        lock_renewal::spawn(&inner);
    }
    info!(
        group = inner.core.group(),
        client_id = inner.core.instance().client_id(),
        model = %inner.config.message_model(),
        orderly = inner.is_orderly(),
        pop = inner.config.pop_mode,
        queues = inner.queues.len(),
        "push consumer started"
    );
    inner
        .core
        .health()
        .emit(rmq_consumer_base::ConsumerEvent::Started);
    Ok(guard)
}

/// Every persist interval (client config, Java
/// `persistConsumerOffsetInterval`, 5 s; first after one interval),
/// persists the offsets of the assigned queues (oneway).
fn spawn_persist_loop(inner: &Arc<Inner>) {
    let every = inner
        .core
        .instance()
        .config()
        .persist_consumer_offset_interval();
    let shared = inner.clone();
    inner
        .core
        .spawn_every(every, inner.stop_pull.clone(), move || {
            let inner = shared.clone();
            async move {
                inner.refresh_gauges();
                let mqs = inner.queues.assigned(None);
                inner
                    .core
                    .offset_store()
                    .persist_all(&mqs, PersistMode::Oneway)
                    .await
            }
        });
}
