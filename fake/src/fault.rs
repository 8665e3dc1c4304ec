//! Scriptable faults ([`Fault`], [`Action`]) and the per-code request
//! counters.
//!
//! A fault names the requests it applies to (request code, server, client,
//! connection) and what happens to them. Rules are checked in the order
//! they were added; the first that matches a request applies (and, with
//! [`Fault::times`], counts down). Requests the fake sends to clients
//! (`NOTIFY_CONSUMER_IDS_CHANGED`) and the clients' answers to them are never
//! faulted.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use tokio::sync::watch;

use crate::net::{ConnShared, ServerKind};

/// Identifies one accepted connection (see [`FakeCluster::connections`]).
///
/// [`FakeCluster::connections`]: crate::FakeCluster::connections
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub(crate) u64);

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conn-{}", self.0)
    }
}

/// Identifies an added fault, to remove it ([`FakeCluster::clear_fault`]).
///
/// [`FakeCluster::clear_fault`]: crate::FakeCluster::clear_fault
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FaultId(u64);

/// A custom request handler (the fake's counterpart of franz-go kfake's
/// `ControlKey`): return `Some(response)` to answer the request yourself
/// (the fake sets the opaque and the response flag) or `None` to let the
/// fake handle it.
pub type InterceptFn = dyn Fn(&RemotingCommand) -> Option<RemotingCommand> + Send + Sync;

/// What happens to a request a [`Fault`] matches.
#[derive(Clone)]
#[non_exhaustive]
pub enum Action {
    /// Handle the request after this delay. Later requests on the same
    /// connection are not held up: they may overtake it.
    Delay(Duration),
    /// Swallow the request: it is not handled and never answered, so the
    /// client's call times out.
    Drop,
    /// Answer at once with this code and remark; the request is not handled.
    /// Oneway requests get no answer (they are swallowed).
    Error {
        /// Response code of the answer.
        code: ResponseCode,
        /// Remark (error text) of the answer.
        remark: Option<String>,
    },
    /// Close the connection the request arrived on; the request is not
    /// handled. In-flight calls on it fail; the client's next call opens a
    /// new connection (to which the rule applies again).
    CloseConnection,
    /// Handle the request, and hold its answer back for this long.
    DelayResponse(Duration),
    /// Handle the request and swallow its answer: the server did the work,
    /// the client times out (outcome unknown to it).
    DropResponse,
    /// Handle the request, then answer with this code instead of the real
    /// one, keeping the header and body: with `FLUSH_DISK_TIMEOUT`,
    /// `FLUSH_SLAVE_TIMEOUT` or `SLAVE_NOT_AVAILABLE` on a send, the message
    /// is stored but the answer is not OK ([`Action::stored_but_not_ok`]).
    RewriteCode(ResponseCode),
    /// Let a function answer (see [`InterceptFn`]).
    Intercept(Arc<InterceptFn>),
}

impl Action {
    /// [`Action::Error`] without a remark.
    pub fn error(code: ResponseCode) -> Action {
        Action::Error { code, remark: None }
    }

    /// [`Action::Error`] with a remark.
    pub fn error_with(code: ResponseCode, remark: impl Into<String>) -> Action {
        Action::Error {
            code,
            remark: Some(remark.into()),
        }
    }

    /// A send is stored, and answered with `code` (`FLUSH_DISK_TIMEOUT`,
    /// `FLUSH_SLAVE_TIMEOUT` or `SLAVE_NOT_AVAILABLE`) and the usual send
    /// header: [`Action::RewriteCode`].
    pub fn stored_but_not_ok(code: ResponseCode) -> Action {
        Action::RewriteCode(code)
    }

    /// [`Action::Intercept`] from a closure.
    pub fn intercept(
        f: impl Fn(&RemotingCommand) -> Option<RemotingCommand> + Send + Sync + 'static,
    ) -> Action {
        Action::Intercept(Arc::new(f))
    }
}

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Delay(d) => f.debug_tuple("Delay").field(d).finish(),
            Action::Drop => f.write_str("Drop"),
            Action::Error { code, remark } => f
                .debug_struct("Error")
                .field("code", code)
                .field("remark", remark)
                .finish(),
            Action::CloseConnection => f.write_str("CloseConnection"),
            Action::DelayResponse(d) => f.debug_tuple("DelayResponse").field(d).finish(),
            Action::DropResponse => f.write_str("DropResponse"),
            Action::RewriteCode(c) => f.debug_tuple("RewriteCode").field(c).finish(),
            Action::Intercept(_) => f.write_str("Intercept(..)"),
        }
    }
}

/// Which servers a fault applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultTarget {
    /// The name server and every broker.
    Anywhere,
    /// The name server.
    NameServer,
    /// Every broker.
    AnyBroker,
    /// The broker with this name (`broker-a`, ...).
    Broker(String),
}

impl FaultTarget {
    fn matches(&self, server: &ServerKind) -> bool {
        match (self, server) {
            (FaultTarget::Anywhere, _)
            | (FaultTarget::NameServer, ServerKind::NameServer)
            | (FaultTarget::AnyBroker, ServerKind::Broker(_)) => true,
            (FaultTarget::Broker(want), ServerKind::Broker(name)) => want == name,
            _ => false,
        }
    }
}

/// A fault rule: which requests, and the [`Action`].
///
/// ```
/// use std::time::Duration;
/// use rmq_fake::{Action, Fault};
/// use rmq_protocol::{RequestCode, ResponseCode};
///
/// // The next three sends to broker-a are answered SYSTEM_BUSY.
/// let busy = Fault::on(RequestCode::SEND_MESSAGE_V2, Action::error(ResponseCode::SYSTEM_BUSY))
///     .broker("broker-a")
///     .times(3);
/// // Every request of one client to broker-b is swallowed (a network partition).
/// let partition = Fault::any(Action::Drop).broker("broker-b").client("10.0.0.5@app");
/// # let _ = (busy, partition);
/// ```
#[derive(Debug, Clone)]
pub struct Fault {
    code: Option<RequestCode>,
    target: FaultTarget,
    client: Option<String>,
    connection: Option<ConnectionId>,
    times: Option<u64>,
    action: Action,
}

impl Fault {
    /// A fault on every request of `code`, on every server, until removed.
    pub fn on(code: RequestCode, action: Action) -> Fault {
        Fault {
            code: Some(code),
            ..Fault::any(action)
        }
    }

    /// A fault on every request whatever its code, on every server, until
    /// removed.
    pub fn any(action: Action) -> Fault {
        Fault {
            code: None,
            target: FaultTarget::Anywhere,
            client: None,
            connection: None,
            times: None,
            action,
        }
    }

    /// Only on the broker named `name`.
    pub fn broker(mut self, name: impl Into<String>) -> Self {
        self.target = FaultTarget::Broker(name.into());
        self
    }

    /// Only on the name server.
    pub fn name_server(mut self) -> Self {
        self.target = FaultTarget::NameServer;
        self
    }

    /// Only on brokers (any).
    pub fn any_broker(mut self) -> Self {
        self.target = FaultTarget::AnyBroker;
        self
    }

    /// Only on the servers `target` names.
    pub fn target(mut self, target: FaultTarget) -> Self {
        self.target = target;
        self
    }

    /// Only on connections of the client with this id (`ip@instance`).
    ///
    /// A connection is attributed to a client when it carries the client's
    /// id: HEART_BEAT, UNREGISTER_CLIENT, LOCK_BATCH_MQ / UNLOCK_BATCH_MQ
    /// (the rule already applies to that request). Requests on a connection
    /// before then are not matched.
    pub fn client(mut self, client_id: impl Into<String>) -> Self {
        self.client = Some(client_id.into());
        self
    }

    /// Only on this connection.
    pub fn connection(mut self, id: ConnectionId) -> Self {
        self.connection = Some(id);
        self
    }

    /// Applies to the next `n` matching requests only, then removes itself.
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }

    fn matches(&self, code: RequestCode, server: &ServerKind, conn: &ConnShared) -> bool {
        if self.code.is_some_and(|c| c != code) || !self.target.matches(server) {
            return false;
        }
        if self.connection.is_some_and(|id| id != conn.id) {
            return false;
        }
        match &self.client {
            Some(want) => conn.client_id().as_deref() == Some(want.as_str()),
            None => true,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update under these locks is one push, remove or counter bump: a
    // panic cannot leave them inconsistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The rules in force.
#[derive(Debug, Default)]
pub(crate) struct FaultTable {
    rules: Mutex<Vec<(FaultId, Fault)>>,
    next: std::sync::atomic::AtomicU64,
}

impl FaultTable {
    pub(crate) fn add(&self, fault: Fault) -> FaultId {
        let id = FaultId(self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        lock(&self.rules).push((id, fault));
        id
    }

    pub(crate) fn remove(&self, id: FaultId) -> bool {
        let mut rules = lock(&self.rules);
        let before = rules.len();
        rules.retain(|(i, _)| *i != id);
        rules.len() != before
    }

    pub(crate) fn clear(&self) {
        lock(&self.rules).clear();
    }

    /// The action for a request, counting down (and dropping) a rule with a
    /// remaining count.
    pub(crate) fn lookup(
        &self,
        code: RequestCode,
        server: &ServerKind,
        conn: &ConnShared,
    ) -> Option<Action> {
        let mut rules = lock(&self.rules);
        let index = rules
            .iter()
            .position(|(_, f)| f.matches(code, server, conn))?;
        let (_, fault) = rules.get_mut(index)?;
        let action = fault.action.clone();
        if let Some(left) = fault.times.as_mut() {
            *left = left.saturating_sub(1);
            if *left == 0 {
                rules.remove(index);
            }
        }
        Some(action)
    }
}

/// Requests seen per server and code, with a change signal.
#[derive(Debug)]
pub(crate) struct Counters {
    counts: Mutex<HashMap<(ServerKind, i32), u64>>,
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
    pub(crate) fn record(&self, server: &ServerKind, code: RequestCode) {
        {
            let mut counts = lock(&self.counts);
            let n = counts.entry((server.clone(), code.0)).or_insert(0);
            *n = n.saturating_add(1);
        }
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    pub(crate) fn count(&self, code: RequestCode, server: Option<&ServerKind>) -> u64 {
        lock(&self.counts)
            .iter()
            .filter(|((s, c), _)| *c == code.0 && server.is_none_or(|want| want == s))
            .fold(0u64, |acc, (_, n)| acc.saturating_add(*n))
    }

    pub(crate) fn reset(&self) {
        lock(&self.counts).clear();
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}
