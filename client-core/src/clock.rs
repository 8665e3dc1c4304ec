//! The wall clock the client reads.

use std::time::SystemTime;

/// Milliseconds since the Unix epoch now (0 if the clock is before 1970):
/// born and start timestamps, subscription versions, consume start times.
pub fn now_ms() -> i64 {
    rmq_protocol::epoch_millis(SystemTime::now())
}
