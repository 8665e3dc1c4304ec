//! Progress of long runs on stderr: an `indicatif` bar (rate and ETA) on a
//! terminal, a plain status line every second otherwise; and the latency
//! histogram behind the summaries.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often the plain (non-terminal) status line is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(1);

/// Progress of a run of `total` (if known) items.
#[derive(Debug)]
pub(crate) struct Progress {
    label: &'static str,
    total: Option<u64>,
    started: Instant,
    mode: Mode,
}

#[derive(Debug)]
enum Mode {
    Bar(ProgressBar),
    Plain { next: Instant },
    Off,
}

impl Progress {
    /// A bar when stderr is a terminal, plain lines otherwise, nothing when
    /// `quiet`.
    pub(crate) fn new(label: &'static str, total: Option<u64>, quiet: bool) -> Self {
        let started = Instant::now();
        let mode = if quiet {
            Mode::Off
        } else if std::io::stderr().is_terminal() {
            let bar = match total {
                Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr())
                    .with_style(bar_style(
                        "{spinner} {prefix} [{bar:30}] {human_pos}/{human_len} {rate} ETA {eta}",
                    )),
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                    .with_style(bar_style("{spinner} {prefix} {human_pos} {rate} {elapsed}")),
            };
            bar.set_prefix(label);
            bar.enable_steady_tick(Duration::from_millis(100));
            Mode::Bar(bar)
        } else {
            Mode::Plain {
                next: started + PLAIN_EVERY,
            }
        };
        Progress {
            label,
            total,
            started,
            mode,
        }
    }

    /// Reports `done` items so far.
    pub(crate) fn set(&mut self, done: u64) {
        match &mut self.mode {
            Mode::Bar(bar) => bar.set_position(done),
            Mode::Plain { next } => {
                let now = Instant::now();
                if now >= *next {
                    *next = now + PLAIN_EVERY;
                    let line = status_line(self.label, done, self.total, self.started.elapsed());
                    let _ = writeln!(std::io::stderr(), "{line}");
                }
            }
            Mode::Off => {}
        }
    }

    /// Runs `f` (which prints to stdout) with the bar hidden meanwhile.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.mode {
            Mode::Bar(bar) => bar.suspend(f),
            _ => f(),
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

fn bar_style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} msg/s", state.per_sec());
            },
        )
        .progress_chars("=> ")
}

/// `produce: 1200/10000 messages, 1180 msg/s`.
fn status_line(label: &str, done: u64, total: Option<u64>, elapsed: Duration) -> String {
    let rate = per_second(done, elapsed);
    match total {
        Some(t) => format!("{label}: {done}/{t} messages, {rate:.0} msg/s"),
        None => format!("{label}: {done} messages, {rate:.0} msg/s"),
    }
}

/// `count / elapsed` in items per second (0 for no time).
#[allow(clippy::cast_precision_loss)]
pub(crate) fn per_second(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

/// Latencies in microseconds, 1 µs to 10 minutes, 3 significant digits.
#[derive(Debug, Clone)]
pub(crate) struct Latency {
    hist: Histogram<u64>,
}

impl Latency {
    pub(crate) fn new() -> Self {
        // Constant bounds within hdrhistogram's limits: cannot fail.
        let hist =
            Histogram::new_with_bounds(1, 600_000_000, 3).expect("constant histogram bounds");
        Latency { hist }
    }

    pub(crate) fn record(&mut self, d: Duration) {
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1);
        self.hist.saturating_record(micros);
    }

    pub(crate) fn count(&self) -> u64 {
        self.hist.len()
    }

    /// A quantile in milliseconds.
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn quantile_ms(&self, q: f64) -> f64 {
        self.hist.value_at_quantile(q) as f64 / 1000.0
    }

    /// `p50 0.41 ms, p90 ..., p99 ..., p99.9 ..., max ...`.
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn summary(&self) -> String {
        if self.hist.is_empty() {
            return "no samples".to_owned();
        }
        format!(
            "p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
            self.quantile_ms(0.5),
            self.quantile_ms(0.9),
            self.quantile_ms(0.99),
            self.quantile_ms(0.999),
            self.hist.max() as f64 / 1000.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_summary() {
        let mut l = Latency::new();
        assert_eq!(l.summary(), "no samples");
        for ms in 1..=100 {
            l.record(Duration::from_millis(ms));
        }
        assert_eq!(l.count(), 100);
        let p50 = l.quantile_ms(0.5);
        assert!((49.0..=51.0).contains(&p50), "{p50}");
        assert!(l.summary().starts_with("p50 50.0"), "{}", l.summary());
    }

    #[test]
    fn plain_status() {
        assert_eq!(
            status_line("produce", 50, Some(100), Duration::from_secs(2)),
            "produce: 50/100 messages, 25 msg/s"
        );
        assert_eq!(
            status_line("consume", 7, None, Duration::ZERO),
            "consume: 7 messages, 0 msg/s"
        );
    }
}
