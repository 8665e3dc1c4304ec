//! Receive-side statistics shared by the drain and latency modes, and the
//! `RESULT {json}` line every client program prints (see bench/README.md).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde_json::json;
use tokio::sync::Notify;

/// [`Stats::add`] reads the clock once per this many messages (besides
/// the first and the completing one).
const TIME_EVERY: u64 = 1024;

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

/// Counts received messages, remembers the first and last receive instants,
/// optionally records latencies, and wakes the waiter once `expect` arrived.
#[derive(Debug)]
pub(crate) struct Stats {
    count: AtomicU64,
    expect: u64,
    latency_skip: Option<u64>,
    /// What the arrival times count from.
    base: Instant,
    /// Nanoseconds since `base` + 1 of the first arrival, and of the last
    /// one taken (0: none yet).
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    /// End-to-end latencies (receive time − send time in the body), µs.
    latencies_us: Mutex<LatencyHistogram>,
    /// Send-to-store delays (the broker's store timestamp − the born timestamp), µs.
    store_delays_us: Mutex<LatencyHistogram>,
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
            base: Instant::now(),
            first_ns: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
            latencies_us: Mutex::new(LatencyHistogram::new()),
            store_delays_us: Mutex::new(LatencyHistogram::new()),
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
                    lat.record(recv_us.saturating_sub(sent));
                }
            }
        }
    }

    /// Records the send-to-store delay of received messages: `(store, born, body)` with the
    /// broker's store timestamp and the producer's born timestamp (ms since the epoch); only
    /// bodies whose latency header's sequence is at least the skip count.
    pub(crate) fn record_store_delay<'a>(&self, msgs: impl Iterator<Item = (i64, i64, &'a [u8])>) {
        let Some(skip) = self.latency_skip else {
            return;
        };
        let mut h = self
            .store_delays_us
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (store, born, body) in msgs {
            if latency_header(body).is_some_and(|(_, seq)| seq >= skip) {
                let ms = u64::try_from(store.saturating_sub(born)).unwrap_or(0);
                h.record(ms.saturating_mul(1000));
            }
        }
    }

    /// Counts `n` received messages.
    ///
    /// One shared counter update per call, no lock: the clock is read for
    /// the first arrival, for the one that completes `expect` (the end of
    /// a drain) and every [`TIME_EVERY`] messages between (so that a run
    /// that times out still has a last time), not per call: the listener
    /// of a push consumer is called once per message, and this is the
    /// instrument, not the client under test.
    pub(crate) fn add(&self, n: u64) {
        let before = self.count.fetch_add(n, Ordering::AcqRel);
        let after = before.saturating_add(n);
        let completes = before < self.expect && after >= self.expect;
        if before == 0 {
            let _ = self.first_ns.compare_exchange(
                0,
                self.stamp(),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        if completes || before / TIME_EVERY != after / TIME_EVERY {
            self.last_ns.fetch_max(self.stamp(), Ordering::AcqRel);
        }
        if completes {
            self.done.notify_one();
        }
    }

    /// Now, in nanoseconds since `base`, + 1 (never 0).
    fn stamp(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1)
    }

    /// The instant of a stamp (`None` for 0: none yet).
    fn instant(&self, stamp: u64) -> Option<Instant> {
        let ns = stamp.checked_sub(1)?;
        self.base.checked_add(std::time::Duration::from_nanos(ns))
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
        let first = self.instant(self.first_ns.load(Ordering::Acquire));
        let last = self
            .instant(self.last_ns.load(Ordering::Acquire))
            .max(first);
        let elapsed = match (first, last) {
            (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
            _ => 0.0,
        };
        let startup = first.map_or(0.0, |f| f.duration_since(started).as_secs_f64());
        let lat = self
            .latencies_us
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let store = self
            .store_delays_us
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        json!({
            "client": client,
            "count": self.count(),
            "elapsed_s": elapsed,
            "startup_s": startup,
            "timeout": timed_out,
            "latency_samples": lat.len(),
            "latency_out_of_range": lat.out_of_range(),
            "p50_ms": lat.percentile_ms(0.50),
            "p99_ms": lat.percentile_ms(0.99),
            "p999_ms": lat.percentile_ms(0.999),
            "max_ms": lat.max_ms(),
            "store_delay_samples": store.len(),
            "store_delay_p50_ms": store.percentile_ms(0.50),
            "store_delay_p99_ms": store.percentile_ms(0.99),
            "store_delay_max_ms": store.max_ms(),
        })
    }

    /// Seconds from the first to the last counted message (0 before two arrived).
    pub(crate) fn elapsed_s(&self) -> f64 {
        let first = self.instant(self.first_ns.load(Ordering::Acquire));
        let last = self.instant(self.last_ns.load(Ordering::Acquire));
        match (first, last) {
            (Some(f), Some(l)) => l.saturating_duration_since(f).as_secs_f64(),
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

/// The highest latency a [`LatencyHistogram`] holds: an hour, in µs.
pub(crate) const LATENCY_MAX_US: u64 = 3_600_000_000;

/// Latencies in µs from 1 µs to an hour, 3 significant digits. A value above an hour is not
/// clamped into the histogram: it is counted apart ([`out_of_range`](Self::out_of_range)) and
/// the harness reports the run as failed.
#[derive(Debug, Clone)]
pub(crate) struct LatencyHistogram {
    hist: Histogram<u64>,
    out_of_range: u64,
}

impl LatencyHistogram {
    /// An empty histogram.
    pub(crate) fn new() -> Self {
        let hist = Histogram::new_with_bounds(1, LATENCY_MAX_US, 3).unwrap_or_else(|_| {
            unreachable!("1 µs .. 1 h at 3 significant digits are valid bounds")
        });
        LatencyHistogram {
            hist,
            out_of_range: 0,
        }
    }

    /// Records `us`; false (and counted in [`out_of_range`](Self::out_of_range)) when it is
    /// above an hour.
    pub(crate) fn record(&mut self, us: u64) -> bool {
        // The histogram holds a little more than asked (its last bucket is wider): the bound is
        // checked here so that it is exactly an hour.
        if us <= LATENCY_MAX_US && self.hist.record(us).is_ok() {
            true
        } else {
            self.out_of_range += 1;
            false
        }
    }

    /// Values recorded.
    pub(crate) fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Values refused by [`record`](Self::record) for being out of range.
    pub(crate) fn out_of_range(&self) -> u64 {
        self.out_of_range
    }

    /// The percentile `p` (0..=1) in ms (0 when empty).
    pub(crate) fn percentile_ms(&self, p: f64) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let ms = self.hist.value_at_quantile(p) as f64 / 1000.0;
        ms
    }

    /// The largest recorded value in ms (0 when empty).
    pub(crate) fn max_ms(&self) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let ms = self.hist.max() as f64 / 1000.0;
        ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let mut h = LatencyHistogram::new();
        for i in 1..=1000u64 {
            assert!(h.record(i * 1000));
        }
        // 3 significant digits: within 0.1 % of the exact nearest rank.
        let close = |got: f64, want: f64| (got - want).abs() <= want / 1000.0;
        assert!(
            close(h.percentile_ms(0.5), 500.0),
            "{}",
            h.percentile_ms(0.5)
        );
        assert!(close(h.percentile_ms(0.99), 990.0));
        assert!(close(h.percentile_ms(0.999), 999.0));
        assert_eq!(LatencyHistogram::new().percentile_ms(0.5), 0.0);
        let mut one = LatencyHistogram::new();
        assert!(one.record(7000));
        assert!(close(one.percentile_ms(0.999), 7.0));
    }

    /// A body sent `ago_us` before `recv_us`, with sequence `seq`.
    fn sent_before(recv_us: u64, ago_us: u64, seq: u64) -> Vec<u8> {
        let mut b = (recv_us - ago_us).to_be_bytes().to_vec();
        b.extend_from_slice(&seq.to_be_bytes());
        b
    }

    #[test]
    fn latencies_above_2048_us_are_read_back() {
        // Both sides of 2 048 µs (where a histogram of 3 significant digits without explicit
        // bounds ends) and a multi-second value.
        let ago = [500u64, 1_500, 2_047, 2_048, 2_049, 5_000, 3_000_000];
        let s = Stats::new(7, Some(0));
        let recv = 10_000_000_000u64;
        let bodies: Vec<Vec<u8>> = ago.iter().map(|&a| sent_before(recv, a, 1)).collect();
        s.record_latency(recv, bodies.iter().map(Vec::as_slice));
        let r = s.result("x", Instant::now(), false);
        let close = |got: &serde_json::Value, want: f64| {
            got.as_f64()
                .is_some_and(|g| (g - want).abs() <= want / 1000.0)
        };
        assert_eq!(r["latency_samples"], 7, "{r}");
        // Nearest rank: p50 is the 4th of 7 values, p99 and p99.9 the 7th.
        assert!(close(&r["p50_ms"], 2.048), "{r}");
        assert!(close(&r["p99_ms"], 3_000.0), "{r}");
        assert!(close(&r["p999_ms"], 3_000.0), "{r}");
    }

    #[test]
    fn out_of_range_is_counted_not_clamped() {
        let mut h = LatencyHistogram::new();
        assert!(h.record(5_000));
        assert!(h.record(LATENCY_MAX_US));
        assert!(!h.record(LATENCY_MAX_US + 1_000_000));
        assert_eq!(h.len(), 2);
        assert_eq!(h.out_of_range(), 1);
        assert!(
            (h.max_ms() - 3_600_000.0).abs() <= 3_600.0,
            "{}",
            h.max_ms()
        );
        assert!((h.percentile_ms(0.5) - 5.0).abs() <= 0.005);
    }

    #[test]
    fn store_delay_skips_the_warm_up() {
        let s = Stats::new(2, Some(1));
        let warm = sent_before(10_000, 1, 0);
        let measured = sent_before(10_000, 1, 1);
        s.record_store_delay(
            [
                (1_000_900, 1_000_000, warm.as_slice()),
                (1_000_012, 1_000_000, measured.as_slice()),
            ]
            .into_iter(),
        );
        let r = s.result("x", Instant::now(), false);
        assert_eq!(r["store_delay_samples"], 1, "{r}");
        let p50 = r["store_delay_p50_ms"].as_f64().unwrap_or(0.0);
        assert!((p50 - 12.0).abs() <= 0.012, "{r}");
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
