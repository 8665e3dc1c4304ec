//! Protobuf `Duration` / `Timestamp` conversions and the host name.

use std::time::Duration;

/// A protobuf `Duration`.
pub fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

/// A `Duration` from a protobuf one (a negative one is zero).
pub fn std_duration(d: &prost_types::Duration) -> Duration {
    let secs = u64::try_from(d.seconds).unwrap_or(0);
    let nanos = if d.seconds < 0 {
        0
    } else {
        u32::try_from(d.nanos).unwrap_or(0)
    };
    Duration::from_secs(secs).saturating_add(Duration::from_nanos(u64::from(nanos)))
}

/// A protobuf `Timestamp` from milliseconds since the epoch.
pub fn timestamp_ms(ms: i64) -> prost_types::Timestamp {
    let nanos = i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0);
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos,
    }
}

/// Milliseconds since the epoch of a protobuf `Timestamp`.
pub fn timestamp_to_ms(t: &prost_types::Timestamp) -> i64 {
    t.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(t.nanos / 1_000_000))
}

/// This host's name, as the Java gRPC client's `Utilities.hostName()`
/// (`InetAddress.getLocalHost().getHostName()`) gives it: what the client
/// puts in a message's born host and its user agent.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        for ms in [0, 1, 999, 1_700_000_000_123, -1] {
            assert_eq!(timestamp_to_ms(&timestamp_ms(ms)), ms, "{ms}");
        }
        assert_eq!(duration(Duration::from_millis(1500)).nanos, 500_000_000);
        for d in [
            Duration::ZERO,
            Duration::from_millis(1500),
            Duration::from_secs(7200),
        ] {
            assert_eq!(std_duration(&duration(d)), d);
        }
        let negative = prost_types::Duration {
            seconds: -1,
            nanos: -5,
        };
        assert_eq!(std_duration(&negative), Duration::ZERO);
    }
}
