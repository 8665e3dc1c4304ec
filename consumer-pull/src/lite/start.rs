//! The lite pull consumer's start sequence (Java
//! `DefaultLitePullConsumerImpl.start`).

use std::collections::BTreeMap;
use std::sync::Arc;

use rmq_client_core::ClientConfig;
use rmq_consumer_base::{ConsumerCore, Registration};
use rmq_protocol::body::SubscriptionData;
use tracing::{info, warn};

use crate::error::Result;
use crate::lite::assignment;
use crate::lite::config::LitePullConsumerConfig;
use crate::lite::inner::{Inner, Mode};

/// The start sequence (Java `DefaultLitePullConsumerImpl.start`):
/// instance, offset store, routes, registration; then the first
/// rebalance (subscribe) or the assigned queues, and the loops.
pub(crate) async fn start<H>(
    mut config: LitePullConsumerConfig,
    client: ClientConfig,
    handle: impl FnOnce(Arc<Inner>) -> H + Send,
) -> Result<H>
where
    H: Send,
{
    // Java `DefaultLitePullConsumer`: the group, the subscribed topics and
    // the assigned queues are in the namespace on the brokers.
    let ns = client.namespace();
    if !ns.is_none() {
        config.options.enter_namespace(ns);
        for sub in &mut config.subscriptions {
            ns.wrap_in_place(&mut sub.topic);
        }
        for mq in &mut config.assigned {
            ns.wrap_in_place(&mut mq.topic);
        }
    }
    let mut topics: Vec<String> = config
        .subscriptions
        .iter()
        .map(|s| s.topic.clone())
        .collect();
    topics.extend(config.assigned.iter().map(|mq| mq.topic.clone()));
    topics.sort_unstable();
    topics.dedup();
    let options = config.options.clone();
    ConsumerCore::start(&options, client, topics, |core| {
        start_on(core, config, handle)
    })
    .await
}

async fn start_on<H>(
    core: ConsumerCore,
    config: LitePullConsumerConfig,
    handle: impl FnOnce(Arc<Inner>) -> H,
) -> Result<H> {
    let version = core.started_at_ms();
    let subscriptions: BTreeMap<String, Arc<SubscriptionData>> = config
        .subscriptions
        .iter()
        .map(|s| (s.topic.clone(), Arc::new(s.to_data(version))))
        .collect();
    let mode = if !subscriptions.is_empty() {
        Mode::Subscribe
    } else if !config.assigned.is_empty() {
        Mode::Assign
    } else {
        Mode::None
    };
    let assigned = config.assigned.clone();
    let inner = Inner::new(core, config, mode, subscriptions);
    // Registering heartbeats at once: the broker must know the group
    // before it lists it for the rebalance or accepts its offsets.
    let registration = Registration::new(inner.core.group(), &inner);
    inner.core.register(registration).await?;
    let consumer = handle(inner.clone());
    let group = inner.core.group();
    match mode {
        Mode::Subscribe => {
            // A new trigger is due at once: consume that run inline so
            // the queues are assigned when start returns.
            inner.trigger.wait().await;
            assignment::rebalance_once(&inner).await;
        }
        Mode::Assign => {
            // Fails only once shut down, which cannot be yet; not `?`:
            // the handle above already owns the instance release.
            if let Err(e) = assignment::assign(&inner, assigned).await {
                warn!(group, error = %rmq_protocol::ErrorChain(&e), "assigning the queues failed");
            }
        }
        Mode::None => {}
    }
    assignment::spawn_rebalance_loop(&inner);
    if inner.config.auto_commit {
        assignment::spawn_auto_commit(&inner);
    } else {
        assignment::spawn_persist_loop(&inner);
    }
    info!(
        group,
        client_id = inner.core.instance().client_id(),
        mode = mode.name(),
        queues = inner.state().buffer.queues().len(),
        "lite pull consumer started"
    );
    inner
        .core
        .health()
        .emit(rmq_consumer_base::ConsumerEvent::Started);
    Ok(consumer)
}
