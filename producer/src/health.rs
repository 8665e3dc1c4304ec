//! [`ProducerState`] and [`ProducerEvent`]: what a producer says about
//! itself (the same shape as the consumers' `state()` / `events()`).

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::{self, Stream, StreamExt};
use rmq_client_core::{BrokerLink, ClientInstance};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

/// Events kept for readers that subscribe later.
const BACKLOG: usize = 64;
/// Live events a slow reader may fall behind by before it skips some.
const CHANNEL: usize = 256;

/// Where a producer is in its life ([`Producer::state`](crate::Producer::state)).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProducerState {
    /// Sending.
    Running,
    /// Shut down (or the last handle was dropped): sends fail with
    /// [`Error::Shutdown`](crate::Error::Shutdown).
    ShutDown,
}

/// Something a producer wants the application to know
/// ([`Producer::events`](crate::Producer::events)).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProducerEvent {
    /// The producer started.
    Started,
    /// A broker stopped answering the heartbeats (connect refused,
    /// connection closed, timeout; checked every `heartbeat_broker_interval`,
    /// 30 s by default). Sends avoid it (latency fault avoidance, retries on
    /// another broker) until it answers again.
    BrokerConnectionLost {
        /// The broker address.
        addr: String,
        /// The failure, with its cause chain.
        error: String,
    },
    /// A broker reported [`BrokerConnectionLost`](Self::BrokerConnectionLost)
    /// answers again.
    BrokerConnectionRestored {
        /// The broker address.
        addr: String,
    },
    /// No name server answered (at start with `fail_fast(false)`, or a
    /// route lookup later): cached routes keep serving; new topics cannot
    /// be looked up.
    NameServerUnreachable {
        /// The failure, with its cause chain.
        error: String,
    },
    /// A name server answered again after
    /// [`NameServerUnreachable`](Self::NameServerUnreachable).
    NameServerReachable,
    /// A send's topic has no route and the name server has no `TBW102`
    /// to create it from (auto-creation off): its sends fail with
    /// `RouteNotFound` until the topic is created. Reported once until a
    /// route of the topic is found.
    TopicNotFound {
        /// The topic.
        topic: String,
    },
    /// The producer shut down.
    ShutDown,
}

/// A producer's state and events.
#[derive(Debug)]
pub(crate) struct Health {
    state: watch::Sender<ProducerState>,
    backlog: Mutex<VecDeque<ProducerEvent>>,
    events: broadcast::Sender<ProducerEvent>,
    /// Stops the broker-link forwarder.
    stop: CancellationToken,
    /// Topics reported [`ProducerEvent::TopicNotFound`] and not found since.
    missing: Mutex<BTreeSet<String>>,
}

impl Health {
    /// A started producer: state running, event `Started` (after
    /// `NameServerUnreachable` when `unreachable` holds the start's failure
    /// to reach one); with `instance`, its broker-link and name-server
    /// events are forwarded (on the current runtime, if any).
    pub(crate) fn started(
        instance: Option<&ClientInstance>,
        unreachable: Option<String>,
    ) -> Arc<Health> {
        let health = Arc::new(Health {
            state: watch::Sender::new(ProducerState::Running),
            backlog: Mutex::new(VecDeque::new()),
            events: broadcast::Sender::new(CHANNEL),
            stop: CancellationToken::new(),
            missing: Mutex::new(BTreeSet::new()),
        });
        if let Some(error) = unreachable {
            health.emit(ProducerEvent::NameServerUnreachable { error });
        }
        health.emit(ProducerEvent::Started);
        if let (Some(instance), Ok(rt)) = (instance, tokio::runtime::Handle::try_current()) {
            let mut links = instance.broker_links();
            let weak = Arc::downgrade(&health);
            let stop = health.stop.clone();
            rt.spawn(async move {
                loop {
                    let link = tokio::select! {
                        () = stop.cancelled() => return,
                        link = links.recv() => link,
                    };
                    let event = match link {
                        Ok(BrokerLink::Lost { addr, error }) => {
                            ProducerEvent::BrokerConnectionLost { addr, error }
                        }
                        Ok(BrokerLink::Restored { addr }) => {
                            ProducerEvent::BrokerConnectionRestored { addr }
                        }
                        Ok(BrokerLink::NameServerUnreachable { error }) => {
                            ProducerEvent::NameServerUnreachable { error }
                        }
                        Ok(BrokerLink::NameServerReachable) => ProducerEvent::NameServerReachable,
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return,
                    };
                    let Some(health) = weak.upgrade() else {
                        return;
                    };
                    health.emit(event);
                }
            });
        }
        health
    }

    pub(crate) fn state(&self) -> ProducerState {
        self.state.borrow().clone()
    }

    pub(crate) fn watch_state(&self) -> watch::Receiver<ProducerState> {
        self.state.subscribe()
    }

    /// State `ShutDown`, event `ShutDown` (once), forwarder stopped.
    pub(crate) fn shut_down(&self) {
        self.stop.cancel();
        let changed = self.state.send_if_modified(|s| {
            let changed = *s != ProducerState::ShutDown;
            *s = ProducerState::ShutDown;
            changed
        });
        if changed {
            self.emit(ProducerEvent::ShutDown);
        }
    }

    /// A send found no route of `topic` and no `TBW102`: the event, once
    /// until [`topic_found`](Self::topic_found).
    pub(crate) fn topic_not_found(&self, topic: &str) {
        let new = self
            .missing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_owned());
        if new {
            self.emit(ProducerEvent::TopicNotFound {
                topic: topic.to_owned(),
            });
        }
    }

    /// A route of `topic` was found (the name server's answer, not the
    /// cache: called off the send's fast path).
    pub(crate) fn topic_found(&self, topic: &str) {
        self.missing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(topic);
    }

    fn emit(&self, event: ProducerEvent) {
        let mut backlog = self.backlog.lock().unwrap_or_else(PoisonError::into_inner);
        if backlog.len() >= BACKLOG {
            backlog.pop_front();
        }
        backlog.push_back(event.clone());
        // No receiver is fine.
        let _ = self.events.send(event);
    }

    pub(crate) fn events(&self) -> impl Stream<Item = ProducerEvent> + Send + Unpin + 'static {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn started_then_shut_down_once() {
        let h = Health::started(None, None);
        let mut watch = h.watch_state();
        assert_eq!(h.state(), ProducerState::Running);
        h.shut_down();
        h.shut_down();
        assert!(watch.has_changed().unwrap_or(false));
        assert_eq!(*watch.borrow_and_update(), ProducerState::ShutDown);
        let events = h.events();
        drop(h);
        let got: Vec<ProducerEvent> = events.collect().await;
        assert_eq!(got, [ProducerEvent::Started, ProducerEvent::ShutDown]);
    }

    #[tokio::test]
    async fn a_missing_topic_is_reported_once_until_found() {
        let h = Health::started(None, Some("no name server".into()));
        h.topic_not_found("t");
        h.topic_not_found("t");
        h.topic_not_found("u");
        h.topic_found("t");
        h.topic_not_found("t");
        h.shut_down();
        let events = h.events();
        drop(h);
        let got: Vec<ProducerEvent> = events.collect().await;
        let missing = |t: &str| ProducerEvent::TopicNotFound { topic: t.into() };
        assert_eq!(
            got,
            [
                ProducerEvent::NameServerUnreachable {
                    error: "no name server".into()
                },
                ProducerEvent::Started,
                missing("t"),
                missing("u"),
                missing("t"),
                ProducerEvent::ShutDown
            ]
        );
    }
}
