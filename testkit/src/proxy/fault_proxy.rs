//! [`FaultProxy`]: the listeners, the shared state of the connections and
//! the route rewriting.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmq_protocol::RequestCode;
use rmq_protocol::body::TopicRouteData;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use super::conn;
use super::rewrite::{self, RewriteError};
use super::rules::{Counters, Rule, RuleTable, Scope, Target};

/// Errors of the fault proxy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// A listener could not be opened on `127.0.0.1`.
    #[error(
        "the fault proxy cannot listen on 127.0.0.1: {0}; check the local port range and file limits"
    )]
    Bind(#[source] io::Error),
    /// [`FaultProxy::wait_for_requests`] timed out.
    #[error(
        "the fault proxy saw {seen} {code:?} request(s) within {after:?}, expected at least {wanted}; \
         is the client configured with the proxy's name server address?"
    )]
    WaitTimeout {
        /// The request code waited for.
        code: RequestCode,
        /// How many were expected.
        wanted: u64,
        /// How many had been seen at the deadline.
        seen: u64,
        /// The timeout.
        after: Duration,
    },
    /// The proxy has been shut down.
    #[error("the fault proxy has been shut down; start a new one")]
    Shutdown,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update under these locks is a single insert or replace: a panic
    // cannot leave them inconsistent, so poisoning is ignored.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// State shared by the proxy handle, its listeners and its connections.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) namesrv_upstream: String,
    pub(super) rules: RuleTable,
    pub(super) counters: Counters,
    /// Real broker address → proxy address (`127.0.0.1:port`).
    pub(super) brokers: Mutex<HashMap<String, String>>,
    pub(super) tracker: TaskTracker,
    /// Cancelled by shutdown: stops every listener and connection.
    pub(super) cancel: CancellationToken,
    /// Child of `cancel` handed to connections; replaced by `disconnect_all`.
    pub(super) connections: Mutex<CancellationToken>,
    /// Open proxied connections.
    pub(super) active: AtomicUsize,
}

impl Shared {
    /// Binds a listener on `127.0.0.1:0`; returns it and its address.
    fn bind() -> Result<(TcpListener, SocketAddr), ProxyError> {
        let std_listener =
            std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(ProxyError::Bind)?;
        std_listener
            .set_nonblocking(true)
            .map_err(ProxyError::Bind)?;
        let addr = std_listener.local_addr().map_err(ProxyError::Bind)?;
        let listener = TcpListener::from_std(std_listener).map_err(ProxyError::Bind)?;
        Ok((listener, addr))
    }

    /// Starts the accept loop of `listener` for connections to `target`.
    fn serve(self: &Arc<Self>, listener: TcpListener, target: Target) {
        let shared = Arc::clone(self);
        self.tracker.spawn(async move {
            loop {
                tokio::select! {
                    () = shared.cancel.cancelled() => break,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, peer)) => {
                            debug!(%peer, upstream = %target.upstream(), "fault proxy: accepted");
                            let token = lock(&shared.connections).clone();
                            shared.tracker.spawn(conn::run(
                                Arc::clone(&shared),
                                target.clone(),
                                stream,
                                token,
                            ));
                        }
                        Err(e) => {
                            warn!(error = %e, "fault proxy: accept failed");
                            // E.g. out of file descriptors: do not spin.
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    },
                }
            }
        });
    }

    /// The proxy address for the broker at `upstream`, starting its listener
    /// on first use.
    fn ensure_broker(self: &Arc<Self>, upstream: &str) -> Result<String, ProxyError> {
        if self.cancel.is_cancelled() {
            return Err(ProxyError::Shutdown);
        }
        let mut brokers = lock(&self.brokers);
        if let Some(addr) = brokers.get(upstream) {
            return Ok(addr.clone());
        }
        let (listener, addr) = Self::bind()?;
        let addr = addr.to_string();
        debug!(upstream, proxy = %addr, "fault proxy: broker listener started");
        self.serve(listener, Target::Broker(upstream.to_owned()));
        brokers.insert(upstream.to_owned(), addr.clone());
        Ok(addr)
    }

    /// Rewrites a route body so that every broker address points at its
    /// proxy; an error when any broker has no proxy listener.
    pub(super) fn rewrite_route(self: &Arc<Self>, body: &[u8]) -> Result<Vec<u8>, RewriteError> {
        let route = TopicRouteData::decode(body)?;
        let mut map = HashMap::new();
        for upstream in rewrite::broker_addrs(&route) {
            match self.ensure_broker(&upstream) {
                Ok(proxy) => {
                    map.insert(upstream, proxy);
                }
                Err(e) => {
                    return Err(RewriteError::NoListener {
                        upstream,
                        reason: e.to_string(),
                    });
                }
            }
        }
        rewrite::rewrite_route(body, &map)
    }
}

/// A fault-injecting proxy in front of a name server and its brokers; see the
/// [module documentation](crate::proxy).
///
/// Dropping it without [`shutdown`](FaultProxy::shutdown) also stops its
/// listeners and connections, without waiting for them.
#[derive(Debug)]
pub struct FaultProxy {
    shared: Arc<Shared>,
    namesrv_addr: String,
}

impl FaultProxy {
    /// Starts a proxy for the name server at `namesrv_upstream` (`host:port`)
    /// on `127.0.0.1` (a free port). Broker listeners start when a route
    /// names their broker, or with [`proxy_broker`](FaultProxy::proxy_broker).
    ///
    /// Must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Bind`] when no listener can be opened.
    pub async fn start(namesrv_upstream: &str) -> Result<FaultProxy, ProxyError> {
        let cancel = CancellationToken::new();
        let shared = Arc::new(Shared {
            namesrv_upstream: namesrv_upstream.to_owned(),
            rules: RuleTable::default(),
            counters: Counters::default(),
            brokers: Mutex::new(HashMap::new()),
            tracker: TaskTracker::new(),
            connections: Mutex::new(cancel.child_token()),
            cancel,
            active: AtomicUsize::new(0),
        });
        let (listener, addr) = Shared::bind()?;
        shared.serve(listener, Target::NameServer(namesrv_upstream.to_owned()));
        debug!(upstream = namesrv_upstream, proxy = %addr, "fault proxy: started");
        Ok(FaultProxy {
            shared,
            namesrv_addr: addr.to_string(),
        })
    }

    /// The proxy's name server address (`127.0.0.1:port`): configure the
    /// client under test with it.
    pub fn namesrv_addr(&self) -> &str {
        &self.namesrv_addr
    }

    /// The real name server's address.
    pub fn namesrv_upstream(&self) -> &str {
        &self.shared.namesrv_upstream
    }

    /// The proxy address standing for the broker at `upstream` (its real
    /// address, as the name server lists it), if its listener has started.
    pub fn broker_proxy_addr(&self, upstream: &str) -> Option<String> {
        lock(&self.shared.brokers).get(upstream).cloned()
    }

    /// Starts (if not yet started) the listener for the broker at `upstream`
    /// and returns its address, for tests that talk to a broker without
    /// asking for a route first.
    ///
    /// # Errors
    ///
    /// [`ProxyError::Bind`], or [`ProxyError::Shutdown`] after shutdown.
    pub fn proxy_broker(&self, upstream: &str) -> Result<String, ProxyError> {
        self.shared.ensure_broker(upstream)
    }

    /// Real broker address → proxy address, for every broker listener started.
    pub fn broker_proxies(&self) -> HashMap<String, String> {
        lock(&self.shared.brokers).clone()
    }

    /// Sets the rule for requests of `code` on every broker connection
    /// ([`Scope::AllBrokers`]), replacing the previous one. Applies from the
    /// next request, on open connections too.
    pub fn set_rule(&self, code: RequestCode, rule: Rule) {
        self.shared.rules.set(code, Scope::AllBrokers, rule);
    }

    /// Sets the rule for requests of `code` on the connections `scope`
    /// selects, replacing that scope's previous rule for `code`.
    pub fn set_rule_in(&self, scope: Scope, code: RequestCode, rule: Rule) {
        self.shared.rules.set(code, scope, rule);
    }

    /// Removes every rule for `code`, in every scope.
    pub fn clear_rule(&self, code: RequestCode) {
        self.shared.rules.clear(code, None);
    }

    /// Removes the rule for `code` in `scope` only.
    pub fn clear_rule_in(&self, scope: &Scope, code: RequestCode) {
        self.shared.rules.clear(code, Some(scope));
    }

    /// Removes every rule: everything passes again.
    pub fn clear_all(&self) {
        self.shared.rules.clear_all();
    }

    /// Requests of `code` the proxy has received from clients (on every
    /// connection, name server and brokers), whatever the rule did with
    /// them, since start or [`reset_counts`](FaultProxy::reset_counts).
    pub fn request_count(&self, code: RequestCode) -> u64 {
        self.shared.counters.count(code, None)
    }

    /// Like [`request_count`](FaultProxy::request_count), for connections
    /// to the upstream at `upstream` (a real broker or name server address).
    pub fn request_count_to(&self, upstream: &str, code: RequestCode) -> u64 {
        self.shared.counters.count(code, Some(upstream))
    }

    /// Sets every request count to zero.
    pub fn reset_counts(&self) {
        self.shared.counters.reset();
    }

    /// Waits until at least `n` requests of `code` have been seen (see
    /// [`request_count`](FaultProxy::request_count)); returns the count.
    ///
    /// # Errors
    ///
    /// [`ProxyError::WaitTimeout`] when fewer arrived within `timeout`.
    pub async fn wait_for_requests(
        &self,
        code: RequestCode,
        n: u64,
        timeout: Duration,
    ) -> Result<u64, ProxyError> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Subscribe before reading, so that no change is missed.
        let mut changed = self.shared.counters.subscribe();
        loop {
            let seen = self.request_count(code);
            if seen >= n {
                return Ok(seen);
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                // The sender lives as long as `self`; treat its end like the deadline.
                Ok(Err(_)) | Err(_) => {
                    let seen = self.request_count(code);
                    if seen >= n {
                        return Ok(seen);
                    }
                    return Err(ProxyError::WaitTimeout {
                        code,
                        wanted: n,
                        seen,
                        after: timeout,
                    });
                }
            }
        }
    }

    /// The number of open proxied client connections.
    pub fn active_connections(&self) -> usize {
        self.shared.active.load(Ordering::SeqCst)
    }

    /// Closes every open proxied connection (both sides), like a network
    /// failure; listeners stay up and new connections are accepted.
    pub fn disconnect_all(&self) {
        let mut current = lock(&self.shared.connections);
        let old = std::mem::replace(&mut *current, self.shared.cancel.child_token());
        old.cancel();
    }

    /// Stops every listener and connection and waits until all their tasks
    /// have ended. Idempotent; later calls to the proxy's addresses are
    /// refused.
    pub async fn shutdown(&self) {
        self.shared.cancel.cancel();
        self.shared.tracker.close();
        self.shared.tracker.wait().await;
        debug!(proxy = %self.namesrv_addr, "fault proxy: shut down");
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
        self.shared.tracker.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &[u8] = br#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"C"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;

    #[tokio::test]
    async fn a_route_seen_during_shutdown_is_refused_not_passed_on() {
        // The upstream is never dialled: only the rewrite is exercised.
        let proxy = FaultProxy::start("127.0.0.1:1").await.unwrap();
        let rewritten = proxy.shared.rewrite_route(ROUTE).unwrap();
        let text = String::from_utf8(rewritten).unwrap();
        assert!(!text.contains("10911"), "{text}");
        let proxied = proxy.broker_proxy_addr("127.0.0.1:10911").unwrap();
        assert!(text.contains(&proxied), "{text}");

        proxy.shutdown().await;
        // Known broker, new broker: neither may reach the client as is.
        let err = proxy.shared.rewrite_route(ROUTE).unwrap_err();
        assert!(matches!(err, RewriteError::NoListener { .. }), "{err}");
    }
}
