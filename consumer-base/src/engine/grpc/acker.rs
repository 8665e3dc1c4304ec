//! [`Acker`]: one task that acks what its consumer hands it, batching
//! whatever is queued at that moment (no added latency), with a few
//! `AckMessage` requests at once; failed acks go again as [`ack_all`]
//! says.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, info_span, warn};

use super::ack::{Settled, ack_all};
use super::calls::ProxyCalls;
use super::handle::Handle;

/// Acks waiting for the acker (a full queue makes settling wait).
const ACK_QUEUE: usize = 4096;
/// Most acks in one `AckMessage` request.
const ACK_BATCH: usize = 256;
/// Most `AckMessage` requests at once.
const ACKS_IN_FLIGHT: usize = 4;

/// Feeds the acker task; [`finish`](Acker::finish) drains it.
#[derive(Debug)]
pub struct Acker<A> {
    tx: mpsc::Sender<A>,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl<A> Acker<A>
where
    A: Handle + Settled + Send + 'static,
{
    /// Spawns the acker of `group`'s session; it stops (after acking what
    /// is queued) when `stop` is cancelled.
    pub fn spawn<S: ProxyCalls>(session: S, group: String, stop: CancellationToken) -> Self {
        let (tx, rx) = mpsc::channel(ACK_QUEUE);
        let tasks = TaskTracker::new();
        let span = info_span!(parent: None, "grpc_acker", group = %group);
        let token = stop.clone();
        tasks.spawn(async move { run(&session, &group, rx, &token).await }.instrument(span));
        tasks.close();
        Acker { tx, stop, tasks }
    }

    /// Queues the ack of a consumed message (waits while the queue is
    /// full); `false` when the acker stopped (the ack is settled as not
    /// taken: the message comes back).
    pub async fn ack(&self, ack: A) -> bool {
        match self.tx.send(ack).await {
            Ok(()) => true,
            Err(mpsc::error::SendError(ack)) => {
                warn!(
                    msg_id = ack.message_id(),
                    "the acker stopped; a consumed message comes back"
                );
                ack.settled(false);
                false
            }
        }
    }

    /// Acks what is queued and stops the acker, waiting at most `limit`.
    pub async fn finish(&self, limit: Duration) {
        self.stop.cancel();
        if tokio::time::timeout(limit, self.tasks.wait())
            .await
            .is_err()
        {
            warn!("acks still running at shutdown; the proxy gives those messages back");
        }
    }
}

/// Acks what comes, batching whatever is queued at that moment, with up to
/// [`ACKS_IN_FLIGHT`] requests at once; once stopped, acks what is still
/// queued and ends.
async fn run<S, A>(session: &S, group: &str, mut rx: mpsc::Receiver<A>, stop: &CancellationToken)
where
    S: ProxyCalls,
    A: Handle + Settled,
{
    let take_batch = |rx: &mut mpsc::Receiver<A>, first: A| {
        let mut batch = Vec::with_capacity(ACK_BATCH);
        batch.push(first);
        while batch.len() < ACK_BATCH {
            match rx.try_recv() {
                Ok(a) => batch.push(a),
                Err(_) => break,
            }
        }
        batch
    };
    let mut running = FuturesUnordered::new();
    loop {
        tokio::select! {
            biased;
            Some(()) = running.next(), if !running.is_empty() => {}
            ack = rx.recv(), if running.len() < ACKS_IN_FLIGHT => {
                let Some(first) = ack else {
                    break;
                };
                let batch = take_batch(&mut rx, first);
                running.push(ack_all(session, group, batch, stop));
            }
            () = stop.cancelled() => break,
        }
    }
    rx.close();
    while let Ok(first) = rx.try_recv() {
        let batch = take_batch(&mut rx, first);
        running.push(ack_all(session, group, batch, stop));
    }
    while running.next().await.is_some() {}
    debug!("gRPC acker stopped");
}

#[cfg(test)]
mod tests {
    use super::super::script::{Call, Script, TestAck, acked};
    use super::*;

    fn sent(script: &Script) -> Vec<usize> {
        script
            .calls()
            .iter()
            .filter_map(|c| match c {
                Call::Ack(_, _, e) => Some(e.len()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn queued_acks_go_in_one_request_and_finish_drains_them() {
        let script = Script::new();
        script.ack_answers([acked(&[]), acked(&[])]);
        let acker = Acker::spawn(script.clone(), "G".into(), CancellationToken::new());
        let acks: Vec<TestAck> = (0..5)
            .map(|i| TestAck::new("T", &format!("m{i}")))
            .collect();
        // Queued before the acker task runs: one batch.
        for a in &acks {
            assert!(acker.ack(a.clone()).await);
        }
        acker.finish(Duration::from_secs(10)).await;
        assert_eq!(sent(&script), [5]);
        assert!(acks.iter().all(|a| a.outcome() == Some(true)));
        // Stopped: an ack comes back at once.
        let late = TestAck::new("T", "late");
        assert!(!acker.ack(late.clone()).await);
        assert_eq!(late.outcome(), Some(false));
    }

    #[tokio::test(start_paused = true)]
    async fn acks_arriving_later_go_in_their_own_request() {
        let script = Script::new();
        script.ack_answers([acked(&[]), acked(&[])]);
        let acker = Acker::spawn(script.clone(), "G".into(), CancellationToken::new());
        let first = TestAck::new("T", "m1");
        acker.ack(first.clone()).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        let second = TestAck::new("T", "m2");
        acker.ack(second.clone()).await;
        acker.finish(Duration::from_secs(10)).await;
        assert_eq!(sent(&script), [1, 1]);
        assert_eq!(
            (first.outcome(), second.outcome()),
            (Some(true), Some(true))
        );
    }
}
