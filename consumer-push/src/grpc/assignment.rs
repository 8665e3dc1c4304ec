//! The assignment loop (Java `PushConsumerImpl.scanAssignments`):
//! `QueryAssignment` per subscribed topic at start, then every rebalance
//! interval (at most 5 s) and on `rebalance_now`; a receive loop per new
//! assignment, the loops of assignments gone stopped (their messages in
//! hand are still consumed and settled).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rmq_consumer_base::engine::grpc::{filter_expression, readable};
use rmq_consumer_base::{ConsumerEvent, Subscription};
use rmq_grpc::proto;
use rmq_protocol::MessageQueue;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use super::queue::QueueState;
use super::receive::ReceiveLoop;
use super::state::GrpcInner;

/// The longest pause between two assignment queries (Java's period).
const MAX_INTERVAL: Duration = Duration::from_secs(5);

/// Queries the first assignments (their receive loops start) and spawns
/// the assignment loop.
pub(super) async fn start(inner: &Arc<GrpcInner>) {
    let mut a = Assignments {
        inner: inner.clone(),
        loops: BTreeMap::new(),
        missing: HashSet::new(),
    };
    a.refresh().await;
    let span = info_span!(parent: None, "grpc_assignment", group = %inner.group());
    inner
        .tasks
        .spawn(async move { a.run().await }.instrument(span));
}

struct Assignments {
    inner: Arc<GrpcInner>,
    /// The assignments received from and the tokens of their loops.
    loops: BTreeMap<MessageQueue, CancellationToken>,
    /// Topics reported missing (reported once until they exist).
    missing: HashSet<String>,
}

/// The assignment's queue: topic, broker, queue id (−1: every queue of the
/// broker).
fn queue_of(topic: &str, q: &proto::MessageQueue) -> MessageQueue {
    let broker = q.broker.as_ref().map_or("", |b| b.name.as_str());
    MessageQueue::new(topic, broker, q.id)
}

impl Assignments {
    async fn run(mut self) {
        let stop = self.inner.stop_receive.clone();
        let every = self.inner.config.rebalance_interval.min(MAX_INTERVAL);
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = self.inner.trigger.notified() => {}
                () = stop.cancelled() => break,
            }
            tokio::select! {
                () = self.refresh() => {}
                () = stop.cancelled() => break,
            }
        }
        for token in self.loops.values() {
            token.cancel();
        }
    }

    /// One run: the proxy's settings read again, every subscribed topic's
    /// assignments queried and synced.
    async fn refresh(&mut self) {
        self.inner.refresh_settings();
        let subs = self.inner.config.subscriptions.clone();
        for sub in &subs {
            match self
                .inner
                .session
                .query_assignment(&sub.topic, self.inner.group())
                .await
            {
                Ok(assigned) => {
                    self.missing.remove(&sub.topic);
                    self.sync(sub, assigned);
                }
                Err(e) if e.proxy_code() == Some(proto::Code::TopicNotFound) => {
                    if self.missing.insert(sub.topic.clone()) {
                        warn!(topic = %sub.topic, "the topic does not exist; receiving starts once it does");
                        self.inner.health.emit(ConsumerEvent::TopicNotFound {
                            topic: sub.topic.clone(),
                        });
                    }
                }
                Err(e) => {
                    warn!(topic = %sub.topic, error = %rmq_protocol::ErrorChain(&e), "QueryAssignment failed; trying again at the next run");
                }
            }
        }
    }

    /// Starts the loops of new assignments of `sub`'s topic and stops those
    /// gone (Java `syncProcessQueue`).
    fn sync(&mut self, sub: &Subscription, assigned: Vec<proto::Assignment>) {
        let topic = sub.topic.as_str();
        let latest: BTreeMap<MessageQueue, proto::MessageQueue> = assigned
            .into_iter()
            .filter_map(|a| a.message_queue)
            .filter(readable)
            .map(|q| (queue_of(topic, &q), q))
            .collect();
        let current: BTreeSet<MessageQueue> = self
            .loops
            .keys()
            .filter(|mq| mq.topic == topic)
            .cloned()
            .collect();
        if latest.is_empty() && current.is_empty() {
            debug!(topic, "no assignment yet");
            return;
        }
        let gone: Vec<MessageQueue> = current
            .iter()
            .filter(|mq| !latest.contains_key(*mq))
            .cloned()
            .collect();
        for mq in &gone {
            if let Some(token) = self.loops.remove(mq) {
                token.cancel();
            }
            if let Some(q) = self.inner.queue_map().remove(mq) {
                q.set_dropped();
            }
            info!(queue = %mq, "assignment gone; receiving stopped");
        }
        self.inner.health.revoked(topic, &gone);
        let filter = filter_expression(&sub.filter());
        let mut added = Vec::new();
        for (mq, q) in latest {
            if current.contains(&mq) {
                continue;
            }
            let token = self.inner.stop_receive.child_token();
            let state = Arc::new(QueueState::new(mq.clone(), self.inner.metrics.queue(&mq)));
            self.inner.queue_map().insert(mq.clone(), state.clone());
            ReceiveLoop::spawn(&self.inner, state, q, filter.clone(), token.clone());
            info!(queue = %mq, "assigned; receiving");
            self.loops.insert(mq.clone(), token);
            added.push(mq);
        }
        self.inner.health.assigned(topic, &added);
    }
}
