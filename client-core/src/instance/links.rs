//! [`BrokerLink`]: which broker addresses the heartbeats reach, as events
//! (an address that stops answering is lost; one that answers again is
//! restored).

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use tokio::sync::broadcast;

/// Live events a slow reader may fall behind by before it skips some.
const CHANNEL: usize = 64;

/// A change in the reachability of a broker address, as the client's
/// heartbeats (every `heartbeat_broker_interval`, 30 s by default) see it.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerLink {
    /// A heartbeat to the address failed (connect refused, connection
    /// closed, timeout), or an address that answered is no longer listed
    /// by the name server for this client's topics (its broker stopped or
    /// was removed).
    Lost {
        /// The broker address.
        addr: String,
        /// The failure, with its cause chain.
        error: String,
    },
    /// A heartbeat to an address reported [`Lost`](Self::Lost) succeeded
    /// again.
    Restored {
        /// The broker address.
        addr: String,
    },
    /// No name server answered a request of this client (a route lookup,
    /// on demand or by the periodic refresh every
    /// `poll_name_server_interval`, 30 s by default). Cached routes keep
    /// serving.
    NameServerUnreachable {
        /// The failure, with its cause chain.
        error: String,
    },
    /// A name server answered again after
    /// [`NameServerUnreachable`](Self::NameServerUnreachable).
    NameServerReachable,
}

/// The addresses that answered and the lost ones.
#[derive(Default)]
struct State {
    reached: BTreeSet<String>,
    lost: BTreeSet<String>,
    /// No name server answered the last name-server request.
    name_server_lost: bool,
}

/// The reachability of the broker addresses and the event channel.
pub(crate) struct Links {
    state: Mutex<State>,
    events: broadcast::Sender<BrokerLink>,
}

impl Default for Links {
    fn default() -> Self {
        Links {
            state: Mutex::new(State::default()),
            events: broadcast::Sender::new(CHANNEL),
        }
    }
}

impl Links {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, events: Vec<BrokerLink>) {
        for event in events {
            // No receiver is fine.
            let _ = self.events.send(event);
        }
    }

    /// The events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<BrokerLink> {
        self.events.subscribe()
    }

    /// The lost addresses, sorted.
    pub(crate) fn lost(&self) -> Vec<String> {
        self.state().lost.iter().cloned().collect()
    }

    /// A heartbeat to `addr` failed (`Some(error)`) or worked (`None`).
    pub(crate) fn heartbeat(&self, addr: &str, failure: Option<String>) {
        let event = {
            let mut st = self.state();
            match failure {
                Some(error) => {
                    st.reached.remove(addr);
                    st.lost.insert(addr.to_owned()).then(|| BrokerLink::Lost {
                        addr: addr.to_owned(),
                        error,
                    })
                }
                None => {
                    st.reached.insert(addr.to_owned());
                    st.lost.remove(addr).then(|| BrokerLink::Restored {
                        addr: addr.to_owned(),
                    })
                }
            }
        };
        self.send(event.into_iter().collect());
    }

    /// A name-server request failed on every name server (`Some(error)`)
    /// or one answered (`None`): an event on a change.
    pub(crate) fn name_server(&self, failure: Option<String>) {
        let event = {
            let mut st = self.state();
            match failure {
                Some(error) => (!std::mem::replace(&mut st.name_server_lost, true))
                    .then_some(BrokerLink::NameServerUnreachable { error }),
                None => std::mem::replace(&mut st.name_server_lost, false)
                    .then_some(BrokerLink::NameServerReachable),
            }
        };
        self.send(event.into_iter().collect());
    }

    /// A heartbeat round goes to `targets`: an address that answered
    /// before and is not among them any more is lost (the name server
    /// dropped its broker).
    pub(crate) fn round(&self, targets: &[String]) {
        let events = {
            let mut st = self.state();
            let gone: Vec<String> = st
                .reached
                .iter()
                .filter(|a| !targets.contains(a))
                .cloned()
                .collect();
            let mut events = Vec::new();
            for addr in gone {
                st.reached.remove(&addr);
                if st.lost.insert(addr.clone()) {
                    events.push(BrokerLink::Lost {
                        addr,
                        error: "the name server no longer lists this broker for the client's \
                                topics (it stopped or was removed)"
                            .into(),
                    });
                }
            }
            events
        };
        self.send(events);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_server_unreachable_then_reachable_once_each() {
        let links = Links::default();
        let mut rx = links.events.subscribe();
        links.name_server(None);
        links.name_server(Some("refused".into()));
        links.name_server(Some("refused again".into()));
        links.name_server(None);
        links.name_server(None);
        assert_eq!(
            rx.try_recv().ok(),
            Some(BrokerLink::NameServerUnreachable {
                error: "refused".into()
            })
        );
        assert_eq!(rx.try_recv().ok(), Some(BrokerLink::NameServerReachable));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn lost_then_restored_once_each() {
        let links = Links::default();
        let mut rx = links.events.subscribe();
        links.heartbeat("a:1", None);
        links.heartbeat("a:1", Some("refused".into()));
        links.heartbeat("a:1", Some("refused again".into()));
        links.heartbeat("a:1", None);
        links.heartbeat("a:1", None);
        assert_eq!(
            rx.try_recv().ok(),
            Some(BrokerLink::Lost {
                addr: "a:1".into(),
                error: "refused".into()
            })
        );
        assert_eq!(
            rx.try_recv().ok(),
            Some(BrokerLink::Restored { addr: "a:1".into() })
        );
        assert!(rx.try_recv().is_err());
        // Dropped from the routes after answering: lost; back: restored.
        links.round(&["a:1".into()]);
        links.round(&[]);
        links.round(&[]);
        assert!(matches!(rx.try_recv(), Ok(BrokerLink::Lost { addr, .. }) if addr == "a:1"));
        assert!(rx.try_recv().is_err());
        links.heartbeat("a:1", None);
        assert_eq!(
            rx.try_recv().ok(),
            Some(BrokerLink::Restored { addr: "a:1".into() })
        );
    }
}
