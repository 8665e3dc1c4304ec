//! [`PopAcker`]: one task that acks the popped messages its consumer hands
//! it, taking whatever is queued at that moment as one batch (no added
//! latency), with a few batches at the brokers at once, and reports how
//! each batch went ([`AckReport`]).

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, info_span, warn};

use super::ack::ack_all;
use super::handle::PopHandle;
use super::wire::PopWire;

/// Hand-overs waiting for the task (a full queue makes settling wait).
const QUEUED: usize = 1024;
/// Acks taken as one batch: more hand-overs are added while it is below.
const BATCH: usize = 256;
/// Most batches at the brokers at once.
const IN_FLIGHT: usize = 4;

/// Told after each batch how many acks the brokers took and how many
/// failed (those messages come back after their invisible time): the
/// consumer's counters.
pub type AckReport = Arc<dyn Fn(usize, usize) + Send + Sync>;

/// Feeds the ack task; cheap to clone. The task acks what is queued and
/// ends once the last clone is gone, so a shutdown acks every message
/// consumed before it.
#[derive(Debug, Clone)]
pub struct PopAcker {
    tx: mpsc::Sender<Vec<PopHandle>>,
}

impl PopAcker {
    /// Spawns the ack task of `group` on `tasks`; `report` hears how each
    /// batch went.
    pub fn spawn<W: PopWire + 'static>(
        wire: Arc<W>,
        group: String,
        tasks: &TaskTracker,
        report: AckReport,
    ) -> Self {
        let (tx, rx) = mpsc::channel(QUEUED);
        let span = info_span!(parent: None, "pop_acker", group = %group);
        tasks.spawn(async move { drain(&*wire, &group, rx, &*report).await }.instrument(span));
        PopAcker { tx }
    }

    /// Queues the ack of a consumed message (waits while the queue is
    /// full); `false` when the task stopped (the message comes back).
    pub async fn ack(&self, h: PopHandle) -> bool {
        self.ack_all(vec![h]).await
    }

    /// Queues the acks of several consumed messages at once.
    pub async fn ack_all(&self, hs: Vec<PopHandle>) -> bool {
        if self.tx.send(hs).await.is_err() {
            warn!("the pop acker stopped; a consumed message comes back");
            return false;
        }
        true
    }
}

/// Acks what comes until every sender is gone.
async fn drain<W: PopWire>(
    wire: &W,
    group: &str,
    mut rx: mpsc::Receiver<Vec<PopHandle>>,
    report: &(dyn Fn(usize, usize) + Send + Sync),
) {
    let mut open = true;
    let mut running = FuturesUnordered::new();
    while open || !running.is_empty() {
        tokio::select! {
            biased;
            Some(()) = running.next(), if !running.is_empty() => {}
            next = rx.recv(), if open && running.len() < IN_FLIGHT => match next {
                Some(mut batch) => {
                    while batch.len() < BATCH {
                        let Ok(more) = rx.try_recv() else { break };
                        batch.extend(more);
                    }
                    running.push(ack_batch(wire, group, batch, report));
                }
                None => open = false,
            },
        }
    }
    debug!("pop acker stopped");
}

async fn ack_batch<W: PopWire>(
    wire: &W,
    group: &str,
    batch: Vec<PopHandle>,
    report: &(dyn Fn(usize, usize) + Send + Sync),
) {
    let refs: Vec<&PopHandle> = batch.iter().collect();
    let mut failed_count = 0;
    for failed in ack_all(wire, group, &refs).await {
        warn!(count = failed.count, error = %failed.error, "ack failed; the messages come back after their invisible time");
        failed_count += failed.count;
    }
    report(batch.len().saturating_sub(failed_count), failed_count);
}
