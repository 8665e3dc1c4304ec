//! Fault rules ([`Rule`], [`Scope`]) and the per-code request counters.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_protocol::{RequestCode, ResponseCode};
use tokio::sync::watch;

/// What the proxy does with a request of a given code.
///
/// Rules act on requests the client sends (client → name server / broker).
/// Requests the broker sends to the client (e.g. `NOTIFY_CONSUMER_IDS_CHANGED`)
/// and the client's answers to them always pass unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Rule {
    /// Forward the request and its response unchanged (the default).
    #[default]
    Pass,
    /// Forward the request after this delay. Later requests on the same
    /// connection are not held up: they may overtake it.
    Delay(Duration),
    /// Answer the client at once with `code` (and `remark`) and the request's
    /// opaque; the request never reaches the upstream. Oneway requests get no
    /// answer (they are swallowed).
    Error {
        /// Response code of the answer.
        code: ResponseCode,
        /// Remark (error text) of the answer.
        remark: Option<String>,
    },
    /// Swallow the request: it never reaches the upstream and no answer comes
    /// back, so the client's call times out.
    Drop,
    /// Close the client's connection and its upstream connection when such a
    /// request arrives; the request is not forwarded. In-flight calls on that
    /// connection fail with a closed connection; the client's next call opens
    /// a new one (to which the rule applies again).
    CloseConnection,
    /// Forward the request, and hold its response back for this long.
    DelayResponse(Duration),
    /// Forward the request and swallow its response: the upstream did the work
    /// but the client times out (outcome unknown to it).
    DropResponse,
}

impl Rule {
    /// [`Rule::Error`] without remark.
    pub fn error(code: ResponseCode) -> Rule {
        Rule::Error { code, remark: None }
    }

    /// [`Rule::Error`] with a remark.
    pub fn error_with(code: ResponseCode, remark: impl Into<String>) -> Rule {
        Rule::Error {
            code,
            remark: Some(remark.into()),
        }
    }
}

/// Which proxied connections a rule applies to.
///
/// When several rules for one request code match a connection, the most
/// specific wins: [`Scope::Broker`] over [`Scope::AllBrokers`] /
/// [`Scope::NameServer`] over [`Scope::Everywhere`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Every connection to a broker (what [`FaultProxy::set_rule`] uses).
    ///
    /// [`FaultProxy::set_rule`]: super::FaultProxy::set_rule
    AllBrokers,
    /// Connections to the broker whose real (upstream) address is this
    /// `host:port`, as the name server lists it.
    Broker(String),
    /// Connections to the name server.
    NameServer,
    /// Every proxied connection, name server and brokers.
    Everywhere,
}

/// The upstream of one proxied connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// The name server (its upstream address).
    NameServer(String),
    /// A broker (its upstream address).
    Broker(String),
}

impl Target {
    /// The upstream address.
    pub(crate) fn upstream(&self) -> &str {
        match self {
            Target::NameServer(a) | Target::Broker(a) => a,
        }
    }
}

impl Scope {
    /// How specific this scope is for `target`; `None` when it does not apply.
    fn rank(&self, target: &Target) -> Option<u8> {
        match (self, target) {
            (Scope::Broker(addr), Target::Broker(up)) if addr == up => Some(3),
            (Scope::AllBrokers, Target::Broker(_)) | (Scope::NameServer, Target::NameServer(_)) => {
                Some(2)
            }
            (Scope::Everywhere, _) => Some(1),
            _ => None,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks cannot leave the maps inconsistent
    // (every update is a single insert/remove), so poisoning is ignored.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The rules in force, by request code.
#[derive(Debug, Default)]
pub(crate) struct RuleTable {
    rules: Mutex<HashMap<i32, Vec<(Scope, Rule)>>>,
}

impl RuleTable {
    /// Sets (replaces) the rule for `code` in `scope`.
    pub(crate) fn set(&self, code: RequestCode, scope: Scope, rule: Rule) {
        let mut rules = lock(&self.rules);
        let list = rules.entry(code.0).or_default();
        list.retain(|(s, _)| *s != scope);
        list.push((scope, rule));
    }

    /// Removes the rule for `code` in `scope`, or in every scope when `None`.
    pub(crate) fn clear(&self, code: RequestCode, scope: Option<&Scope>) {
        let mut rules = lock(&self.rules);
        match scope {
            None => {
                rules.remove(&code.0);
            }
            Some(scope) => {
                if let Some(list) = rules.get_mut(&code.0) {
                    list.retain(|(s, _)| s != scope);
                    if list.is_empty() {
                        rules.remove(&code.0);
                    }
                }
            }
        }
    }

    /// Removes every rule.
    pub(crate) fn clear_all(&self) {
        lock(&self.rules).clear();
    }

    /// The rule for a request of `code` on a connection to `target`.
    pub(crate) fn lookup(&self, code: RequestCode, target: &Target) -> Rule {
        let rules = lock(&self.rules);
        rules
            .get(&code.0)
            .and_then(|list| {
                list.iter()
                    .filter_map(|(scope, rule)| scope.rank(target).map(|r| (r, rule)))
                    .max_by_key(|(r, _)| *r)
                    .map(|(_, rule)| rule.clone())
            })
            .unwrap_or_default()
    }
}

/// Requests seen, per upstream address and code, with a change signal.
#[derive(Debug)]
pub(crate) struct Counters {
    counts: Mutex<HashMap<(String, i32), u64>>,
    changed: watch::Sender<u64>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            counts: Mutex::new(HashMap::new()),
            changed: watch::Sender::new(0),
        }
    }
}

impl Counters {
    /// Counts one request of `code` to `upstream`.
    pub(crate) fn record(&self, upstream: &str, code: RequestCode) {
        {
            let mut counts = lock(&self.counts);
            let n = counts.entry((upstream.to_owned(), code.0)).or_insert(0);
            *n = n.saturating_add(1);
        }
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Requests of `code` seen, to `upstream` or (when `None`) to any upstream.
    pub(crate) fn count(&self, code: RequestCode, upstream: Option<&str>) -> u64 {
        lock(&self.counts)
            .iter()
            .filter(|((up, c), _)| *c == code.0 && upstream.is_none_or(|u| u == up))
            .fold(0u64, |acc, (_, n)| acc.saturating_add(*n))
    }

    /// Forgets every count.
    pub(crate) fn reset(&self) {
        lock(&self.counts).clear();
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// A receiver that wakes on every change (subscribe before reading).
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODE: RequestCode = RequestCode::SEND_MESSAGE_V2;

    #[test]
    fn most_specific_scope_wins() {
        let table = RuleTable::default();
        let a = Target::Broker("10.0.0.1:10911".into());
        let b = Target::Broker("10.0.0.2:10911".into());
        let ns = Target::NameServer("10.0.0.9:9876".into());
        assert_eq!(table.lookup(CODE, &a), Rule::Pass);

        table.set(CODE, Scope::Everywhere, Rule::Drop);
        table.set(CODE, Scope::AllBrokers, Rule::CloseConnection);
        table.set(
            CODE,
            Scope::Broker("10.0.0.1:10911".into()),
            Rule::error(ResponseCode::SYSTEM_ERROR),
        );
        assert_eq!(
            table.lookup(CODE, &a),
            Rule::error(ResponseCode::SYSTEM_ERROR)
        );
        assert_eq!(table.lookup(CODE, &b), Rule::CloseConnection);
        assert_eq!(table.lookup(CODE, &ns), Rule::Drop);
        assert_eq!(table.lookup(RequestCode::HEART_BEAT, &a), Rule::Pass);

        // Replacing in one scope keeps the others.
        table.set(CODE, Scope::AllBrokers, Rule::DropResponse);
        assert_eq!(table.lookup(CODE, &b), Rule::DropResponse);
        table.clear(CODE, Some(&Scope::Broker("10.0.0.1:10911".into())));
        assert_eq!(table.lookup(CODE, &a), Rule::DropResponse);
        table.clear(CODE, None);
        assert_eq!(table.lookup(CODE, &a), Rule::Pass);
        assert_eq!(table.lookup(CODE, &ns), Rule::Pass);

        table.set(CODE, Scope::NameServer, Rule::Drop);
        assert_eq!(table.lookup(CODE, &ns), Rule::Drop);
        assert_eq!(table.lookup(CODE, &a), Rule::Pass);
        table.clear_all();
        assert_eq!(table.lookup(CODE, &ns), Rule::Pass);
    }

    #[test]
    fn counters_sum_over_upstreams() {
        let counters = Counters::default();
        let mut rx = counters.subscribe();
        counters.record("a:1", CODE);
        counters.record("a:1", CODE);
        counters.record("b:1", CODE);
        counters.record("b:1", RequestCode::HEART_BEAT);
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
        assert_eq!(counters.count(CODE, None), 3);
        assert_eq!(counters.count(CODE, Some("a:1")), 2);
        assert_eq!(counters.count(CODE, Some("c:1")), 0);
        assert_eq!(counters.count(RequestCode::HEART_BEAT, None), 1);
        counters.reset();
        assert!(rx.has_changed().unwrap());
        assert_eq!(counters.count(CODE, None), 0);
    }
}
