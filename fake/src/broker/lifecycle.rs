//! A broker's lifecycle: start (bind, serve, register), stop (kill or
//! crash), and its background tasks (delayed-message delivery,
//! housekeeping).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::debug;

use super::service::BrokerService;
use super::state::{BrokerShared, BrokerState};
use crate::config::FlushPolicy;
use crate::error::{FakeError, Result};
use crate::net::{self, Server, ServerKind, lock};

/// A running broker's server and tasks.
#[derive(Debug)]
pub(super) struct Running {
    server: Server,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl BrokerShared {
    /// Binds and starts serving; registers with the name server.
    pub(crate) async fn start(self: &Arc<Self>) -> Result<()> {
        let mut run = self.run.lock().await;
        if run.is_some() {
            return Err(FakeError::BrokerRunning(self.name.clone()));
        }
        if self.cluster_cancel.is_cancelled() {
            return Err(FakeError::Shutdown);
        }
        let port = lock(&self.addr).map_or(self.port, |a| a.port());
        let (listener, addr) = net::bind(self.cfg.host, port)?;
        *lock(&self.addr) = Some(addr);
        let cancel = self.cluster_cancel.child_token();
        let server = Server::start(
            listener,
            ServerKind::Broker(self.name.clone()),
            self.cfg.flavor,
            Arc::new(BrokerService(Arc::clone(self))),
            Arc::clone(&self.net),
            &cancel,
        );
        let tracker = TaskTracker::new();
        tracker.spawn(schedule_loop(Arc::clone(self), cancel.clone()));
        tracker.spawn(housekeeping_loop(Arc::clone(self), cancel.clone()));
        {
            let mut st = self.state();
            st.running = true;
            self.register_all(&st);
        }
        debug!(broker = %self.name, %addr, "fake broker started");
        *run = Some(Running {
            server,
            cancel,
            tracker,
        });
        Ok(())
    }

    /// Stops serving: closes the listener and every connection, leaves the
    /// name server's routes. With `lose_unflushed`, what was not flushed is
    /// gone (messages and committed offsets).
    pub(crate) async fn stop(&self, lose_unflushed: bool) -> Result<()> {
        let mut run = self.run.lock().await;
        let Some(running) = run.take() else {
            return Err(FakeError::BrokerStopped(self.name.clone()));
        };
        self.namesrv.unregister_broker(&self.name);
        {
            let mut st = self.state();
            st.running = false;
            st.holds.wake_all();
        }
        running.cancel.cancel();
        running.server.stop().await;
        running.tracker.close();
        running.tracker.wait().await;
        let mut st = self.state();
        st.clients.clear();
        st.locks.clear();
        if lose_unflushed {
            let lost = st.store.truncate_unflushed();
            st.offsets = st.flushed_offsets.clone();
            let BrokerState {
                schedule, store, ..
            } = &mut *st;
            schedule.retain(|offset| store.by_commit_offset(offset).is_some());
            debug!(broker = %self.name, lost, "fake broker crashed, unflushed messages lost");
        }
        Ok(())
    }

    /// Cancels everything without waiting (the cluster is dropped).
    pub(crate) fn cancel(&self) {
        if let Ok(run) = self.run.try_lock() {
            if let Some(running) = run.as_ref() {
                running.cancel.cancel();
                running.server.cancel();
                running.tracker.close();
            }
        }
    }

    pub(crate) async fn is_running(&self) -> bool {
        self.run.lock().await.is_some()
    }
}

async fn schedule_loop(broker: Arc<BrokerShared>, cancel: CancellationToken) {
    loop {
        let next = broker.state().schedule.next_due();
        let clock = broker.clock.clone();
        tokio::select! {
            () = cancel.cancelled() => return,
            () = broker.schedule_changed.notified() => {}
            () = async {
                match next {
                    Some(due) => clock.sleep_until_ms(due).await,
                    None => std::future::pending::<()>().await,
                }
            } => {}
        }
        broker.deliver_due(false);
    }
}

async fn housekeeping_loop(broker: Arc<BrokerShared>, cancel: CancellationToken) {
    let flush_every = match broker.cfg.flush {
        FlushPolicy::Interval(d) => Some(d.max(Duration::from_millis(1))),
        FlushPolicy::Always | FlushPolicy::Manual => None,
    };
    let tick = flush_every.map_or(Duration::from_secs(1), |d| d.min(Duration::from_secs(1)));
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let expiry_ms = i64::try_from(broker.cfg.channel_expiry.as_millis()).unwrap_or(i64::MAX);
    let mut last_flush = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        if let Some(every) = flush_every {
            if last_flush.elapsed() >= every {
                broker.flush();
                last_flush = tokio::time::Instant::now();
            }
        }
        let expired = broker.state().clients.expired(broker.now_ms(), expiry_ms);
        for conn in expired {
            debug!(conn = %conn.id, "fake: client expired (no heartbeat), closing its connection");
            conn.close();
        }
    }
}
