//! [`Health`]: what a consumer says about itself — its [`ConsumerState`]
//! (a `watch`), a stream of [`ConsumerEvent`]s (the recent ones replayed
//! to a new reader, then live), and the application's
//! [`RebalanceListener`].

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::{self, Stream, StreamExt};
use rmq_protocol::MessageQueue;
use tokio::sync::{broadcast, watch};

/// Events kept for readers that subscribe later (the start events come
/// before any reader can subscribe).
const BACKLOG: usize = 64;
/// Live events a slow reader may fall behind by before it skips some.
const CHANNEL: usize = 256;

/// Where a consumer is in its life.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerState {
    /// Running; the name server answered.
    Running,
    /// Running, but the last name-server call found none answering
    /// (started with `fail_fast(false)`, or the name servers went away):
    /// routes and rebalances wait for one.
    NoNameServer,
    /// `shutdown` is in progress.
    ShuttingDown,
    /// Shut down (or the last handle was dropped).
    ShutDown,
}

/// Something a consumer wants the application to know
/// ([`events`](crate::ConsumerCore::health)).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerEvent {
    /// The consumer started (its first rebalance, if any, is done).
    Started,
    /// No name server answered (at start with `fail_fast(false)`, or at a
    /// rebalance).
    NameServerUnreachable {
        /// The error with its cause chain, as text.
        error: String,
    },
    /// A name server answered again after [`NameServerUnreachable`](Self::NameServerUnreachable).
    NameServerReachable,
    /// A subscribed or assigned topic does not exist (the name server has
    /// no route): nothing is read from it until it is created.
    TopicNotFound {
        /// The topic.
        topic: String,
    },
    /// Queues were assigned to this consumer (their reading started).
    QueuesAssigned {
        /// The topic.
        topic: String,
        /// The queues, sorted.
        queues: Vec<MessageQueue>,
    },
    /// Queues were taken away (their reading stopped, offsets persisted).
    QueuesRevoked {
        /// The topic.
        topic: String,
        /// The queues, sorted.
        queues: Vec<MessageQueue>,
    },
    /// A broker this consumer talks to stopped answering its heartbeats
    /// (connect refused, connection closed, timeout; checked every
    /// `heartbeat_broker_interval`, 30 s by default). Its queues are not
    /// read until it is back or the rebalance moves them.
    BrokerConnectionLost {
        /// The broker address.
        addr: String,
        /// The failure, with its cause chain.
        error: String,
    },
    /// A broker reported [`BrokerConnectionLost`](Self::BrokerConnectionLost)
    /// answers heartbeats again.
    BrokerConnectionRestored {
        /// The broker address.
        addr: String,
    },
    /// The consumer shut down.
    ShutDown,
}

/// The application's rebalance callbacks (Java `MessageQueueListener`,
/// rdkafka `ConsumerContext::pre_rebalance` / `post_rebalance`). Called on
/// the consumer's rebalance task: return quickly (hand work to a task of
/// your own). Both default to doing nothing.
///
/// ```
/// use rmq_consumer_base::RebalanceListener;
/// use rmq_protocol::MessageQueue;
///
/// struct Log;
///
/// impl RebalanceListener for Log {
///     fn on_assigned(&self, topic: &str, queues: &[MessageQueue]) {
///         println!("{topic}: now reading {} more queues", queues.len());
///     }
///     fn on_revoked(&self, topic: &str, queues: &[MessageQueue]) {
///         println!("{topic}: {} queues moved away", queues.len());
///     }
/// }
/// ```
pub trait RebalanceListener: Send + Sync + 'static {
    /// `queues` of `topic` were assigned; reading them has started.
    fn on_assigned(&self, topic: &str, queues: &[MessageQueue]) {
        let _ = (topic, queues);
    }

    /// `queues` of `topic` were taken away; reading them has stopped and
    /// their offsets were persisted.
    fn on_revoked(&self, topic: &str, queues: &[MessageQueue]) {
        let _ = (topic, queues);
    }
}

/// A consumer's state, events and rebalance listener.
pub struct Health {
    state: watch::Sender<ConsumerState>,
    /// The recent events; its lock also orders sends, so a new reader gets
    /// the backlog and then exactly the later events.
    backlog: Mutex<VecDeque<ConsumerEvent>>,
    events: broadcast::Sender<ConsumerEvent>,
    listener: Option<Arc<dyn RebalanceListener>>,
}

impl fmt::Debug for Health {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Health")
            .field("state", &*self.state.borrow())
            .field("listener", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

impl Health {
    /// Forwards `instance`'s broker-link events as
    /// [`ConsumerEvent::BrokerConnectionLost`] /
    /// [`ConsumerEvent::BrokerConnectionRestored`] until `stop` fires or
    /// the health is gone. Spawned on the current runtime.
    pub fn forward_broker_links(
        this: &Arc<Health>,
        instance: &rmq_client_core::ClientInstance,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let mut links = instance.broker_links();
        let health = Arc::downgrade(this);
        tokio::spawn(async move {
            loop {
                let link = tokio::select! {
                    () = stop.cancelled() => return,
                    link = links.recv() => link,
                };
                let event = match link {
                    Ok(rmq_client_core::BrokerLink::Lost { addr, error }) => {
                        ConsumerEvent::BrokerConnectionLost { addr, error }
                    }
                    Ok(rmq_client_core::BrokerLink::Restored { addr }) => {
                        ConsumerEvent::BrokerConnectionRestored { addr }
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(health) = health.upgrade() else {
                    return;
                };
                health.emit(event);
            }
        });
    }

    /// A consumer about to start (state [`ConsumerState::Running`] until
    /// told otherwise).
    pub fn new(listener: Option<Arc<dyn RebalanceListener>>) -> Self {
        Health {
            state: watch::Sender::new(ConsumerState::Running),
            backlog: Mutex::new(VecDeque::new()),
            events: broadcast::Sender::new(CHANNEL),
            listener,
        }
    }

    /// The state now.
    pub fn state(&self) -> ConsumerState {
        self.state.borrow().clone()
    }

    /// A receiver of the state (`changed().await`).
    pub fn watch_state(&self) -> watch::Receiver<ConsumerState> {
        self.state.subscribe()
    }

    /// Sets the state (readers are told only of changes).
    pub fn set_state(&self, state: ConsumerState) {
        self.state.send_if_modified(|s| {
            let changed = *s != state;
            *s = state;
            changed
        });
    }

    /// Publishes an event.
    pub fn emit(&self, event: ConsumerEvent) {
        let mut backlog = self.backlog.lock().unwrap_or_else(PoisonError::into_inner);
        if backlog.len() >= BACKLOG {
            backlog.pop_front();
        }
        backlog.push_back(event.clone());
        // No receiver is fine.
        let _ = self.events.send(event);
    }

    /// The recent events (up to 64), then every later one as it happens;
    /// a reader more than 256 events behind skips the oldest. Ends when
    /// the consumer's state is gone (all handles dropped).
    pub fn events(&self) -> impl Stream<Item = ConsumerEvent> + Send + Unpin + 'static {
        let (past, rx) = {
            let backlog = self.backlog.lock().unwrap_or_else(PoisonError::into_inner);
            (
                backlog.iter().cloned().collect::<Vec<_>>(),
                self.events.subscribe(),
            )
        };
        let live = stream::unfold(rx, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(event) => return Some((event, rx)),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        stream::iter(past).chain(live).boxed()
    }

    /// A name-server call failed with "none answered" (`true`) or worked
    /// (`false`): state and event on a change.
    pub fn name_server(&self, unreachable: Option<String>) {
        let current = self.state();
        match unreachable {
            Some(error) if current == ConsumerState::Running => {
                self.set_state(ConsumerState::NoNameServer);
                self.emit(ConsumerEvent::NameServerUnreachable { error });
            }
            None if current == ConsumerState::NoNameServer => {
                self.set_state(ConsumerState::Running);
                self.emit(ConsumerEvent::NameServerReachable);
            }
            _ => {}
        }
    }

    /// The outcome of a rebalance's name-server lookups: a failure that
    /// says no name server answered, or success.
    pub fn rebalanced(&self, failure: Option<&rmq_client_core::Error>) {
        match failure {
            None => self.name_server(None),
            Some(e @ rmq_client_core::Error::NameServerUnavailable { .. }) => {
                self.name_server(Some(rmq_protocol::ErrorChain(e).to_string()));
            }
            Some(_) => {}
        }
    }

    /// Queues of `topic` were assigned: event and listener.
    pub fn assigned(&self, topic: &str, queues: &[MessageQueue]) {
        if queues.is_empty() {
            return;
        }
        let mut queues = queues.to_vec();
        queues.sort();
        if let Some(l) = &self.listener {
            l.on_assigned(topic, &queues);
        }
        self.emit(ConsumerEvent::QueuesAssigned {
            topic: topic.to_owned(),
            queues,
        });
    }

    /// Queues of `topic` were revoked: event and listener.
    pub fn revoked(&self, topic: &str, queues: &[MessageQueue]) {
        if queues.is_empty() {
            return;
        }
        let mut queues = queues.to_vec();
        queues.sort();
        if let Some(l) = &self.listener {
            l.on_revoked(topic, &queues);
        }
        self.emit(ConsumerEvent::QueuesRevoked {
            topic: topic.to_owned(),
            queues,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[derive(Default)]
    struct Count(AtomicUsize, AtomicUsize);

    impl RebalanceListener for Count {
        fn on_assigned(&self, _: &str, queues: &[MessageQueue]) {
            self.0.fetch_add(queues.len(), Ordering::Relaxed);
        }
        fn on_revoked(&self, _: &str, queues: &[MessageQueue]) {
            self.1.fetch_add(queues.len(), Ordering::Relaxed);
        }
    }

    #[tokio::test]
    async fn late_readers_get_the_backlog_then_live_events() {
        let count = Arc::new(Count::default());
        let h = Health::new(Some(count.clone()));
        h.name_server(Some("down".into()));
        h.name_server(Some("still down".into()));
        assert_eq!(h.state(), ConsumerState::NoNameServer);
        let mut events = h.events();
        h.name_server(None);
        let q = MessageQueue::new("T", "b", 1);
        h.assigned("T", std::slice::from_ref(&q));
        h.assigned("T", &[]);
        h.revoked("T", std::slice::from_ref(&q));
        assert_eq!(h.state(), ConsumerState::Running);
        let got: Vec<ConsumerEvent> = events.by_ref().take(4).collect().await;
        assert_eq!(
            got,
            [
                ConsumerEvent::NameServerUnreachable {
                    error: "down".into()
                },
                ConsumerEvent::NameServerReachable,
                ConsumerEvent::QueuesAssigned {
                    topic: "T".into(),
                    queues: vec![q.clone()]
                },
                ConsumerEvent::QueuesRevoked {
                    topic: "T".into(),
                    queues: vec![q]
                },
            ]
        );
        assert_eq!(count.0.load(Ordering::Relaxed), 1);
        assert_eq!(count.1.load(Ordering::Relaxed), 1);
        drop(h);
        assert!(events.next().await.is_none());
    }
}
