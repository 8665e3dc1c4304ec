//! The send loop: concurrency, rate limit, progress, and what a run sent.

use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmq::{Message, Producer, SendResult};
use tokio::sync::mpsc;

use crate::cmd::Outcome;
use crate::error::{CliError, Result, report};
use crate::output::Out;
use crate::progress::{Latency, Progress, per_second};

/// Failures printed one by one before only counting.
const FAILURES_SHOWN: u64 = 10;

/// What a run sent.
#[derive(Debug, Default)]
pub(crate) struct Sent {
    pub(crate) ok: u64,
    pub(crate) failed: u64,
    pub(crate) bytes: u64,
    pub(crate) first_error: Option<Box<rmq::Error>>,
    pub(crate) elapsed: Duration,
    pub(crate) latency: Option<Latency>,
    pub(crate) interrupted: bool,
}

impl Sent {
    /// `sent 1000 messages (0 failed) in 1.02 s: 980 msg/s, 0.96 MiB/s`.
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn summary(&self) -> String {
        let secs = self.elapsed.as_secs_f64();
        let mib = if secs > 0.0 {
            self.bytes as f64 / secs / (1024.0 * 1024.0)
        } else {
            0.0
        };
        let mut s = format!(
            "sent {} messages ({} failed) in {:.2} s: {:.0} msg/s, {:.2} MiB/s",
            self.ok,
            self.failed,
            secs,
            per_second(self.ok, self.elapsed),
            mib
        );
        if self.interrupted {
            s.push_str(" (interrupted)");
        }
        if let Some(l) = &self.latency {
            s.push_str("\nlatency: ");
            s.push_str(&l.summary());
        }
        s
    }
}

/// The exit of a produce run: interrupted (130), failures (1) or done.
pub(crate) fn finish(sent: Sent) -> Result<Outcome> {
    if let Some(first) = sent.first_error {
        return Err(CliError::SendFailed {
            failed: sent.failed,
            total: sent.ok + sent.failed,
            first,
        });
    }
    Ok(if sent.interrupted {
        Outcome::Interrupted
    } else {
        Outcome::Done
    })
}

/// Sends what arrives on `rx`, `concurrency` at a time, at most `rate` per
/// second, until the input ends or Ctrl-C; then waits for the sends in
/// flight.
pub(crate) async fn send_all(
    producer: &Producer,
    mut rx: mpsc::Receiver<Result<Message>>,
    total: Option<u64>,
    concurrency: usize,
    rate: Option<f64>,
    print_each: bool,
    quiet: bool,
) -> Result<Sent> {
    let mut progress = Progress::new("produce", total, quiet);
    let mut out = Out::new();
    let mut sent = Sent::default();
    let mut latency = Latency::new();
    let interval = rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let started = Instant::now();
    let tokio_start = tokio::time::Instant::now();
    let mut issued: u32 = 0;
    let mut inflight = FuturesUnordered::new();
    let mut input_done = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut input_error = None;
    loop {
        if input_done && inflight.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            _ = &mut ctrl_c, if !sent.interrupted => {
                sent.interrupted = true;
                input_done = true;
            }
            Some((result, took, size)) = inflight.next(), if !inflight.is_empty() => {
                record(&mut sent, &mut latency, result, took, size, print_each, &progress, &mut out)?;
                progress.set(sent.ok + sent.failed);
            }
            next = rx.recv(), if !input_done && inflight.len() < concurrency => match next {
                Some(Ok(msg)) => {
                    if let Some(step) = interval {
                        tokio::time::sleep_until(tokio_start + step.saturating_mul(issued)).await;
                    }
                    issued = issued.saturating_add(1);
                    let size = msg.body.len() as u64;
                    let producer = producer.clone();
                    inflight.push(async move {
                        let t = Instant::now();
                        let r = producer.send(msg).await;
                        (r, t.elapsed(), size)
                    });
                }
                Some(Err(e)) => {
                    input_error = Some(e);
                    input_done = true;
                }
                None => input_done = true,
            },
            else => break,
        }
    }
    progress.finish();
    out.flush()?;
    sent.elapsed = started.elapsed();
    if latency.count() > 0 {
        sent.latency = Some(latency);
    }
    match input_error {
        Some(e) => {
            eprintln!("{}", sent.summary());
            Err(e)
        }
        None => Ok(sent),
    }
}

#[allow(clippy::too_many_arguments)]
fn record(
    sent: &mut Sent,
    latency: &mut Latency,
    result: rmq::Result<SendResult>,
    took: Duration,
    size: u64,
    print_each: bool,
    progress: &Progress,
    out: &mut Out,
) -> Result<()> {
    match result {
        Ok(r) => {
            sent.ok += 1;
            sent.bytes += size;
            latency.record(took);
            if print_each {
                let mut line = format!("{} {} {}", r.msg_id, r.message_queue, r.queue_offset);
                if let Some(h) = &r.recall_handle {
                    line.push_str(" recall=");
                    line.push_str(h);
                }
                progress.suspend(|| out.line(&line))?;
            }
        }
        Err(e) => {
            sent.failed += 1;
            if sent.failed <= FAILURES_SHOWN {
                progress.suspend(|| eprintln!("send failed: {}", report(&e)));
            } else if sent.failed == FAILURES_SHOWN + 1 {
                progress.suspend(|| eprintln!("(further failures are only counted)"));
            }
            sent.first_error.get_or_insert(Box::new(e));
        }
    }
    Ok(())
}
