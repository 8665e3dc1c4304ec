//! What a client program reads about itself from `/proc/self` (Linux): resident memory, thread
//! count, and CPU time per thread (to tell the in-process fake broker's threads from the
//! client's in `fake-drain`). Elsewhere every figure reads as absent.

use std::fs;

/// A `kB` line of `/proc/self/status` (`VmRSS`, `VmHWM`, ...) in bytes.
fn status_kib(key: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status_value(&status, key).map(|kib| kib.saturating_mul(1024))
}

/// The number after `key:` in a `/proc/<pid>/status` text.
fn status_value(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The process's resident set now (`VmRSS`), bytes.
pub(crate) fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS")
}

/// The process's thread count now (`Threads`).
pub(crate) fn threads() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status_value(&status, "Threads")
}

/// One thread's name (`comm`, at most 15 bytes) and CPU seconds so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ThreadCpu {
    pub(crate) name: String,
    pub(crate) cpu_s: f64,
}

/// CPU seconds of every live thread of the process: `schedstat`'s run time (ns) where the
/// kernel has it, else `stat`'s utime + stime (clock ticks of 10 ms). A thread that has
/// exited is not listed: keep the threads to be measured alive until the last reading.
pub(crate) fn thread_cpu() -> Vec<ThreadCpu> {
    let Ok(dir) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let path = entry.ok()?.path();
        let name = fs::read_to_string(path.join("comm"))
            .ok()?
            .trim()
            .to_owned();
        let cpu_s = fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|s| schedstat_s(&s))
            .or_else(|| stat_cpu_s(&fs::read_to_string(path.join("stat")).ok()?))?;
        Some(ThreadCpu { name, cpu_s })
    })
    .collect()
}

/// The first field of a `schedstat` line (ns on the CPU), in seconds.
fn schedstat_s(line: &str) -> Option<f64> {
    let ns: u64 = line.split_whitespace().next()?.parse().ok()?;
    #[allow(clippy::cast_precision_loss)]
    let s = ns as f64 / 1e9;
    Some(s)
}

/// utime + stime of a `/proc/<pid>/task/<tid>/stat` line, in seconds (USER_HZ = 100).
fn stat_cpu_s(line: &str) -> Option<f64> {
    // The name is in parentheses and may hold spaces: count fields after the last ')'.
    let rest = &line[line.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3 of the line, utime 14 and stime 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    #[allow(clippy::cast_precision_loss)]
    let s = (utime + stime) as f64 / 100.0;
    Some(s)
}

/// CPU seconds of the threads whose name starts with `prefix`, and of all the others.
pub(crate) fn split_cpu(threads: &[ThreadCpu], prefix: &str) -> (f64, f64) {
    threads.iter().fold((0.0, 0.0), |(with, without), t| {
        if t.name.starts_with(prefix) {
            (with + t.cpu_s, without)
        } else {
            (with, without + t.cpu_s)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_status_and_stat_lines() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t7\n";
        assert_eq!(status_value(status, "VmRSS"), Some(1024));
        assert_eq!(status_value(status, "Threads"), Some(7));
        assert_eq!(status_value(status, "Vm"), None);
        assert_eq!(schedstat_s("1500000000 20 3\n"), Some(1.5));
        let stat = "12 (a b) S 1 12 12 0 -1 4194560 10 0 0 0 250 50 0 0 20 0 1 0 1 1 1";
        assert_eq!(stat_cpu_s(stat), Some(3.0));
    }

    #[test]
    fn splits_by_thread_name() {
        let t = |name: &str, cpu_s| ThreadCpu {
            name: name.into(),
            cpu_s,
        };
        let all = [
            t("bench-fake", 1.0),
            t("bench-client", 2.0),
            t("rmq-bench", 0.5),
        ];
        assert_eq!(split_cpu(&all, "bench-fake"), (1.0, 2.5));
    }

    #[test]
    fn reads_this_process() {
        if cfg!(target_os = "linux") {
            assert!(rss_bytes().is_some_and(|b| b > 0));
            assert!(threads().is_some_and(|n| n >= 1));
            assert!(!thread_cpu().is_empty());
        }
    }
}
