//! Times on the wire: milliseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` in milliseconds since the Unix epoch, as the wire carries times
/// (0 before 1970, saturated at `i64::MAX`). A conversion only: this crate
/// never reads the clock, the caller passes the time in.
pub fn epoch_millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn millis() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(epoch_millis(t), 1_700_000_000_123);
        assert_eq!(epoch_millis(UNIX_EPOCH - Duration::from_secs(1)), 0);
    }
}
