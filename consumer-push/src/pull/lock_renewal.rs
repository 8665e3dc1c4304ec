//! The broker lock renewal of an orderly clustering consumer (Java
//! `RebalanceImpl.lockAll` every `rocketmq.client.rebalance.lockInterval`).

use std::sync::Arc;
use std::time::Duration;

use tracing::{Instrument, debug, info_span};

use crate::inner::Inner;

/// First lock renewal after start (Java: 1 s).
const FIRST_RENEWAL: Duration = Duration::from_secs(1);

/// Renews the held locks every `lock_renew_interval` (first after 1 s),
/// until the pulls stop. Clustering orderly consumers only.
pub(crate) fn spawn(inner: &Arc<Inner>) {
    let Some(locks) = inner.locks.clone() else {
        return;
    };
    let every = inner.config.lock_renew_interval;
    let stop = inner.stop_pull.clone();
    let span = info_span!(parent: None, "lock_renewal", group = %inner.core.group());
    inner.core.tasks().spawn(
        async move {
            let mut wait = FIRST_RENEWAL.min(every);
            loop {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = stop.cancelled() => break,
                }
                let locked = tokio::select! {
                    locked = locks.renew_all() => locked,
                    () = stop.cancelled() => break,
                };
                debug!(
                    locked = locked.len(),
                    tracked = locks.tracked().len(),
                    "locks renewed"
                );
                wait = every;
            }
        }
        .instrument(span),
    );
}
