//! The rebalance loop (Java `RebalanceService` + `RebalanceImpl` +
//! `RebalancePushImpl`): on each trigger, for each subscribed topic,
//! allocate → diff against the held queues → drop removed queues, create
//! added ones, and tell the brokers (heartbeat) when the assignment
//! changed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_offset_store::PersistMode;
use rmq_protocol::MessageQueue;
use rmq_rebalance::{RebalanceTrigger, Rebalancer, diff};
use tracing::{Instrument, debug, info, warn};

use crate::error::Result;
use crate::inner::Inner;
use crate::pull::process_queue::ProcessQueue;
use crate::pull::pull_loop;
use crate::pull::queues::Assigned;
use crate::telemetry;
use rmq_client_core::now_ms;

/// Minimum spacing of two rebalances (Java
/// `rocketmq.client.rebalance.minInterval`).
const MIN_REBALANCE_INTERVAL: Duration = Duration::from_secs(1);

/// The trigger for a consumer rebalancing every `interval`.
pub(crate) fn trigger(interval: Duration) -> RebalanceTrigger {
    RebalanceTrigger::with_intervals(interval, MIN_REBALANCE_INTERVAL)
}

/// Spawns the rebalance loop (a run is cut only by the consumer's root
/// token: a dropped queue must be persisted). The caller ran the first
/// rebalance.
pub(crate) fn spawn(inner: &Arc<Inner>) {
    inner.core.spawn_rebalance_loop(
        inner,
        |inner| &inner.trigger,
        inner.stop_pull.clone(),
        Some(inner.core.cancel().clone()),
        |inner| async move { rebalance_once(&inner).await },
    );
}

/// One rebalance of every subscribed topic, in its `rebalance` span, timed.
pub(crate) async fn rebalance_once(inner: &Arc<Inner>) {
    let started = Instant::now();
    rebalance_topics(inner)
        .instrument(telemetry::rebalance_span(inner.core.group()))
        .await;
    inner.metrics.rebalanced(started.elapsed());
}

async fn rebalance_topics(inner: &Arc<Inner>) {
    let rebalancer = Rebalancer::new(
        inner.core.instance().clone(),
        inner.core.group().to_owned(),
        inner.model(),
        inner.config.allocate_strategy().clone(),
    );
    for topic in inner.subscriptions.topics() {
        if inner.stop_pull.is_cancelled() {
            return;
        }
        let health = inner.core.health();
        match rebalancer.allocate(&topic).await {
            Ok(Some(assigned)) => {
                health.rebalanced(None);
                apply(inner, &topic, assigned).await;
            }
            Ok(None) => health.rebalanced(None),
            Err(e) => {
                if let rmq_rebalance::Error::Client(c) = &e {
                    health.rebalanced(Some(c));
                }
                warn!(topic, error = %rmq_protocol::ErrorChain(&e), "rebalance of the topic failed; retrying at the next one")
            }
        }
    }
}

/// Applies a topic's new assignment (Java
/// `updateProcessQueueTableInRebalance` + `messageQueueChanged`).
async fn apply(inner: &Arc<Inner>, topic: &str, assigned: Vec<MessageQueue>) {
    let held = inner.queues.process_queues(Some(topic));
    let now = Instant::now();
    let held_mqs: Vec<MessageQueue> = held.iter().map(|(mq, _)| mq.clone()).collect();
    let d = diff(&held_mqs, &assigned);
    let mut removed = d.removed;
    let mut added = d.added;
    // A held queue whose pull loop is stuck is dropped and recreated.
    for (mq, pq) in &held {
        if assigned.contains(mq) && pq.is_pull_expired(now, inner.config.pull_max_idle_time) {
            warn!(queue = %mq, "the queue has not pulled for too long; recreating it");
            removed.push(mq.clone());
            added.push(mq.clone());
        }
    }
    inner.queues.retain_pending(topic, &assigned);
    let mut changed = false;
    // Concurrently: an orderly removal may wait for a listener call.
    futures::future::join_all(
        removed
            .iter()
            .map(|mq| drop_queue(inner, mq, assigned.contains(mq))),
    )
    .await;
    for mq in &removed {
        info!(queue = %mq, "queue dropped by rebalance");
        changed = true;
    }
    let revoked: Vec<MessageQueue> = removed
        .iter()
        .filter(|mq| !assigned.contains(mq))
        .cloned()
        .collect();
    inner.core.health().revoked(topic, &revoked);
    // Orderly clustering: a new queue is locked before anything else; one
    // locked by another member (not released yet) is retried soon (Java
    // rebalanceLater(500 ms); here the next run, ≥ 1 s later).
    if let Some(locks) = &inner.locks {
        if !added.is_empty() && !inner.stop_pull.is_cancelled() {
            let granted = locks.lock(&added).await;
            if granted.len() < added.len() {
                info!(
                    refused = added.len() - granted.len(),
                    "some new queues are still locked by another member; retrying soon"
                );
                inner.trigger.notify();
            }
            added.retain(|mq| granted.contains(mq));
        }
    }
    let mut started = Vec::new();
    for mq in added {
        if inner.stop_pull.is_cancelled() {
            break;
        }
        // Java removeDirtyOffset: the store is the truth for a new queue.
        inner.core.offset_store().remove_offset(&mq);
        let offset = match start_offset(inner, &mq).await {
            Ok(o) => o,
            Err(e) => {
                warn!(queue = %mq, error = %rmq_protocol::ErrorChain(&e), "cannot compute the start offset; retrying at the next rebalance");
                if let Some(locks) = &inner.locks {
                    locks.unlock(std::slice::from_ref(&mq), true).await;
                }
                continue;
            }
        };
        let pq = Arc::new(ProcessQueue::with_metrics(
            Instant::now(),
            inner.metrics.queue(&mq),
        ));
        pq.set_next_offset(offset);
        let cancel = inner.stop_pull.child_token();
        let assigned = Assigned {
            pq: pq.clone(),
            cancel: cancel.clone(),
        };
        if inner.queues.insert(mq.clone(), assigned) {
            info!(queue = %mq, offset, "queue added by rebalance");
            started.push((mq, pq, offset, cancel));
            changed = true;
        }
    }
    if changed {
        announce(inner, topic).await;
    }
    let new: Vec<MessageQueue> = started
        .iter()
        .map(|(mq, ..)| mq.clone())
        .filter(|mq| !held_mqs.contains(mq))
        .collect();
    for (mq, pq, offset, cancel) in started {
        if inner.is_orderly() {
            crate::service::orderly::spawn(inner, mq.clone(), pq.clone(), cancel.clone());
        }
        pull_loop::spawn(inner, mq, pq, offset, cancel);
    }
    inner.core.health().assigned(topic, &new);
}

/// Drops an assigned queue (rebalance): detach, persist its offset,
/// forget it (Java `removeUnnecessaryMessageQueue`). Orderly clustering
/// consumers also wait (bounded) for the call in flight and unlock the
/// queue, unless `still_assigned` (a stuck queue being recreated).
async fn drop_queue(inner: &Arc<Inner>, mq: &MessageQueue, still_assigned: bool) {
    if let Some(locks) = &inner.locks {
        crate::service::orderly::drop_queue(inner, locks, mq, still_assigned).await;
        return;
    }
    if inner.queues.detach(mq, None).is_none() {
        return;
    }
    let store = inner.core.offset_store();
    if let Err(e) = store.persist(mq, PersistMode::Sync).await {
        warn!(group = %inner.core.group(), queue = %mq, error = %rmq_protocol::ErrorChain(&e), "cannot persist the offset of a dropped queue");
    }
    store.remove_offset(mq);
}

/// The assignment of `topic` changed: bump its `subVersion` and heartbeat
/// at once (Java `messageQueueChanged`), then let pulls use the new version.
async fn announce(inner: &Inner, topic: &str) {
    let Some(version) = inner.subscriptions.bump_version(topic, now_ms()) else {
        return;
    };
    inner.core.instance().send_heartbeat_now().await;
    inner.subscriptions.confirm_version(topic, version);
    debug!(topic, version, "subscription version announced");
}

/// The start offset of `mq`: a restart offset recorded by OFFSET_MOVED or
/// a reset; else the stored offset, else the consume-from rule with the
/// group's own retry topic counted as the retry topic
/// ([`rmq_consumer_base::offsets::start_offset`]).
async fn start_offset(inner: &Inner, mq: &MessageQueue) -> Result<i64> {
    let store = inner.core.offset_store();
    if let Some(offset) = inner.queues.take_pending_offset(mq) {
        store.update_offset(mq, offset, false);
        return Ok(offset);
    }
    rmq_consumer_base::offsets::start_offset(
        inner.core.instance(),
        &**store,
        mq,
        inner.config.consume_from(),
        mq.topic == inner.retry_topic,
    )
    .await
}

/// Applies an offset reset requested by the broker
/// (RESET_CONSUMER_CLIENT_OFFSET, Java `resetOffset`): for every held queue
/// of `topic` listed, drop it, store and persist the new offset, and let
/// the rebalance recreate it from there.
pub(crate) fn spawn_reset(inner: &Arc<Inner>, topic: String, offsets: Vec<(MessageQueue, i64)>) {
    let task_inner = inner.clone();
    inner.core.tasks().spawn(async move {
        let inner = task_inner;
        if inner.stop_pull.is_cancelled() {
            return;
        }
        let mut any = false;
        for (mq, offset) in offsets {
            if mq.topic != topic || inner.queues.detach(&mq, None).is_none() {
                continue;
            }
            info!(queue = %mq, offset, "offset reset by the broker");
            let store = inner.core.offset_store();
            store.update_and_freeze_offset(&mq, offset);
            if let Err(e) = store
                .persist(&mq, rmq_offset_store::PersistMode::Sync)
                .await
            {
                warn!(queue = %mq, error = %rmq_protocol::ErrorChain(&e), "cannot persist the reset offset");
            }
            store.remove_offset(&mq);
            inner.queues.set_pending_offset(mq, offset);
            any = true;
        }
        if any {
            inner.trigger.notify();
        }
    });
}
