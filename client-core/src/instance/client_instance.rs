//! [`ClientInstance`]: the per-client-id shared machinery (Java
//! `MQClientInstance`): lifecycle, users and the producer / consumer
//! registry. Routes, heartbeats and inbound handlers live in the sibling
//! files.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use rmq_remoting::RemotingClient;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::auth::Credentials;
use crate::config::ClientConfig;
use crate::consumer::ConsumerHandle;
use crate::error::{Error, Result};
use crate::producer::ProducerHandle;
use crate::route::RouteSnapshot;

use super::{Scope, handlers, heartbeat, registry, routes};

/// How long [`ClientInstance::shutdown`] waits for the background tasks.
const TASK_STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// The machinery shared by every producer and consumer of one client id in
/// a process (Java `MQClientInstance`): route table, broker address table,
/// heartbeats, the registry of producer and consumer groups, the handlers
/// of broker → client requests, and the typed broker calls.
///
/// A cheap-to-clone handle (an `Arc`). Get one with
/// [`get_or_start`](ClientInstance::get_or_start); each call counts one
/// *user*, and each user calls [`release`](ClientInstance::release) once
/// when done. The last release stops the instance: background tasks are
/// cancelled and awaited, UNREGISTER_CLIENT is sent for every group still
/// registered, and every connection is closed. No task outlives
/// [`shutdown`](ClientInstance::shutdown) or the last `release`.
///
/// Dropping every handle without releasing only cancels the tasks (best
/// effort).
#[derive(Clone)]
pub struct ClientInstance {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for ClientInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientInstance")
            .field("client_id", &self.inner.client_id)
            .field("shutdown", &self.is_shutdown())
            .finish_non_exhaustive()
    }
}

/// Registered producer groups and consumers.
#[derive(Default, Clone)]
pub(crate) struct Members {
    pub(crate) producers: BTreeSet<String>,
    pub(crate) consumers: BTreeMap<String, Arc<dyn ConsumerHandle>>,
    /// Producers that take broker → client requests (transaction checks),
    /// by group; each group is in `producers` too.
    pub(crate) producer_handles: BTreeMap<String, Arc<dyn ProducerHandle>>,
}

/// The shared state behind every [`ClientInstance`] handle.
pub(crate) struct Inner {
    pub(crate) config: ClientConfig,
    pub(crate) client_id: String,
    pub(crate) remoting: RemotingClient,
    /// Route table + broker address table; swapped whole, read lock-free.
    pub(crate) routes: ArcSwap<RouteSnapshot>,
    /// Serializes route writers (fetch, compare, swap).
    pub(crate) route_update: tokio::sync::Mutex<()>,
    /// Index of the name server that answered last.
    pub(crate) namesrv_index: AtomicUsize,
    /// Producer groups and consumers. Never held across an `.await`.
    pub(crate) members: Mutex<Members>,
    /// Serializes heartbeat rounds and unregistrations.
    pub(crate) heartbeat_lock: tokio::sync::Mutex<()>,
    /// The version code each broker address put in its heartbeat answers
    /// (every broker response carries the broker's `MQVersion`). Never held
    /// across an `.await`.
    pub(crate) broker_versions: Mutex<BTreeMap<String, i32>>,
    /// Which broker addresses the heartbeats reach.
    pub(crate) links: super::links::Links,
    /// Requests waiting for their reply, by correlation id.
    pub(crate) replies: Arc<super::replies::ReplyTable>,
    /// Wakes the heartbeat task early (a new broker address appeared).
    pub(crate) heartbeat_wakeup: Arc<tokio::sync::Notify>,
    /// Wakes the route refresh early (a broker call could not connect or
    /// lost its connection: a dead broker's replacement, or its absence,
    /// is in the next route).
    pub(crate) route_wakeup: Arc<tokio::sync::Notify>,
    /// Users counted by `get_or_start` / `release`; guarded by the
    /// process registry's lock.
    pub(crate) users: AtomicUsize,
    /// Set once shutdown has begun (no new users, no new registrations).
    pub(crate) closing: AtomicBool,
    /// Pull requests sent to a master (`[0]`) and to a slave (`[1]`) address.
    pub(crate) pulls: [AtomicU64; 2],
    /// Held by the shutdown sequence; `true` once it completed.
    pub(crate) shutdown_done: tokio::sync::Mutex<bool>,
    pub(crate) cancel: CancellationToken,
    pub(crate) tasks: TaskTracker,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Best effort: the tasks hold only weak references, so they stop at
        // their next tick anyway; cancel makes it immediate.
        self.cancel.cancel();
    }
}

impl Inner {
    /// `e` with what an auth refusal names filled in: the access key this
    /// client signs with, and the request's `topic` / `group` when known.
    /// Every refusal of a broker call passes through here.
    pub(crate) fn refusal(
        &self,
        e: impl Into<Error>,
        topic: Option<&str>,
        group: Option<&str>,
    ) -> Error {
        let signer = self.config.credentials().map(Credentials::access_key);
        e.into().in_context(signer, topic, group)
    }

    /// Wakes the route refresh when `e` says the broker at the other end
    /// is gone (connect failed, connection closed), so that the client
    /// learns a new master in about a second instead of at the next poll.
    pub(crate) fn broker_call_failed(&self, e: &rmq_remoting::Error) {
        if matches!(e, rmq_remoting::Error::Connect { .. }) || e.is_connection_closed() {
            self.route_wakeup.notify_one();
        }
    }

    /// `request` to the broker at `addr` ([`RemotingClient::invoke`]); a
    /// failure that says the broker is gone wakes the route refresh
    /// ([`broker_call_failed`](Self::broker_call_failed)).
    pub(crate) async fn invoke(
        &self,
        addr: &str,
        request: rmq_protocol::RemotingCommand,
        timeout: std::time::Duration,
    ) -> Result<rmq_protocol::RemotingCommand, rmq_remoting::Error> {
        self.observed(self.remoting.invoke(addr, request, timeout).await)
    }

    /// Like [`invoke`](Self::invoke) for a typed `header` and `body`, answering
    /// with the response still in its frame
    /// ([`RemotingClient::invoke_header_raw`](rmq_remoting::RemotingClient::invoke_header_raw):
    /// no ext-field map on the way out when no RPC hook needs one, none on
    /// the way back for a caller that reads a typed header).
    pub(crate) async fn invoke_header_raw<H: rmq_protocol::header::CommandHeader>(
        &self,
        addr: &str,
        code: rmq_protocol::RequestCode,
        header: &H,
        body: bytes::Bytes,
        timeout: std::time::Duration,
    ) -> Result<rmq_protocol::RawCommand, rmq_remoting::Error> {
        self.observed(
            self.remoting
                .invoke_header_raw(addr, code, header, body, timeout)
                .await,
        )
    }

    /// `result` of a broker call, after a failure that says the broker is
    /// gone woke the route refresh.
    fn observed<T>(
        &self,
        result: Result<T, rmq_remoting::Error>,
    ) -> Result<T, rmq_remoting::Error> {
        if let Err(e) = &result {
            self.broker_call_failed(e);
        }
        result
    }

    /// A broker call that must answer SUCCESS; a refusal is named with
    /// the scope's topic and group ([`refusal`](Self::refusal)).
    pub(crate) async fn call_ok(
        &self,
        addr: &str,
        request: rmq_protocol::RemotingCommand,
        timeout: std::time::Duration,
        scope: Scope<'_>,
    ) -> Result<rmq_protocol::RemotingCommand, Error> {
        self.remoting
            .invoke_expect(
                addr,
                request,
                timeout,
                &[rmq_protocol::ResponseCode::SUCCESS],
            )
            .await
            .map_err(|e| {
                self.broker_call_failed(&e);
                self.refusal(e, scope.topic, scope.group)
            })
    }

    /// [`call_ok`](Self::call_ok) with the config's request timeout.
    pub(crate) async fn call_ok_default(
        &self,
        addr: &str,
        request: rmq_protocol::RemotingCommand,
        scope: Scope<'_>,
    ) -> Result<rmq_protocol::RemotingCommand, Error> {
        let timeout = self.config.request_timeout();
        self.call_ok(addr, request, timeout, scope).await
    }

    pub(crate) fn members(&self) -> MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn record_broker_version(&self, addr: &str, version: i32) {
        self.broker_versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(addr.to_owned(), version);
    }

    pub(crate) fn known_broker_version(&self, addr: &str) -> Option<i32> {
        self.broker_versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(addr)
            .copied()
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }
}

impl ClientInstance {
    /// The running instance for `config.client_id()`, or a new one started
    /// now (background route refresh and heartbeat tasks, inbound
    /// handlers). Counts one user: call [`release`](ClientInstance::release)
    /// once when done.
    ///
    /// A running instance keeps the config it was started with; `config`
    /// only provides the client id then. Producers and clustering
    /// consumers call
    /// [`ClientConfig::change_instance_name_to_pid`] first, like Java.
    ///
    /// Must be called within a Tokio runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when called outside a Tokio runtime, or when the
    /// config names no name server.
    pub fn get_or_start(config: ClientConfig) -> Result<ClientInstance> {
        if config.namesrv_addrs().is_empty() {
            return Err(crate::config::no_namesrv());
        }
        registry::get_or_start(config)
    }

    /// Builds and starts a new instance (called by the registry, under its
    /// lock).
    pub(super) fn start(config: ClientConfig) -> Result<ClientInstance> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::Config(
                "ClientInstance::get_or_start must be called from within a Tokio runtime".into(),
            )
        })?;
        let _guard = runtime.enter();
        let client_id = config.client_id();
        let remoting = RemotingClient::new(config.remoting_options().clone());
        let inner = Arc::new(Inner {
            client_id,
            remoting,
            routes: ArcSwap::from_pointee(RouteSnapshot::default()),
            route_update: tokio::sync::Mutex::new(()),
            namesrv_index: AtomicUsize::new(0),
            members: Mutex::new(Members::default()),
            heartbeat_lock: tokio::sync::Mutex::new(()),
            broker_versions: Mutex::new(BTreeMap::new()),
            links: super::links::Links::default(),
            replies: Arc::default(),
            heartbeat_wakeup: Arc::new(tokio::sync::Notify::new()),
            route_wakeup: Arc::new(tokio::sync::Notify::new()),
            users: AtomicUsize::new(1),
            closing: AtomicBool::new(false),
            pulls: [AtomicU64::new(0), AtomicU64::new(0)],
            shutdown_done: tokio::sync::Mutex::new(false),
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
            config,
        });
        let instance = ClientInstance { inner };
        handlers::register(&instance);
        super::replies::register(&instance);
        routes::spawn_refresh_task(&instance);
        heartbeat::spawn_heartbeat_task(&instance);
        info!(client_id = %instance.inner.client_id, "client instance started");
        Ok(instance)
    }

    pub(crate) fn downgrade(&self) -> Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn from_weak(weak: &Weak<Inner>) -> Option<ClientInstance> {
        weak.upgrade().map(|inner| ClientInstance { inner })
    }

    /// This instance's client id (`ip@instance[@unit]`).
    pub fn client_id(&self) -> &str {
        &self.inner.client_id
    }

    /// The config the instance was started with.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The remoting client, e.g. to register a handler for
    /// CHECK_TRANSACTION_STATE. Do not shut it down directly.
    pub fn remoting(&self) -> &RemotingClient {
        &self.inner.remoting
    }

    /// Whether the instance is shutting down or shut down.
    pub fn is_shutdown(&self) -> bool {
        self.inner.is_closing()
    }

    /// The number of users (`get_or_start` calls not yet released).
    pub fn users(&self) -> usize {
        self.inner.users.load(Ordering::Acquire)
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.is_closing() {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Registers a producer group and sends a heartbeat at once (errors
    /// of the heartbeat are logged, not returned).
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateGroup`] when the group is already registered in
    /// this instance, [`Error::Shutdown`] after shutdown.
    pub async fn register_producer(&self, group: &str) -> Result<()> {
        self.check_open()?;
        if !self.inner.members().producers.insert(group.to_owned()) {
            return Err(Error::DuplicateGroup {
                kind: "producer",
                group: group.to_owned(),
            });
        }
        debug!(client_id = %self.inner.client_id, group, "producer registered");
        self.send_heartbeat_now().await;
        Ok(())
    }

    /// Registers a producer group as
    /// [`register_producer`](ClientInstance::register_producer) does, and
    /// routes the broker → client requests for it (CHECK_TRANSACTION_STATE
    /// of half messages whose `PGROUP` is `group`) to `handle`.
    ///
    /// # Errors
    ///
    /// As [`register_producer`](ClientInstance::register_producer).
    pub async fn register_producer_handle(
        &self,
        group: &str,
        handle: Arc<dyn ProducerHandle>,
    ) -> Result<()> {
        self.check_open()?;
        {
            let mut members = self.inner.members();
            if !members.producers.insert(group.to_owned()) {
                return Err(Error::DuplicateGroup {
                    kind: "producer",
                    group: group.to_owned(),
                });
            }
            members.producer_handles.insert(group.to_owned(), handle);
        }
        debug!(client_id = %self.inner.client_id, group, "producer with request handler registered");
        self.send_heartbeat_now().await;
        Ok(())
    }

    /// The request handler of producer `group`, if it registered one.
    pub fn producer_handle(&self, group: &str) -> Option<Arc<dyn ProducerHandle>> {
        self.inner.members().producer_handles.get(group).cloned()
    }

    /// Unregisters a producer group (and its request handler) and sends
    /// UNREGISTER_CLIENT for it to every known broker address (errors
    /// logged). Unknown groups are ignored.
    pub async fn unregister_producer(&self, group: &str) {
        let (removed, handle) = {
            let mut members = self.inner.members();
            (
                members.producers.remove(group),
                members.producer_handles.remove(group),
            )
        };
        // Dropped here, after the lock.
        drop(handle);
        if removed {
            self.unregister_client(Some(group), None).await;
        }
    }

    /// Registers a consumer under `group` and sends a heartbeat at once
    /// (errors logged). Broker → client requests naming `group` are routed
    /// to `consumer`.
    ///
    /// # Errors
    ///
    /// As [`register_producer`](ClientInstance::register_producer).
    pub async fn register_consumer(
        &self,
        group: &str,
        consumer: Arc<dyn ConsumerHandle>,
    ) -> Result<()> {
        self.check_open()?;
        {
            let mut members = self.inner.members();
            if members.consumers.contains_key(group) {
                return Err(Error::DuplicateGroup {
                    kind: "consumer",
                    group: group.to_owned(),
                });
            }
            members.consumers.insert(group.to_owned(), consumer);
        }
        debug!(client_id = %self.inner.client_id, group, "consumer registered");
        self.send_heartbeat_now().await;
        Ok(())
    }

    /// Unregisters the consumer of `group` and sends UNREGISTER_CLIENT for
    /// it to every known broker address (errors logged).
    pub async fn unregister_consumer(&self, group: &str) {
        let removed = self.inner.members().consumers.remove(group);
        // Dropped here, after the lock: a handle's `Drop` may call back.
        if removed.is_some() {
            drop(removed);
            self.unregister_client(None, Some(group)).await;
        }
    }

    /// The registered consumers (a snapshot).
    pub(crate) fn consumers(&self) -> Vec<Arc<dyn ConsumerHandle>> {
        self.inner.members().consumers.values().cloned().collect()
    }

    /// For a consumer dropped without shutdown: runs
    /// [`unregister_consumer`](ClientInstance::unregister_consumer) for
    /// `group`, then [`release`](ClientInstance::release), in a task on the
    /// current tokio runtime. Outside a runtime (e.g. dropped after it
    /// ended) nothing is done: the I/O has nowhere to run.
    pub fn spawn_unregister_consumer_and_release(&self, group: &str) {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let instance = self.clone();
            let group = group.to_owned();
            rt.spawn(async move {
                instance.unregister_consumer(&group).await;
                instance.release().await;
            });
        }
    }

    /// The consumer registered under `group`.
    pub fn consumer(&self, group: &str) -> Option<Arc<dyn ConsumerHandle>> {
        self.inner.members().consumers.get(group).cloned()
    }

    /// Gives back one user's share (one per
    /// [`get_or_start`](ClientInstance::get_or_start)); the last one shuts
    /// the instance down as [`shutdown`](ClientInstance::shutdown) does.
    /// Extra calls are ignored.
    pub async fn release(&self) {
        if registry::release(self) {
            self.shutdown().await;
        }
    }

    /// Stops the instance now, whatever its users: cancels and awaits the
    /// background tasks (bounded), sends UNREGISTER_CLIENT for every group
    /// still registered to every known broker address, and shuts the
    /// remoting client down. Later calls on this instance fail with
    /// [`Error::Shutdown`]; a later `get_or_start` starts a new instance.
    /// Idempotent; concurrent callers all return once it is done.
    pub async fn shutdown(&self) {
        self.inner.closing.store(true, Ordering::Release);
        registry::remove(self);
        let mut done = self.inner.shutdown_done.lock().await;
        if *done {
            return;
        }
        self.inner.cancel.cancel();
        self.inner.tasks.close();
        if tokio::time::timeout(TASK_STOP_TIMEOUT, self.inner.tasks.wait())
            .await
            .is_err()
        {
            warn!(client_id = %self.inner.client_id, "background tasks did not stop in time");
        }
        let (producers, consumers, handles) = {
            let mut members = self.inner.members();
            let producers = std::mem::take(&mut members.producers);
            let consumers = std::mem::take(&mut members.consumers);
            let handles = std::mem::take(&mut members.producer_handles);
            (producers, consumers, handles)
        };
        drop(handles);
        let unregisters = producers
            .iter()
            .map(|g| self.unregister_client(Some(g), None))
            .collect::<Vec<_>>();
        futures::future::join_all(unregisters).await;
        let unregisters = consumers
            .keys()
            .map(|g| self.unregister_client(None, Some(g)))
            .collect::<Vec<_>>();
        futures::future::join_all(unregisters).await;
        self.inner.remoting.shutdown().await;
        *done = true;
        info!(client_id = %self.inner.client_id, "client instance shut down");
    }
}
