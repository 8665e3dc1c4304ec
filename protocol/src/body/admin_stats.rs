//! Admin answers: [`TopicList`] (GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
//! [`ConsumeStats`] (GET_CONSUME_STATS), [`TopicStatsTable`]
//! (GET_TOPIC_STATS_INFO) and [`KvTable`] (GET_BROKER_RUNTIME_INFO).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::queue::MessageQueue;

/// Declares an inherent `decode` (these bodies are only ever read).
macro_rules! decode_only {
    ($ty:ident, $what:literal) => {
        impl $ty {
            /// Decodes the body with the lenient reader
            /// ([`crate::body::lenient_json`]).
            ///
            /// # Errors
            ///
            /// [`crate::Error::InvalidBody`] when the bytes are not JSON (even
            /// fastjson's) or do not have this body's shape.
            pub fn decode(bytes: &[u8]) -> crate::Result<Self> {
                super::lenient_json::decode_object(bytes, $what)
            }
        }
    };
}

/// The topics a name server knows (Java `TopicList`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicList {
    /// Topic names, in the order the server wrote them.
    pub topic_list: Vec<String>,
    /// Set only by some broker-side variants of the call.
    pub broker_addr: Option<String>,
}

decode_only!(TopicList, "TopicList");

/// A consumer group's progress on one queue (Java `OffsetWrapper`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OffsetWrapper {
    /// The queue's max offset (the next offset to be written).
    #[serde(deserialize_with = "super::de::lenient_i64")]
    pub broker_offset: i64,
    /// The group's committed offset (0 when none is stored).
    #[serde(deserialize_with = "super::de::lenient_i64")]
    pub consumer_offset: i64,
    /// 5.x: the offset the group pulled up to (0 on 4.9.x).
    #[serde(deserialize_with = "super::de::lenient_i64")]
    pub pull_offset: i64,
    /// Store time of the last consumed message, ms (0 when unknown).
    #[serde(deserialize_with = "super::de::lenient_i64")]
    pub last_timestamp: i64,
}

impl OffsetWrapper {
    /// Messages stored and not yet consumed: broker offset − committed
    /// offset, never negative.
    pub fn lag(&self) -> i64 {
        self.broker_offset
            .saturating_sub(self.consumer_offset)
            .max(0)
    }
}

/// A consumer group's progress on the queues of one broker (Java
/// `ConsumeStats`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumeStats {
    /// Progress per queue (topics the group has offsets for, incl. its
    /// `%RETRY%` topic).
    #[serde(deserialize_with = "super::de::mq_keyed_map")]
    pub offset_table: BTreeMap<MessageQueue, OffsetWrapper>,
    /// The group's consume rate on that broker, messages per second.
    pub consume_tps: f64,
}

decode_only!(ConsumeStats, "ConsumeStats");

/// One queue's offset range (Java `TopicOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicOffset {
    /// The smallest offset still stored.
    #[serde(deserialize_with = "super::de::lenient_i64")]
    pub min_offset: i64,
    /// The next offset to be written.
    #[serde(deserialize_with = "super::de::lenient_i64")]
    pub max_offset: i64,
    /// Store time of the last message, ms (0 for an empty queue).
    #[serde(deserialize_with = "super::de::lenient_i64")]
    pub last_update_timestamp: i64,
}

/// A topic's queues on one broker (Java `TopicStatsTable`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicStatsTable {
    /// Offset range per queue.
    #[serde(deserialize_with = "super::de::mq_keyed_map")]
    pub offset_table: BTreeMap<MessageQueue, TopicOffset>,
    /// 5.x: the topic's put rate on that broker, messages per second.
    pub topic_put_tps: f64,
}

decode_only!(TopicStatsTable, "TopicStatsTable");

/// A string table (Java `KVTable`), e.g. a broker's runtime info.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KvTable {
    /// The entries.
    pub table: BTreeMap<String, String>,
}

decode_only!(KvTable, "KVTable");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_stats_with_fastjson_object_keys() {
        let body = br#"{"consumeTps":1.5,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":1700000000000,"pullOffset":"6"},{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":3,"consumerOffset":5}}}"#;
        let stats = ConsumeStats::decode(body).unwrap();
        assert_eq!(stats.consume_tps, 1.5);
        let rows: Vec<(i32, i64)> = stats
            .offset_table
            .iter()
            .map(|(mq, w)| (mq.queue_id, w.lag()))
            .collect();
        assert_eq!(rows, [(0, 0), (1, 6)]);
        let q1 = &stats.offset_table[&MessageQueue::new("T", "broker-a", 1)];
        assert_eq!(q1.pull_offset, 6);
        assert_eq!(q1.last_timestamp, 1_700_000_000_000);
        assert!(ConsumeStats::decode(br#"{"offsetTable":{"notaqueue":{}}}"#).is_err());
        assert!(ConsumeStats::decode(b"{}").unwrap().offset_table.is_empty());
    }

    #[test]
    fn topic_stats_and_lists() {
        let body = br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":7,"maxOffset":9,"minOffset":2}},"topicPutTps":0.0}"#;
        let stats = TopicStatsTable::decode(body).unwrap();
        let (mq, off) = stats.offset_table.iter().next().unwrap();
        assert_eq!(mq, &MessageQueue::new("T", "b", 0));
        assert_eq!(
            (off.min_offset, off.max_offset, off.last_update_timestamp),
            (2, 9, 7)
        );
        let list = TopicList::decode(br#"{"topicList":["a","b"]}"#).unwrap();
        assert_eq!(list.topic_list, ["a", "b"]);
        let kv = KvTable::decode(br#"{"table":{"brokerVersionDesc":"V5_5_0"}}"#).unwrap();
        assert_eq!(kv.table["brokerVersionDesc"], "V5_5_0");
    }
}
