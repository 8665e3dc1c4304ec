//! Positions and times on the command line: `first`, `last`, or a time
//! (`2024-05-01T12:00:00Z`, `10m` = ten minutes ago, epoch milliseconds).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where to start reading, or where to move a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Position {
    /// Each queue's first stored message.
    First,
    /// After each queue's last message.
    Last,
    /// The first message stored at or after this time.
    Time(SystemTime),
}

/// Help text for a [`Position`] argument.
pub(crate) const POSITION_HELP: &str = "`first`, `last`, or a time: RFC 3339 (`2024-05-01T12:00:00Z`), \
     a duration ago (`90s`, `10m`, `2h`), or epoch milliseconds";

impl Position {
    /// Parses `first`, `last` or a time (see [`parse_time`]).
    pub(crate) fn parse(text: &str) -> Result<Position, String> {
        match text.trim() {
            "first" | "earliest" | "beginning" => Ok(Position::First),
            "last" | "latest" | "end" => Ok(Position::Last),
            other => parse_time(other).map(Position::Time),
        }
    }

    /// The position as the consumers' start setting.
    pub(crate) fn consume_from(self) -> rmq::ConsumeFrom {
        match self {
            Position::First => rmq::ConsumeFrom::FirstOffset,
            Position::Last => rmq::ConsumeFrom::LastOffset,
            Position::Time(t) => rmq::ConsumeFrom::Timestamp(t),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::First => f.write_str("first"),
            Position::Last => f.write_str("last"),
            Position::Time(t) => write!(f, "{}", humantime::format_rfc3339_millis(*t)),
        }
    }
}

/// Parses a time: RFC 3339 in UTC (`2024-05-01T12:00:00Z`, the `T` and `Z`
/// optional), a duration meaning that long ago (`10m`, `-10m`, `1h 30m`),
/// or epoch milliseconds (`1714560000000`).
pub(crate) fn parse_time(text: &str) -> Result<SystemTime, String> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(UNIX_EPOCH + Duration::from_millis(ms));
    }
    if let Ok(t) = humantime::parse_rfc3339_weak(text) {
        return Ok(t);
    }
    let ago = text.strip_prefix('-').unwrap_or(text);
    if let Ok(d) = humantime::parse_duration(ago) {
        return SystemTime::now()
            .checked_sub(d)
            .ok_or_else(|| format!("{text:?} is before the epoch"));
    }
    Err(format!(
        "{text:?} is not a position: expected {POSITION_HELP}"
    ))
}

/// Milliseconds since the epoch (0 before it, saturating far after).
pub(crate) fn epoch_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// An epoch-milliseconds timestamp as RFC 3339 UTC; `-` for 0 or less.
pub(crate) fn format_ms(ms: i64) -> String {
    match u64::try_from(ms) {
        Ok(ms) if ms > 0 => {
            humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
        }
        _ => "-".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions() {
        assert_eq!(Position::parse("first"), Ok(Position::First));
        assert_eq!(Position::parse("last"), Ok(Position::Last));
        assert_eq!(
            Position::parse("1714560000000"),
            Ok(Position::Time(
                UNIX_EPOCH + Duration::from_millis(1_714_560_000_000)
            ))
        );
        let t = Position::parse("2024-05-01T10:40:00Z").unwrap();
        assert_eq!(t.to_string(), "2024-05-01T10:40:00.000Z");
        let Position::Time(ago) = Position::parse("10m").unwrap() else {
            panic!("not a time")
        };
        let age = SystemTime::now().duration_since(ago).unwrap();
        assert!(age >= Duration::from_secs(600) && age < Duration::from_secs(660));
        assert!(Position::parse("-10m").is_ok());
        let bad = Position::parse("yesterday").unwrap_err();
        assert!(bad.contains("RFC 3339"), "{bad}");
    }

    #[test]
    fn formatting() {
        assert_eq!(format_ms(0), "-");
        assert_eq!(format_ms(1_714_560_000_123), "2024-05-01T10:40:00.123Z");
        assert_eq!(epoch_ms(UNIX_EPOCH + Duration::from_millis(42)), 42);
    }
}
