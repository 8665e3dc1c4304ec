//! The start check of pop mode and the assignment loop: every rebalance
//! interval (and when the group changes) QUERY_ASSIGNMENT per subscribed
//! topic, one [`PopLoop`] per assigned queue (Java
//! `RebalanceImpl.getRebalanceResultFromBroker` + `PopProcessQueue`).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use rmq_client_core::is_pop_unsupported;
use rmq_consumer_base::engine::pop::readable_brokers;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::{
    MessageRequestMode, QueryAssignmentRequestBody, SetMessageRequestModeRequestBody,
};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::error::{Error, Result};
use crate::inner::Inner;
use crate::pop::pop_loop::PopLoop;
use crate::pop::settle::{self, Settler};

/// Starts pop mode: sets the request mode of every subscribed topic to POP
/// at its brokers, checks that they pop, assigns the first queues and
/// spawns the assignment loop.
///
/// # Errors
///
/// [`Error::PopNotSupported`] when a broker is older than 5.0.
pub(crate) async fn start(inner: &Arc<Inner>) -> Result<()> {
    let settler = settle::spawn(inner);
    let mut assignments = Assignments {
        inner: inner.clone(),
        settler,
        prepared: HashSet::new(),
        loops: BTreeMap::new(),
    };
    for topic in assignments.user_topics() {
        assignments.prepare(&topic).await?;
    }
    assignments.refresh().await;
    info!(
        group = inner.core.group(),
        queues = assignments.loops.len(),
        "pop mode: assigned"
    );
    let stop = inner.stop_pull.clone();
    let span = info_span!(parent: None, "pop_assignment", group = %inner.core.group());
    inner
        .core
        .tasks()
        .spawn(async move { assignments.run(stop).await }.instrument(span));
    Ok(())
}

struct Assignments {
    inner: Arc<Inner>,
    settler: Settler,
    /// (topic, broker address) whose request mode was set.
    prepared: HashSet<(String, String)>,
    /// The assigned queues and the tokens of their pop loops.
    loops: BTreeMap<MessageQueue, CancellationToken>,
}

impl Assignments {
    /// The user's topics (not `%RETRY%<group>`: popping a topic also pops
    /// its pop retry topic at the broker).
    fn user_topics(&self) -> Vec<String> {
        let mut topics: Vec<String> = self
            .inner
            .config
            .subscriptions
            .iter()
            .map(|s| s.topic.clone())
            .collect();
        topics.dedup();
        topics
    }

    /// The master addresses of the brokers with readable queues of `topic`.
    async fn brokers_of(&self, topic: &str) -> Result<Vec<String>> {
        let brokers = readable_brokers(self.inner.core.instance(), topic)
            .await
            .map_err(Error::from_lookup)?;
        Ok(brokers.into_iter().map(|(_, addr)| addr).collect())
    }

    /// SET_MESSAGE_REQUEST_MODE (POP, every member pops every queue) at each
    /// broker of `topic` not prepared yet (what `mqadmin setConsumeMode -m
    /// POP -q 0` does). A topic without a route yet is prepared later.
    ///
    /// # Errors
    ///
    /// [`Error::PopNotSupported`] when a broker refuses the request code.
    async fn prepare(&mut self, topic: &str) -> Result<()> {
        let brokers = match self.brokers_of(topic).await {
            Ok(b) => b,
            Err(e) => {
                warn!(topic, error = %rmq_protocol::ErrorChain(&e), "pop mode: no route for the topic yet; trying again at the next rebalance");
                return Ok(());
            }
        };
        let group = self.inner.core.group().to_owned();
        for addr in brokers {
            let key = (topic.to_owned(), addr.clone());
            if self.prepared.contains(&key) {
                continue;
            }
            let body = SetMessageRequestModeRequestBody {
                consumer_group: group.clone(),
                mode: MessageRequestMode::Pop,
                pop_share_queue_num: 0,
                topic: topic.to_owned(),
            };
            match self
                .inner
                .core
                .instance()
                .set_message_request_mode(&addr, &body)
                .await
            {
                Ok(()) => {
                    self.prepared.insert(key);
                }
                Err(e) if is_pop_unsupported(&e) => return Err(Error::PopNotSupported { addr }),
                Err(e) => {
                    warn!(topic, addr, error = %rmq_protocol::ErrorChain(&e), "pop mode: cannot set the request mode to POP; popping the queues the broker assigns");
                }
            }
        }
        Ok(())
    }

    /// The queues of `topic` assigned to this member: QUERY_ASSIGNMENT at
    /// one of its brokers (each knows the whole route); `None` when no
    /// broker answered.
    async fn query(&self, topic: &str) -> Option<BTreeSet<MessageQueue>> {
        let brokers = self.brokers_of(topic).await.ok()?;
        let instance = self.inner.core.instance();
        let options = &self.inner.config.options;
        let body = QueryAssignmentRequestBody {
            client_id: instance.client_id().to_owned(),
            consumer_group: self.inner.core.group().to_owned(),
            message_model: options.message_model(),
            strategy_name: options.allocate_strategy().name().to_owned(),
            topic: topic.to_owned(),
        };
        for addr in brokers {
            match instance.query_assignment(&addr, &body).await {
                Ok(assigned) => {
                    return Some(assigned.into_iter().map(|a| a.message_queue).collect());
                }
                Err(e) => {
                    debug!(topic, addr, error = %rmq_protocol::ErrorChain(&e), "QUERY_ASSIGNMENT failed; asking the next broker");
                }
            }
        }
        None
    }

    /// One assignment run: starts pop loops for new queues, stops those no
    /// longer assigned (their messages in hand are still consumed and
    /// acked).
    async fn refresh(&mut self) {
        for topic in self.user_topics() {
            if let Err(e) = self.prepare(&topic).await {
                warn!(topic, error = %rmq_protocol::ErrorChain(&e), "pop mode: a broker of the topic cannot pop");
                continue;
            }
            let Some(assigned) = self.query(&topic).await else {
                continue;
            };
            let gone: Vec<MessageQueue> = self
                .loops
                .keys()
                .filter(|mq| mq.topic == topic && !assigned.contains(*mq))
                .cloned()
                .collect();
            for mq in gone {
                if let Some(token) = self.loops.remove(&mq) {
                    info!(queue = %mq, "pop mode: queue no longer assigned");
                    token.cancel();
                }
            }
            for mq in assigned {
                if self.loops.contains_key(&mq) {
                    continue;
                }
                let token = self.inner.stop_pull.child_token();
                PopLoop::spawn(&self.inner, &mq, &token, &self.settler);
                info!(queue = %mq, "pop mode: popping");
                self.loops.insert(mq, token);
            }
        }
    }

    async fn run(mut self, stop: CancellationToken) {
        loop {
            tokio::select! {
                () = self.inner.trigger.wait() => {}
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
}
