//! Pop consumption (5.x): a popped message's checkpoint handle, the `POP_CK`
//! "extra info", and the offset lists of a POP_MESSAGE answer.
//!
//! A popped message is identified to ACK_MESSAGE and
//! CHANGE_MESSAGE_INVISIBLETIME by its extra info (Java `ExtraInfoUtil`):
//! eight space-separated fields
//! `ckQueueOffset popTime invisibleTime reviveQid retryFlag brokerName queueId msgQueueOffset`.
//! `retryFlag` says which topic the message was popped from: 0 the topic
//! itself, 1 the group's retry topic `%RETRY%<group>_<topic>`, 2 the v2
//! retry topic `%RETRY%<group>+<topic>`.
//!
//! ```
//! use rmq_protocol::pop::{ExtraInfo, RetryFlag};
//!
//! let ck = ExtraInfo::parse("5 1700000000000 30000 2 1 broker-a 0 7")?;
//! assert_eq!(ck.retry, RetryFlag::Retry);
//! assert_eq!(ck.real_topic("orders", "billing"), "%RETRY%billing_orders");
//! assert_eq!(ck.to_string(), "5 1700000000000 30000 2 1 broker-a 0 7");
//! # Ok::<(), rmq_protocol::Error>(())
//! ```

use std::collections::HashMap;
use std::fmt;

use crate::error::{Error, Result};
use crate::names::RETRY_TOPIC_PREFIX as RETRY_GROUP_TOPIC_PREFIX;

/// The message property holding a popped message's extra info (Java
/// `MessageConst.PROPERTY_POP_CK`).
pub const POP_CK: &str = "POP_CK";

/// Which topic a message was popped from (the extra info's `retryFlag`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RetryFlag {
    /// The topic itself (`0`).
    #[default]
    Normal,
    /// The group's retry topic `%RETRY%<group>_<topic>` (`1`).
    Retry,
    /// The v2 retry topic `%RETRY%<group>+<topic>` (`2`).
    RetryV2,
}

impl RetryFlag {
    /// The wire text: `"0"`, `"1"` or `"2"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryFlag::Normal => "0",
            RetryFlag::Retry => "1",
            RetryFlag::RetryV2 => "2",
        }
    }

    /// Parses the wire text.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidField`] for anything but `0`, `1`, `2`.
    pub fn parse(text: &str) -> Result<RetryFlag> {
        match text {
            "0" => Ok(RetryFlag::Normal),
            "1" => Ok(RetryFlag::Retry),
            "2" => Ok(RetryFlag::RetryV2),
            _ => Err(Error::InvalidField {
                field: "retryFlag",
                value: text.to_owned(),
            }),
        }
    }

    /// The flag of the topic a message was popped from, as the broker names
    /// it (Java `ExtraInfoUtil.buildExtraInfo`): a `%RETRY%` topic with a
    /// `+` is v2, another `%RETRY%` topic v1.
    pub fn of_topic(topic: &str) -> RetryFlag {
        match topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) {
            Some(rest) if rest.contains('+') => RetryFlag::RetryV2,
            Some(_) => RetryFlag::Retry,
            None => RetryFlag::Normal,
        }
    }

    /// The topic to ack or change in for a message of `topic` popped by
    /// `group` (Java `ExtraInfoUtil.getRealTopic`).
    pub fn real_topic(self, topic: &str, group: &str) -> String {
        match self {
            RetryFlag::Normal => topic.to_owned(),
            RetryFlag::Retry => pop_retry_topic(topic, group),
            RetryFlag::RetryV2 => format!("{RETRY_GROUP_TOPIC_PREFIX}{group}+{topic}"),
        }
    }
}

/// The retry topic of `topic` for a popping `group` (Java
/// `KeyBuilder.buildPopRetryTopicV1`): `%RETRY%<group>_<topic>`.
pub fn pop_retry_topic(topic: &str, group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}")
}

/// The topic a pop retry topic of `group` retries (`None` when `topic` is
/// not one of `group`'s pop retry topics).
pub fn pop_retry_origin<'a>(topic: &'a str, group: &str) -> Option<&'a str> {
    let rest = topic
        .strip_prefix(RETRY_GROUP_TOPIC_PREFIX)?
        .strip_prefix(group)?;
    rest.strip_prefix('_').or_else(|| rest.strip_prefix('+'))
}

/// A popped message's checkpoint handle (the `POP_CK` extra info).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExtraInfo {
    /// The first offset of the popped batch in the message's queue (the
    /// checkpoint's start offset).
    pub ck_queue_offset: i64,
    /// When the broker popped (or last re-hid) the message, ms since the epoch.
    pub pop_time: i64,
    /// The invisible time (ms) counted from `pop_time`.
    pub invisible_time: i64,
    /// The revive queue holding the checkpoint.
    pub revive_qid: i32,
    /// Which topic the message was popped from.
    pub retry: RetryFlag,
    /// The broker that popped it.
    pub broker_name: String,
    /// The queue id (of the topic named by `retry`).
    pub queue_id: i32,
    /// The message's own queue offset.
    pub queue_offset: i64,
}

fn field<T: std::str::FromStr>(
    parts: &[&str],
    index: usize,
    name: &'static str,
    text: &str,
) -> Result<T> {
    parts
        .get(index)
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| Error::InvalidField {
            field: name,
            value: text.to_owned(),
        })
}

impl ExtraInfo {
    /// Parses the eight-field extra info.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidField`] (field `POP_CK`) when a field is missing or
    /// does not parse.
    pub fn parse(text: &str) -> Result<ExtraInfo> {
        let parts: Vec<&str> = text.split(' ').collect();
        if parts.len() < 8 {
            return Err(Error::InvalidField {
                field: POP_CK,
                value: text.to_owned(),
            });
        }
        let retry = parts.get(4).copied().unwrap_or_default();
        Ok(ExtraInfo {
            ck_queue_offset: field(&parts, 0, POP_CK, text)?,
            pop_time: field(&parts, 1, POP_CK, text)?,
            invisible_time: field(&parts, 2, POP_CK, text)?,
            revive_qid: field(&parts, 3, POP_CK, text)?,
            retry: RetryFlag::parse(retry)?,
            broker_name: parts.get(5).copied().unwrap_or_default().to_owned(),
            queue_id: field(&parts, 6, POP_CK, text)?,
            queue_offset: field(&parts, 7, POP_CK, text)?,
        })
    }

    /// The topic to ack or change in, for a message of `topic` (the
    /// original topic) popped by `group`.
    pub fn real_topic(&self, topic: &str, group: &str) -> String {
        self.retry.real_topic(topic, group)
    }

    /// When the message becomes visible again, ms since the epoch.
    pub fn visible_at_ms(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }
}

impl fmt::Display for ExtraInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {} {}",
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry.as_str(),
            self.broker_name,
            self.queue_id,
            self.queue_offset
        )
    }
}

/// The key of one queue in a POP_MESSAGE answer's offset lists: which topic
/// (normal or retry) and the queue id.
pub type PopQueueKey = (RetryFlag, i32);

fn entries(text: &str) -> impl Iterator<Item = &str> {
    text.split(';').map(str::trim).filter(|e| !e.is_empty())
}

fn key_of(parts: &[&str], entry: &str, name: &'static str) -> Result<PopQueueKey> {
    let flag = RetryFlag::parse(parts.first().copied().unwrap_or_default()).map_err(|_| {
        Error::InvalidField {
            field: name,
            value: entry.to_owned(),
        }
    })?;
    Ok((flag, field(parts, 1, name, entry)?))
}

/// Parses `startOffsetInfo` (`retryFlag queueId startOffset` entries,
/// `;`-separated; Java `ExtraInfoUtil.parseStartOffsetInfo`).
///
/// # Errors
///
/// [`Error::InvalidField`] for a malformed entry.
pub fn parse_start_offset_info(text: &str) -> Result<HashMap<PopQueueKey, i64>> {
    const NAME: &str = "startOffsetInfo";
    entries(text)
        .map(|entry| {
            let parts: Vec<&str> = entry.split(' ').collect();
            Ok((key_of(&parts, entry, NAME)?, field(&parts, 2, NAME, entry)?))
        })
        .collect()
}

/// Parses `msgOffsetInfo` (`retryFlag queueId offset,offset,...` entries,
/// `;`-separated; Java `ExtraInfoUtil.parseMsgOffsetInfo`).
///
/// # Errors
///
/// [`Error::InvalidField`] for a malformed entry.
pub fn parse_msg_offset_info(text: &str) -> Result<HashMap<PopQueueKey, Vec<i64>>> {
    const NAME: &str = "msgOffsetInfo";
    entries(text)
        .map(|entry| {
            let parts: Vec<&str> = entry.split(' ').collect();
            let offsets = parts
                .get(2)
                .copied()
                .unwrap_or_default()
                .split(',')
                .filter(|o| !o.is_empty())
                .map(|o| {
                    o.trim().parse().map_err(|_| Error::InvalidField {
                        field: NAME,
                        value: entry.to_owned(),
                    })
                })
                .collect::<Result<Vec<i64>>>()?;
            Ok((key_of(&parts, entry, NAME)?, offsets))
        })
        .collect()
}

/// The key of one `orderCountInfo` entry: a whole queue, or one message
/// of it (`qo<queueId>%<queueOffset>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderCountKey {
    /// Every message of the queue popped in the batch.
    Queue(RetryFlag, i32),
    /// The message at this queue offset.
    Message(RetryFlag, i32, i64),
}

/// How often the messages of an orderly pop were delivered before (the
/// broker's `orderCountInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrderCounts(HashMap<OrderCountKey, i32>);

impl OrderCounts {
    /// The earlier deliveries of the message at `queue_offset` of
    /// `queue_id`: its own entry, else its queue's, else 0 (Java
    /// `MQClientAPIImpl.processPopResponse`).
    pub fn of(&self, retry: RetryFlag, queue_id: i32, queue_offset: i64) -> i32 {
        self.0
            .get(&OrderCountKey::Message(retry, queue_id, queue_offset))
            .or_else(|| self.0.get(&OrderCountKey::Queue(retry, queue_id)))
            .copied()
            .unwrap_or(0)
    }

    /// Whether no entry was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Parses `orderCountInfo` (`retryFlag queueId count` or
/// `retryFlag qo<queueId>%<queueOffset> count` entries, `;`-separated; Java
/// `ExtraInfoUtil.parseOrderCountInfo`), the answer of an orderly pop.
///
/// ```
/// use rmq_protocol::pop::{RetryFlag, parse_order_count_info};
///
/// let counts = parse_order_count_info("0 1 2;0 qo1%40 3").unwrap();
/// assert_eq!(counts.of(RetryFlag::Normal, 1, 40), 3);
/// assert_eq!(counts.of(RetryFlag::Normal, 1, 41), 2);
/// assert_eq!(counts.of(RetryFlag::Normal, 2, 40), 0);
/// ```
///
/// # Errors
///
/// [`Error::InvalidField`] for a malformed entry.
pub fn parse_order_count_info(text: &str) -> Result<OrderCounts> {
    const NAME: &str = "orderCountInfo";
    let bad = |entry: &str| Error::InvalidField {
        field: NAME,
        value: entry.to_owned(),
    };
    entries(text)
        .map(|entry| {
            let parts: Vec<&str> = entry.split(' ').collect();
            if parts.len() != 3 {
                return Err(bad(entry));
            }
            let flag = RetryFlag::parse(parts.first().copied().unwrap_or_default())
                .map_err(|_| bad(entry))?;
            let place = parts.get(1).copied().unwrap_or_default();
            let key = match place.strip_prefix("qo") {
                Some(rest) => {
                    let (queue, offset) = rest.split_once('%').ok_or_else(|| bad(entry))?;
                    OrderCountKey::Message(
                        flag,
                        queue.parse().map_err(|_| bad(entry))?,
                        offset.parse().map_err(|_| bad(entry))?,
                    )
                }
                None => OrderCountKey::Queue(flag, place.parse().map_err(|_| bad(entry))?),
            };
            Ok((key, field(&parts, 2, NAME, entry)?))
        })
        .collect::<Result<HashMap<_, _>>>()
        .map(OrderCounts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_info_round_trip_and_errors() {
        let text = "12 1700000000000 30000 3 0 broker-a 2 14";
        let ck = ExtraInfo::parse(text).unwrap();
        assert_eq!(ck.ck_queue_offset, 12);
        assert_eq!(ck.pop_time, 1_700_000_000_000);
        assert_eq!(ck.invisible_time, 30_000);
        assert_eq!(ck.revive_qid, 3);
        assert_eq!(ck.retry, RetryFlag::Normal);
        assert_eq!(ck.broker_name, "broker-a");
        assert_eq!(ck.queue_id, 2);
        assert_eq!(ck.queue_offset, 14);
        assert_eq!(ck.visible_at_ms(), 1_700_000_030_000);
        assert_eq!(ck.to_string(), text);
        for bad in [
            "",
            "1 2 3",
            "x 1 2 3 0 b 0 1",
            "1 2 3 4 7 b 0 1",
            "1 2 3 4 0 b q 1",
        ] {
            assert!(ExtraInfo::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn retry_flags_and_topics() {
        assert_eq!(RetryFlag::of_topic("T"), RetryFlag::Normal);
        assert_eq!(RetryFlag::of_topic("%RETRY%G_T"), RetryFlag::Retry);
        assert_eq!(RetryFlag::of_topic("%RETRY%G+T"), RetryFlag::RetryV2);
        assert_eq!(RetryFlag::Normal.real_topic("T", "G"), "T");
        assert_eq!(RetryFlag::Retry.real_topic("T", "G"), "%RETRY%G_T");
        assert_eq!(RetryFlag::RetryV2.real_topic("T", "G"), "%RETRY%G+T");
        assert_eq!(pop_retry_origin("%RETRY%G_T_x", "G"), Some("T_x"));
        assert_eq!(pop_retry_origin("%RETRY%G+T", "G"), Some("T"));
        assert_eq!(pop_retry_origin("%RETRY%G", "G"), None);
        assert_eq!(pop_retry_origin("T", "G"), None);
    }

    #[test]
    fn offset_infos() {
        let start = parse_start_offset_info("0 1 5;1 0 2;").unwrap();
        assert_eq!(start[&(RetryFlag::Normal, 1)], 5);
        assert_eq!(start[&(RetryFlag::Retry, 0)], 2);
        let msgs = parse_msg_offset_info("0 1 5,6,7;1 0 2").unwrap();
        assert_eq!(msgs[&(RetryFlag::Normal, 1)], [5, 6, 7]);
        assert_eq!(msgs[&(RetryFlag::Retry, 0)], [2]);
        assert!(parse_start_offset_info("").unwrap().is_empty());
        assert!(parse_start_offset_info("0 x 5").is_err());
        assert!(parse_msg_offset_info("0 1 5,y").is_err());
        assert!(parse_msg_offset_info("9 1 5").is_err());
    }

    #[test]
    fn order_count_info_entries_and_errors() {
        let counts = parse_order_count_info("0 3 1;0 qo3%17 4;1 0 2").unwrap();
        assert_eq!(counts.of(RetryFlag::Normal, 3, 17), 4);
        assert_eq!(counts.of(RetryFlag::Normal, 3, 18), 1);
        assert_eq!(counts.of(RetryFlag::Retry, 0, 5), 2);
        assert_eq!(counts.of(RetryFlag::Normal, 0, 5), 0);
        assert!(parse_order_count_info("").unwrap().is_empty());
        for bad in [
            "0 1",
            "0 x 1",
            "0 qo1 2",
            "0 qo1%y 2",
            "9 1 1",
            "0 1 z",
            "0 1 2 3",
        ] {
            assert!(parse_order_count_info(bad).is_err(), "{bad:?}");
        }
    }
}
