//! [`ConsumeFrom`] and the rules for where a queue without a stored offset
//! starts ([`start_fallback`]).

use std::time::{SystemTime, UNIX_EPOCH};

use rmq_protocol::body::ConsumeFromWhere;

/// Where a consumer group that has no stored offset for a queue starts
/// (Java `ConsumeFromWhere` + `consumeTimestamp`). Only used when the
/// broker (clustering) or the local file (broadcasting) has no offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ConsumeFrom {
    /// Skip what is already stored: start at the queue's max offset (Java
    /// `CONSUME_FROM_LAST_OFFSET`, the default). Retry queues start at 0.
    /// Note the broker answers offset 0 for a brand-new group on a young
    /// queue whose first message is still in memory, so such a group may
    /// start at 0 anyway (broker behaviour, same for Java).
    #[default]
    LastOffset,
    /// Start at the queue's first offset (Java `CONSUME_FROM_FIRST_OFFSET`).
    FirstOffset,
    /// Start at the first message stored at or after this time (Java
    /// `CONSUME_FROM_TIMESTAMP` with `consumeTimestamp`); retry queues
    /// start at their max offset.
    Timestamp(SystemTime),
}

impl ConsumeFrom {
    /// The Java enum value sent in heartbeats.
    pub fn as_java(self) -> ConsumeFromWhere {
        match self {
            ConsumeFrom::LastOffset => ConsumeFromWhere::ConsumeFromLastOffset,
            ConsumeFrom::FirstOffset => ConsumeFromWhere::ConsumeFromFirstOffset,
            ConsumeFrom::Timestamp(_) => ConsumeFromWhere::ConsumeFromTimestamp,
        }
    }
}

/// What to ask the broker for a queue the offset store has no offset for
/// (see [`start_fallback`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFallback {
    /// Start at this offset.
    At(i64),
    /// Start at the queue's max offset (GET_MAX_OFFSET).
    MaxOffset,
    /// Start at the offset of this time (SEARCH_OFFSET_BY_TIMESTAMP, ms
    /// since the epoch).
    Search(i64),
}

/// The Java rules for a queue the offset store has no offset for
/// (`RebalancePushImpl` / `RebalanceLitePullImpl`
/// `computePullFromWhereWithException`): last offset → the max offset (0 for
/// a retry topic), first offset → 0, timestamp → search by time (the max
/// offset for a retry topic). Whether `mq` counts as a retry topic is the
/// caller's rule.
pub fn start_fallback(from: ConsumeFrom, is_retry_topic: bool) -> StartFallback {
    match from {
        ConsumeFrom::LastOffset if is_retry_topic => StartFallback::At(0),
        ConsumeFrom::LastOffset => StartFallback::MaxOffset,
        ConsumeFrom::FirstOffset => StartFallback::At(0),
        ConsumeFrom::Timestamp(_) if is_retry_topic => StartFallback::MaxOffset,
        ConsumeFrom::Timestamp(t) => StartFallback::Search(
            t.duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn java_rules() {
        use StartFallback::{At, MaxOffset, Search};
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let cases = [
            (ConsumeFrom::LastOffset, false, MaxOffset),
            (ConsumeFrom::LastOffset, true, At(0)),
            (ConsumeFrom::FirstOffset, false, At(0)),
            (ConsumeFrom::FirstOffset, true, At(0)),
            (ConsumeFrom::Timestamp(t), false, Search(1_700_000_000_123)),
            (ConsumeFrom::Timestamp(t), true, MaxOffset),
            (
                ConsumeFrom::Timestamp(UNIX_EPOCH - Duration::from_secs(1)),
                false,
                Search(0),
            ),
        ];
        for (from, retry, want) in cases {
            assert_eq!(start_fallback(from, retry), want, "{from:?} retry={retry}");
        }
        assert_eq!(ConsumeFrom::default(), ConsumeFrom::LastOffset);
        assert_eq!(
            ConsumeFrom::Timestamp(t).as_java(),
            ConsumeFromWhere::ConsumeFromTimestamp
        );
    }
}
