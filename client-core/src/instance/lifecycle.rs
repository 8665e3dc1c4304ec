//! The lifecycle of a [`ClientInstance`]: started through the process
//! registry (`get_or_start`), its background tasks and handlers, the users'
//! `release` and `shutdown`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use rmq_remoting::RemotingClient;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::config::ClientConfig;
use crate::error::{Error, Result};
use crate::route::RouteSnapshot;

use super::links::Links;
use super::{ClientInstance, Inner, Members, handlers, heartbeat, registry, routes};

/// How long [`ClientInstance::shutdown`] waits for the background tasks.
const TASK_STOP_TIMEOUT: Duration = Duration::from_secs(5);

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
        registry::get_or_start(config, ClientInstance::start)
    }

    /// Builds and starts a new instance (called by the registry, under its
    /// lock).
    fn start(config: ClientConfig) -> Result<ClientInstance> {
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
            links: Links::default(),
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
