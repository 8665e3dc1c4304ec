//! Receive-side statistics shared by the drain and latency modes, and the
//! `RESULT {json}` line every client program prints (see bench/README.md).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde_json::json;
use tokio::sync::Notify;

/// Microseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Reads the latency header of a body: `[send time µs, BE u64][sequence, BE u64]`.
pub(crate) fn latency_header(body: &[u8]) -> Option<(u64, u64)> {
    let sent: [u8; 8] = body.get(0..8)?.try_into().ok()?;
    let seq: [u8; 8] = body.get(8..16)?.try_into().ok()?;
    Some((u64::from_be_bytes(sent), u64::from_be_bytes(seq)))
}

#[derive(Debug, Default)]
struct Times {
    first: Option<Instant>,
    last: Option<Instant>,
}

/// Counts received messages, remembers the first and last receive instants,
/// optionally records latencies, and wakes the waiter once `expect` arrived.
#[derive(Debug)]
pub(crate) struct Stats {
    count: AtomicU64,
    expect: u64,
    latency_skip: Option<u64>,
    times: Mutex<Times>,
    /// Latencies in µs, 3 significant digits (the histogram grows to the largest value).
    latencies_us: Mutex<Histogram<u64>>,
    done: Notify,
}

impl Stats {
    /// Expect `expect` messages; with `latency_skip`, record latencies of
    /// messages whose sequence number is at least that.
    pub(crate) fn new(expect: u64, latency_skip: Option<u64>) -> Self {
        Stats {
            count: AtomicU64::new(0),
            expect,
            latency_skip,
            times: Mutex::new(Times::default()),
            latencies_us: Mutex::new(new_histogram()),
            done: Notify::new(),
        }
    }

    /// Whether latencies are recorded.
    pub(crate) fn wants_latency(&self) -> bool {
        self.latency_skip.is_some()
    }

    /// Records the latency of one body received at `recv_us`.
    pub(crate) fn record_latency<'a>(&self, recv_us: u64, bodies: impl Iterator<Item = &'a [u8]>) {
        let Some(skip) = self.latency_skip else {
            return;
        };
        let mut lat = self
            .latencies_us
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for body in bodies {
            if let Some((sent, seq)) = latency_header(body) {
                if seq >= skip {
                    lat.saturating_record(recv_us.saturating_sub(sent));
                }
            }
        }
    }

    /// Counts `n` received messages.
    pub(crate) fn add(&self, n: u64) {
        let now = Instant::now();
        {
            let mut t = self
                .times
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if t.first.is_none() {
                t.first = Some(now);
            }
            t.last = Some(now);
        }
        let before = self.count.fetch_add(n, Ordering::AcqRel);
        if before < self.expect && before.saturating_add(n) >= self.expect {
            self.done.notify_one();
        }
    }

    /// Messages counted so far.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }

    /// Whether `expect` messages arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.count() >= self.expect
    }

    /// Waits until `expect` messages arrived or `timeout` passed; true on timeout.
    pub(crate) async fn wait(&self, timeout: std::time::Duration) -> bool {
        tokio::time::timeout(timeout, async {
            while !self.is_done() {
                // notify_one keeps a permit, so a wake-up before this wait is not lost.
                let _ =
                    tokio::time::timeout(std::time::Duration::from_secs(1), self.done.notified())
                        .await;
            }
        })
        .await
        .is_err()
    }

    /// The `RESULT {json}` line for `client`; `started` is when the client was started.
    pub(crate) fn result_line(&self, client: &str, started: Instant, timed_out: bool) -> String {
        result_line(&self.result(client, started, timed_out))
    }

    /// The object of [`result_line`](Self::result_line), for a mode that adds its own fields.
    pub(crate) fn result(
        &self,
        client: &str,
        started: Instant,
        timed_out: bool,
    ) -> serde_json::Value {
        let (first, last) = {
            let t = self
                .times
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (t.first, t.last)
        };
        let elapsed = match (first, last) {
            (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
            _ => 0.0,
        };
        let startup = first.map_or(0.0, |f| f.duration_since(started).as_secs_f64());
        let lat = self
            .latencies_us
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        json!({
            "client": client,
            "count": self.count(),
            "elapsed_s": elapsed,
            "startup_s": startup,
            "timeout": timed_out,
            "latency_samples": lat.len(),
            "p50_ms": percentile_ms(&lat, 0.50),
            "p99_ms": percentile_ms(&lat, 0.99),
            "p999_ms": percentile_ms(&lat, 0.999),
        })
    }

    /// Seconds from the first to the last counted message (0 before two arrived).
    pub(crate) fn elapsed_s(&self) -> f64 {
        let t = self
            .times
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match (t.first, t.last) {
            (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// `n` per second over `secs` seconds (0 when no time passed).
pub(crate) fn per_second(n: u64, secs: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let n = n as f64;
    if secs > 0.0 { n / secs } else { 0.0 }
}

/// The `RESULT {json}` line bench/runner.py reads.
pub(crate) fn result_line(value: &serde_json::Value) -> String {
    format!("RESULT {value}")
}

/// An empty latency histogram: 1 µs resolution, 3 significant digits, growing as needed.
fn new_histogram() -> Histogram<u64> {
    let mut h =
        Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits are valid"));
    h.auto(true);
    h
}

/// The percentile `p` (0..=1) of the recorded microsecond values, in ms (0 when empty).
pub(crate) fn percentile_ms(lat: &Histogram<u64>, p: f64) -> f64 {
    if lat.is_empty() {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let ms = lat.value_at_quantile(p) as f64 / 1000.0;
    ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let mut h = new_histogram();
        for i in 1..=1000u64 {
            h.record(i * 1000).unwrap();
        }
        // 3 significant digits: within 0.1 % of the exact nearest rank.
        let close = |got: f64, want: f64| (got - want).abs() <= want / 1000.0;
        assert!(
            close(percentile_ms(&h, 0.5), 500.0),
            "{}",
            percentile_ms(&h, 0.5)
        );
        assert!(close(percentile_ms(&h, 0.99), 990.0));
        assert!(close(percentile_ms(&h, 0.999), 999.0));
        assert_eq!(percentile_ms(&new_histogram(), 0.5), 0.0);
        let mut one = new_histogram();
        one.record(7000).unwrap();
        assert!(close(percentile_ms(&one, 0.999), 7.0));
    }

    #[test]
    fn latency_header_needs_16_bytes() {
        let mut b = 5u64.to_be_bytes().to_vec();
        assert_eq!(latency_header(&b), None);
        b.extend_from_slice(&9u64.to_be_bytes());
        assert_eq!(latency_header(&b), Some((5, 9)));
    }

    #[test]
    fn counts_and_records() {
        let s = Stats::new(3, Some(1));
        let mut b0 = 100u64.to_be_bytes().to_vec();
        b0.extend_from_slice(&0u64.to_be_bytes());
        let mut b1 = 100u64.to_be_bytes().to_vec();
        b1.extend_from_slice(&1u64.to_be_bytes());
        s.record_latency(1100, [b0.as_slice(), b1.as_slice()].into_iter());
        s.add(2);
        assert!(!s.is_done());
        s.add(1);
        assert!(s.is_done());
        let line = s.result_line("x", Instant::now(), false);
        assert!(
            line.starts_with("RESULT {\"client\":\"x\",\"count\":3"),
            "{line}"
        );
        assert!(line.contains("\"latency_samples\":1"), "{line}");
        assert!(line.contains("\"p50_ms\":1.0"), "{line}");
    }
}
