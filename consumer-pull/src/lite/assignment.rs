//! Which queues the lite pull consumer reads: the rebalance loop
//! (`subscribe`), `assign`, adding and dropping a queue, `seek`, a reset
//! by the broker, and the auto-commit loop.
//!
//! Every change of the assignment runs under `Inner::ops`, so a rebalance,
//! an `assign`, a `seek` and the shutdown never interleave.

use std::sync::Arc;
use std::time::Instant;

use rmq_offset_store::PersistMode;
use rmq_protocol::MessageQueue;
use tracing::{debug, info, warn};

use rmq_consumer_base::offsets;

use crate::error::{Error, Result};
use crate::lite::inner::{Inner, Mode};
use crate::lite::pull_task;

/// The rebalance task: runs a rebalance whenever the trigger says so
/// (every rebalance interval, and at once when the group changes). A run is
/// not raced with the cancellation (a rebalance half done could drop a queue
/// without persisting its offset); shutdown waits for it (its broker calls
/// are bounded).
pub(crate) fn spawn_rebalance_loop(inner: &Arc<Inner>) {
    inner.core.spawn_rebalance_loop(
        inner,
        |inner| &inner.trigger,
        inner.core.cancel().clone(),
        None,
        |inner| async move { rebalance_once(&inner).await },
    );
}

/// One rebalance of every subscribed topic (subscribe mode only): drop
/// queues no longer assigned (committing what was handed out, with
/// auto-commit), start newly assigned ones.
pub(crate) async fn rebalance_once(inner: &Arc<Inner>) {
    let _ops = inner.ops.lock().await;
    if inner.is_closed() {
        return;
    }
    let (mode, topics) = {
        let st = inner.state();
        (
            st.mode,
            st.subscriptions.keys().cloned().collect::<Vec<_>>(),
        )
    };
    if mode != Mode::Subscribe {
        return;
    }
    let started = Instant::now();
    let stale: Vec<MessageQueue> = inner
        .state()
        .buffer
        .queues()
        .into_iter()
        .filter(|mq| !topics.contains(&mq.topic))
        .collect();
    for mq in &stale {
        drop_queue(inner, mq).await;
    }
    let health = inner.core.health();
    for topic in &topics {
        let held = inner.state().buffer.queues();
        match inner.rebalancer.rebalance(topic, &held).await {
            Ok(Some(d)) if d.is_changed() => {
                health.rebalanced(None);
                for mq in &d.removed {
                    drop_queue(inner, mq).await;
                }
                health.revoked(topic, &d.removed);
                for mq in &d.added {
                    add_queue(inner, mq, None);
                }
                health.assigned(topic, &d.added);
            }
            Ok(_) => health.rebalanced(None),
            Err(e) => {
                if let rmq_rebalance::Error::Client(c) = &e {
                    health.rebalanced(Some(c));
                }
                warn!(group = %inner.core.group(), topic, error = %rmq_protocol::ErrorChain(&e), "rebalance failed; trying again later")
            }
        }
    }
    inner.metrics.rebalanced(started.elapsed());
}

/// Reads exactly `queues` (sorted, deduplicated, non-empty): drops the
/// others, starts the new ones.
pub(crate) async fn assign(inner: &Arc<Inner>, queues: Vec<MessageQueue>) -> Result<()> {
    let _ops = inner.ops.lock().await;
    if inner.is_closed() {
        return Err(Error::Shutdown);
    }
    let mut topics: Vec<&str> = queues.iter().map(|mq| mq.topic.as_str()).collect();
    topics.dedup();
    for topic in topics {
        if inner.core.instance().cached_route(topic).is_none() {
            if let Err(e) = inner.core.instance().route(topic).await {
                warn!(group = %inner.core.group(), topic, error = %rmq_protocol::ErrorChain(&e), "no route for an assigned topic yet");
            }
        }
    }
    let held = inner.state().buffer.queues();
    let revoked: Vec<MessageQueue> = held
        .iter()
        .filter(|mq| !queues.contains(mq))
        .cloned()
        .collect();
    for mq in &revoked {
        drop_queue(inner, mq).await;
    }
    let added: Vec<MessageQueue> = queues
        .iter()
        .filter(|mq| !held.contains(mq))
        .cloned()
        .collect();
    for mq in &added {
        add_queue(inner, mq, None);
    }
    per_topic(&revoked, |topic, qs| inner.core.health().revoked(topic, qs));
    per_topic(&added, |topic, qs| inner.core.health().assigned(topic, qs));
    info!(group = %inner.core.group(), queues = ?queues, "assigned");
    Ok(())
}

/// Starts reading `mq` (from `start`, else its committed offset or the
/// consume-from rule). Caller holds `ops`.
pub(crate) fn add_queue(inner: &Arc<Inner>, mq: &MessageQueue, start: Option<i64>) {
    let (generation, token) = {
        let mut st = inner.state();
        let Some(generation) = st.buffer.insert_queue(mq) else {
            return;
        };
        let token = inner.child_token();
        st.pulls.insert(mq.clone(), token.clone());
        st.reported.remove(mq);
        (generation, token)
    };
    // Forget any offset left in memory: the start offset is read from the
    // store (Java `removeDirtyOffset`).
    inner.core.offset_store().remove_offset(mq);
    debug!(group = %inner.core.group(), queue = %mq, "queue added");
    pull_task::spawn(inner, mq.clone(), generation, token, start);
}

/// Stops reading `mq`: drops its buffered messages, stops its pull task,
/// commits what was handed out (with auto-commit), persists its offset and
/// forgets it (Java `removeUnnecessaryMessageQueue`). Caller holds `ops`.
pub(crate) async fn drop_queue(inner: &Arc<Inner>, mq: &MessageQueue) {
    let removed = {
        let mut st = inner.state();
        if let Some(token) = st.pulls.remove(mq) {
            token.cancel();
        }
        st.reported.remove(mq);
        st.buffer.remove_queue(mq)
    };
    let Some(removed) = removed else {
        return;
    };
    inner.space.notify_waiters();
    let store = inner.core.offset_store();
    if inner.config.auto_commit {
        if let Some(offset) = removed.handed_out {
            store.update_offset(mq, offset, false);
        }
    }
    // One queue only: `persist_all` would also forget the in-memory
    // offsets of the other queues.
    if inner.config.options.is_clustering() {
        inner.ensure_heartbeat(mq).await;
    }
    if let Err(e) = store.persist(mq, PersistMode::Sync).await {
        warn!(group = %inner.core.group(), queue = %mq, error = %rmq_protocol::ErrorChain(&e), "cannot persist the offset of a dropped queue");
    }
    store.remove_offset(mq);
    inner.metrics.forget(mq);
    debug!(
        group = %inner.core.group(), queue = %mq, dropped = removed.dropped,
        handed_out = ?removed.handed_out, "queue dropped"
    );
}

/// Restarts `mq` at `pick(min, max)` after checking the range.
pub(crate) async fn seek(
    inner: &Arc<Inner>,
    mq: &MessageQueue,
    pick: impl FnOnce(i64, i64) -> Result<i64>,
) -> Result<()> {
    let _ops = inner.ops.lock().await;
    if inner.is_closed() {
        return Err(Error::Shutdown);
    }
    if !inner.state().buffer.contains(mq) {
        return Err(Error::NotAssigned { queue: mq.clone() });
    }
    let min = offsets::min_offset(inner.core.instance(), mq).await?;
    let max = offsets::max_offset(inner.core.instance(), mq).await?;
    let offset = pick(min, max)?;
    if offset < min || offset > max {
        return Err(Error::OffsetOutOfRange {
            queue: mq.clone(),
            offset,
            min,
            max,
        });
    }
    let dropped =
        restart(inner, mq, offset).ok_or_else(|| Error::NotAssigned { queue: mq.clone() })?;
    info!(group = %inner.core.group(), queue = %mq, offset, dropped, "seek");
    Ok(())
}

/// Restarts the assigned queue `mq` at `offset` (the caller holds
/// `Inner::ops`): its buffered messages are dropped, `offset` becomes its
/// handed-out position and a new pull task replaces the old one. The
/// number of dropped messages; `None` when `mq` is not assigned.
fn restart(inner: &Arc<Inner>, mq: &MessageQueue, offset: i64) -> Option<usize> {
    let (generation, token, dropped) = {
        let mut st = inner.state();
        let (generation, dropped) = st.buffer.seek(mq, offset)?;
        let token = inner.child_token();
        if let Some(old) = st.pulls.insert(mq.clone(), token.clone()) {
            old.cancel();
        }
        st.reported.remove(mq);
        (generation, token, dropped)
    };
    inner.space.notify_waiters();
    pull_task::spawn(inner, mq.clone(), generation, token, Some(offset));
    Some(dropped)
}

/// Applies an offset reset the broker asked for (RESET_CONSUMER_CLIENT_OFFSET,
/// sent by brokers without server-side reset, e.g. 4.9.x, on mqadmin
/// `resetOffsetByTime` with force): every assigned queue of `topic` listed
/// restarts at its new offset as after a [`seek`], and the offset store
/// holds that offset at once, so that the next commit keeps the reset
/// (Java's `MQClientInstance.resetOffset` does this for push consumers; the
/// lite consumer treats it as a seek). Brokers with server-side reset (5.x)
/// answer the next pull with PULL_OFFSET_MOVED instead, which the pull task
/// follows (Java `DefaultLitePullConsumerImpl`'s `updatePullOffset`).
pub(crate) fn spawn_reset(inner: &Arc<Inner>, topic: String, offsets: Vec<(MessageQueue, i64)>) {
    let task_inner = inner.clone();
    inner.core.tasks().spawn(async move {
        let inner = task_inner;
        // Shutdown holds `ops` while it waits for this task: give way.
        let _ops = tokio::select! {
            ops = inner.ops.lock() => ops,
            () = inner.core.cancel().cancelled() => return,
        };
        if inner.is_closed() {
            return;
        }
        let store = inner.core.offset_store();
        for (mq, offset) in offsets {
            if mq.topic != topic {
                continue;
            }
            match restart(&inner, &mq, offset) {
                Some(dropped) => {
                    store.update_offset(&mq, offset, false);
                    info!(group = %inner.core.group(), queue = %mq, offset, dropped, "offset reset by the broker");
                }
                None => debug!(group = %inner.core.group(), queue = %mq, offset, "offset reset for a queue not assigned here"),
            }
        }
    });
}

/// Every auto-commit interval, commits the handed-out offsets (persisting
/// oneway, like Java's periodic persist).
pub(crate) fn spawn_auto_commit(inner: &Arc<Inner>) {
    let task_inner = inner.clone();
    inner.core.spawn_every(
        inner.config.auto_commit_interval,
        inner.core.cancel().clone(),
        move || {
            let inner = task_inner.clone();
            async move { inner.commit(PersistMode::Oneway).await }
        },
    );
}

/// Without auto-commit, every persist interval (client config, Java
/// `persistConsumerOffsetInterval`, 5 s) persists the committed in-memory
/// offsets of the assigned queues (oneway), as Java's client instance does
/// for every consumer: a persist that failed or reached the broker out of
/// order is repaired within one interval.
pub(crate) fn spawn_persist_loop(inner: &Arc<Inner>) {
    let weak = Arc::downgrade(inner);
    let every = inner
        .core
        .instance()
        .config()
        .persist_consumer_offset_interval();
    inner
        .core
        .spawn_every(every, inner.core.cancel().clone(), move || {
            let inner = weak.upgrade();
            async move {
                match inner {
                    Some(inner) => {
                        let queues = inner.state().buffer.queues();
                        inner.persist(&queues, PersistMode::Oneway).await
                    }
                    None => Ok(()),
                }
            }
        });
}

/// Calls `f` once per topic of `queues` (sorted) with that topic's queues.
fn per_topic(queues: &[MessageQueue], mut f: impl FnMut(&str, &[MessageQueue])) {
    for chunk in queues.chunk_by(|a, b| a.topic == b.topic) {
        if let Some(first) = chunk.first() {
            f(&first.topic, chunk);
        }
    }
}
