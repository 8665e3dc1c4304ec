//! The in-memory message store of one broker: a commit log (every stored
//! record, by physical offset) and a consume queue per topic queue (the
//! records of that queue, by queue offset).
//!
//! Each message is encoded once, when stored, exactly as the real broker's
//! commit log holds it ([`encode_stored_record`]); a pull answers with those
//! bytes. Physical offsets advance by the record sizes, as in a real commit
//! log, so offset message ids look real.
//!
//! Reading follows Java `DefaultMessageStore.getMessage`: the same statuses,
//! next offsets and batch limits (32 messages, 256 KiB, up to 800 consume
//! queue entries examined when the filter skips messages).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use rmq_protocol::body::java_string_hash;
use rmq_protocol::header::BoundaryType;
use rmq_protocol::message::{
    MessageVersion, StoredRecord, body_crc, encode_properties, encode_stored_record, offset_msg_id,
    property,
};

use super::filter::MessageFilter;
use crate::config::BrokerFlavor;

/// Messages returned by one pull at most (Java `maxTransferCountOnMessageInMemory`).
const MAX_TRANSFER_COUNT: usize = 32;
/// Bytes returned by one pull at most (Java `maxTransferBytesOnMessageInMemory`).
const MAX_TRANSFER_BYTES: usize = 256 * 1024;
/// Consume-queue entries a pull examines at most when the filter skips
/// messages (Java `maxFilterMessageSize` 16000 bytes / 20-byte units).
const MAX_FILTER_SCAN: i64 = 800;

/// The consume-queue tags code of a message: the Java hash code of its
/// TAGS property, 0 without tags.
fn tags_code(properties: &HashMap<String, String>) -> i64 {
    properties
        .get(property::TAGS)
        .filter(|t| !t.is_empty())
        .map_or(0, |t| i64::from(java_string_hash(t)))
}

/// What a message carries besides its topic, queue, body and properties
/// (the commit log's per-record fields that are not offsets or the store
/// time).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MessageMeta {
    pub(crate) sys_flag: i32,
    pub(crate) flag: i32,
    pub(crate) born_timestamp: i64,
    pub(crate) born_host: SocketAddr,
    pub(crate) store_host: SocketAddr,
    pub(crate) reconsume_times: i32,
    pub(crate) prepared_transaction_offset: i64,
}

/// One stored message: its fields as stored, and its encoded record.
#[derive(Debug, Clone)]
pub(crate) struct StoredMsg {
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) queue_offset: i64,
    pub(crate) commit_log_offset: i64,
    pub(crate) meta: MessageMeta,
    pub(crate) store_timestamp: i64,
    /// The body as stored (compressed when the sysFlag says so).
    pub(crate) body: Bytes,
    pub(crate) properties: HashMap<String, String>,
    /// What the consume queue keeps for filtering: the tag's hash code
    /// (or, in the schedule topic, the delivery time).
    pub(crate) tags_code: i64,
    /// The encoded record (what a pull returns).
    pub(crate) record: Bytes,
}

impl StoredMsg {
    pub(crate) fn offset_msg_id(&self) -> String {
        offset_msg_id(self.meta.store_host, self.commit_log_offset)
    }

    pub(crate) fn store_size(&self) -> usize {
        self.record.len()
    }
}

/// A message to store (offsets and times are the store's).
#[derive(Debug, Clone)]
pub(crate) struct NewMessage {
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) meta: MessageMeta,
    pub(crate) body: Bytes,
    pub(crate) properties: HashMap<String, String>,
    pub(crate) tags_code: i64,
    /// The properties string to store, when it is not simply the encoded
    /// `properties` (4.9.x batches: the message's string, then the batch's).
    pub(crate) properties_text: Option<String>,
}

impl NewMessage {
    /// A message for `topic` / `queue_id` with the tags code its
    /// `properties` give, its properties string encoded from them.
    pub(crate) fn new(
        topic: String,
        queue_id: i32,
        meta: MessageMeta,
        body: Bytes,
        properties: HashMap<String, String>,
    ) -> NewMessage {
        NewMessage {
            topic,
            queue_id,
            meta,
            body,
            tags_code: tags_code(&properties),
            properties,
            properties_text: None,
        }
    }

    /// `stored` to be stored again in `topic` / `queue_id` with
    /// `properties` (and the tags code they give): a delayed message
    /// delivered, a message sent back for retry.
    pub(crate) fn again(
        stored: &StoredMsg,
        topic: String,
        queue_id: i32,
        properties: HashMap<String, String>,
    ) -> NewMessage {
        NewMessage::new(
            topic,
            queue_id,
            stored.meta,
            stored.body.clone(),
            properties,
        )
    }
}

/// Why a message was not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PutError {
    /// The record is larger than the broker's maximum message size.
    TooLarge,
    /// The record cannot be encoded (properties over 32 KiB, ...).
    Illegal(String),
}

/// The store's answer to a read (Java `GetMessageStatus` and friends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GetStatus {
    Found,
    NoMatchedMessage,
    NoMessageInQueue,
    OffsetTooSmall,
    OffsetOverflowOne,
    OffsetOverflowBadly,
}

impl GetStatus {
    /// The Java enum name (the pull response's remark).
    pub(crate) fn name(self) -> &'static str {
        match self {
            GetStatus::Found => "FOUND",
            GetStatus::NoMatchedMessage => "NO_MATCHED_MESSAGE",
            GetStatus::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
            GetStatus::OffsetTooSmall => "OFFSET_TOO_SMALL",
            GetStatus::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
            GetStatus::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct GetResult {
    pub(crate) status: GetStatus,
    pub(crate) next_begin_offset: i64,
    pub(crate) min_offset: i64,
    pub(crate) max_offset: i64,
    pub(crate) messages: Vec<Arc<StoredMsg>>,
}

#[derive(Debug, Default)]
pub(crate) struct Store {
    queues: HashMap<String, BTreeMap<i32, Vec<Arc<StoredMsg>>>>,
    by_offset: BTreeMap<i64, Arc<StoredMsg>>,
    commit_end: i64,
    flushed_end: i64,
}

impl Store {
    /// Stores `m` at the end of its queue.
    pub(crate) fn put(
        &mut self,
        mut m: NewMessage,
        store_timestamp: i64,
        flavor: BrokerFlavor,
        max_message_size: usize,
    ) -> Result<Arc<StoredMsg>, PutError> {
        let queue_offset = self.max_offset(&m.topic, m.queue_id);
        let properties = match m.properties_text.take() {
            Some(text) => text,
            None => encode(&m.properties, flavor),
        };
        let version = match flavor {
            BrokerFlavor::V5 => MessageVersion::for_topic(&m.topic),
            BrokerFlavor::V4_9 => MessageVersion::V1,
        };
        let record = StoredRecord {
            version,
            topic: &m.topic,
            queue_id: m.queue_id,
            flag: m.meta.flag,
            queue_offset,
            commit_log_offset: self.commit_end,
            sys_flag: m.meta.sys_flag,
            born_timestamp: m.meta.born_timestamp,
            born_host: m.meta.born_host,
            store_timestamp,
            store_host: m.meta.store_host,
            reconsume_times: m.meta.reconsume_times,
            prepared_transaction_offset: m.meta.prepared_transaction_offset,
            body_crc: body_crc(&m.body),
            body: &m.body,
            properties: &properties,
        };
        let len = record.encoded_len().ok_or(PutError::TooLarge)?;
        if len > max_message_size {
            return Err(PutError::TooLarge);
        }
        let bytes = encode_stored_record(&record).map_err(|e| PutError::Illegal(e.to_string()))?;
        let size = i64::try_from(bytes.len()).map_err(|_| PutError::TooLarge)?;
        let stored = Arc::new(StoredMsg {
            topic: m.topic,
            queue_id: m.queue_id,
            queue_offset,
            commit_log_offset: self.commit_end,
            meta: m.meta,
            store_timestamp,
            body: m.body,
            properties: m.properties,
            tags_code: m.tags_code,
            record: bytes,
        });
        self.commit_end = self.commit_end.saturating_add(size);
        self.by_offset
            .insert(stored.commit_log_offset, Arc::clone(&stored));
        self.queues
            .entry(stored.topic.clone())
            .or_default()
            .entry(stored.queue_id)
            .or_default()
            .push(Arc::clone(&stored));
        Ok(stored)
    }

    fn queue(&self, topic: &str, queue_id: i32) -> &[Arc<StoredMsg>] {
        self.queues
            .get(topic)
            .and_then(|q| q.get(&queue_id))
            .map_or(&[], Vec::as_slice)
    }

    /// The offset the next message of the queue gets.
    pub(crate) fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        i64::try_from(self.queue(topic, queue_id).len()).unwrap_or(i64::MAX)
    }

    /// The queue's first offset (nothing is ever deleted: 0).
    pub(crate) fn min_offset(&self, _topic: &str, _queue_id: i32) -> i64 {
        0
    }

    /// The message at `offset` of the queue.
    pub(crate) fn message_at(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Option<&Arc<StoredMsg>> {
        let index = usize::try_from(offset).ok()?;
        self.queue(topic, queue_id).get(index)
    }

    /// The message stored at commit-log offset `offset`.
    pub(crate) fn by_commit_offset(&self, offset: i64) -> Option<&Arc<StoredMsg>> {
        self.by_offset.get(&offset)
    }

    /// Every message of `topic`, queue by queue in offset order.
    pub(crate) fn topic_messages(&self, topic: &str) -> Vec<Arc<StoredMsg>> {
        self.queues
            .get(topic)
            .map(|qs| qs.values().flat_map(|q| q.iter().cloned()).collect())
            .unwrap_or_default()
    }

    /// The queue ids of `topic` that hold messages.
    pub(crate) fn queue_ids(&self, topic: &str) -> Vec<i32> {
        self.queues
            .get(topic)
            .map(|qs| qs.keys().copied().collect())
            .unwrap_or_default()
    }

    /// Reads up to `max_nums` messages of the queue from `offset` that pass
    /// `filter`.
    pub(crate) fn get(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_nums: i32,
        filter: &MessageFilter,
    ) -> GetResult {
        let queue = self.queue(topic, queue_id);
        let min = 0i64;
        let max = i64::try_from(queue.len()).unwrap_or(i64::MAX);
        let mut result = GetResult {
            status: GetStatus::NoMessageInQueue,
            next_begin_offset: offset,
            min_offset: min,
            max_offset: max,
            messages: Vec::new(),
        };
        if max == 0 {
            result.next_begin_offset = 0;
            return result;
        }
        if offset < min {
            result.status = GetStatus::OffsetTooSmall;
            result.next_begin_offset = min;
            return result;
        }
        if offset == max {
            result.status = GetStatus::OffsetOverflowOne;
            return result;
        }
        if offset > max {
            result.status = GetStatus::OffsetOverflowBadly;
            result.next_begin_offset = max;
            return result;
        }
        result.status = GetStatus::NoMatchedMessage;
        let max_nums = usize::try_from(max_nums).unwrap_or(0);
        let scan_limit = MAX_FILTER_SCAN.max(i64::try_from(max_nums).unwrap_or(i64::MAX));
        let mut bytes = 0usize;
        let mut next = offset;
        while next < max {
            if next.saturating_sub(offset) >= scan_limit {
                break;
            }
            let Some(msg) = usize::try_from(next).ok().and_then(|i| queue.get(i)) else {
                break;
            };
            let count = result.messages.len();
            if count > 0 {
                // Java isTheBatchFull: the first message always fits.
                if count + 1 > max_nums
                    || bytes + msg.store_size() > MAX_TRANSFER_BYTES
                    || count > MAX_TRANSFER_COUNT - 1
                {
                    break;
                }
            }
            next += 1;
            if !filter.matches(msg.tags_code, &msg.properties) {
                continue;
            }
            bytes += msg.store_size();
            result.messages.push(Arc::clone(msg));
            result.status = GetStatus::Found;
        }
        result.next_begin_offset = next;
        result
    }

    /// SEARCH_OFFSET_BY_TIMESTAMP: the queue offset for `timestamp`.
    ///
    /// 5.x: `LOWER` is the first offset stored at or after it (the max
    /// offset when none), `UPPER` the last stored at or before it (0 when
    /// none). 4.9.x: the message whose store time is nearest (ties: the
    /// earlier), whatever the boundary.
    pub(crate) fn search_offset(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
        boundary: BoundaryType,
        flavor: BrokerFlavor,
    ) -> i64 {
        let queue = self.queue(topic, queue_id);
        if queue.is_empty() {
            return 0;
        }
        let len = i64::try_from(queue.len()).unwrap_or(i64::MAX);
        let times: Vec<i64> = queue.iter().map(|m| m.store_timestamp).collect();
        match flavor {
            BrokerFlavor::V5 => {
                let found = match boundary {
                    BoundaryType::Lower => times
                        .iter()
                        .position(|t| *t >= timestamp)
                        .map_or(len, |i| i64::try_from(i).unwrap_or(len)),
                    BoundaryType::Upper => times
                        .iter()
                        .rposition(|t| *t <= timestamp)
                        .map_or(0, |i| i64::try_from(i).unwrap_or(0)),
                };
                found.clamp(0, len)
            }
            BrokerFlavor::V4_9 => nearest_by_time(&times, timestamp),
        }
    }

    /// Marks everything stored so far as flushed.
    pub(crate) fn flush(&mut self) {
        self.flushed_end = self.commit_end;
    }

    /// Drops every message stored after the last flush (a crash of the
    /// machine); returns how many were lost.
    pub(crate) fn truncate_unflushed(&mut self) -> usize {
        let lost = self.by_offset.split_off(&self.flushed_end);
        for queues in self.queues.values_mut() {
            for q in queues.values_mut() {
                while q
                    .last()
                    .is_some_and(|m| m.commit_log_offset >= self.flushed_end)
                {
                    q.pop();
                }
            }
        }
        self.commit_end = self.flushed_end;
        lost.len()
    }
}

/// The properties string as the broker writes it: 4.9.x's
/// `messageProperties2String` drops the last separator, 5.x's keeps it.
pub(crate) fn encode(properties: &HashMap<String, String>, flavor: BrokerFlavor) -> String {
    let mut text = encode_properties(properties);
    if flavor == BrokerFlavor::V4_9 {
        text.pop();
    }
    text
}

/// 4.9.x `ConsumeQueue.getOffsetInQueueByTime`: a binary search that stops
/// at an exact match, else the nearer neighbour.
fn nearest_by_time(times: &[i64], timestamp: i64) -> i64 {
    let mut low = 0i64;
    let mut high = i64::try_from(times.len()).unwrap_or(0) - 1;
    let (mut left, mut right) = (-1i64, -1i64);
    let (mut left_value, mut right_value) = (None::<i64>, None::<i64>);
    let at = |i: i64| usize::try_from(i).ok().and_then(|i| times.get(i)).copied();
    while high >= low {
        let mid = (low + high) / 2;
        let Some(t) = at(mid) else { break };
        if t == timestamp {
            return mid;
        }
        if t > timestamp {
            high = mid - 1;
            right = mid;
            right_value = Some(t);
        } else {
            low = mid + 1;
            left = mid;
            left_value = Some(t);
        }
    }
    match (left_value, right_value) {
        (None, _) => right.max(0),
        (_, None) => left.max(0),
        (Some(l), Some(r)) => {
            if timestamp.abs_diff(l) > timestamp.abs_diff(r) {
                right
            } else {
                left
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, SocketAddrV4};

    fn host(port: u16) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
    }

    fn msg(topic: &str, tags_code: i64) -> NewMessage {
        NewMessage {
            topic: topic.to_owned(),
            queue_id: 0,
            meta: MessageMeta {
                sys_flag: 0,
                flag: 0,
                born_timestamp: 1,
                born_host: host(1000),
                store_host: host(10911),
                reconsume_times: 0,
                prepared_transaction_offset: 0,
            },
            body: Bytes::from_static(b"body"),
            properties: HashMap::new(),
            tags_code,
            properties_text: None,
        }
    }

    fn store_with(n: usize) -> Store {
        let mut s = Store::default();
        for i in 0..n {
            let code = i64::try_from(i % 2).unwrap();
            s.put(
                msg("T", code),
                100 + i64::try_from(i).unwrap(),
                BrokerFlavor::V5,
                1 << 22,
            )
            .unwrap();
        }
        s
    }

    #[test]
    fn offsets_and_statuses() {
        let s = Store::default();
        let r = s.get("T", 0, 5, 32, &MessageFilter::All);
        assert_eq!(
            (r.status, r.next_begin_offset),
            (GetStatus::NoMessageInQueue, 0)
        );
        let s = store_with(3);
        let r = s.get("T", 0, 0, 32, &MessageFilter::All);
        assert_eq!(
            (r.status, r.next_begin_offset, r.messages.len()),
            (GetStatus::Found, 3, 3)
        );
        let r = s.get("T", 0, 3, 32, &MessageFilter::All);
        assert_eq!(
            (r.status, r.next_begin_offset),
            (GetStatus::OffsetOverflowOne, 3)
        );
        let r = s.get("T", 0, 9, 32, &MessageFilter::All);
        assert_eq!(
            (r.status, r.next_begin_offset),
            (GetStatus::OffsetOverflowBadly, 3)
        );
        let r = s.get("T", 0, -1, 32, &MessageFilter::All);
        assert_eq!(
            (r.status, r.next_begin_offset),
            (GetStatus::OffsetTooSmall, 0)
        );
        let r = s.get("T", 0, 0, 2, &MessageFilter::All);
        assert_eq!((r.messages.len(), r.next_begin_offset), (2, 2));
        let r = s.get("T", 0, 0, 0, &MessageFilter::All);
        assert_eq!(r.messages.len(), 1, "the first message always fits");
    }

    #[test]
    fn filters_advance_past_skipped_messages() {
        let s = store_with(6);
        let only_ones = MessageFilter::Tags(Arc::new(vec![1]));
        let r = s.get("T", 0, 0, 32, &only_ones);
        let offsets: Vec<i64> = r.messages.iter().map(|m| m.queue_offset).collect();
        assert_eq!(offsets, [1, 3, 5]);
        assert_eq!(r.next_begin_offset, 6);
        let none = MessageFilter::Tags(Arc::new(vec![7]));
        let r = s.get("T", 0, 0, 32, &none);
        assert_eq!(
            (r.status, r.next_begin_offset),
            (GetStatus::NoMatchedMessage, 6)
        );
    }

    #[test]
    fn thirty_two_at_most() {
        let s = store_with(40);
        let r = s.get("T", 0, 0, 100, &MessageFilter::All);
        assert_eq!(r.messages.len(), 32);
        assert_eq!(r.next_begin_offset, 32);
    }

    #[test]
    fn commit_log_offsets_advance_by_record_size() {
        let s = store_with(2);
        let a = s.message_at("T", 0, 0).unwrap();
        let b = s.message_at("T", 0, 1).unwrap();
        assert_eq!(
            b.commit_log_offset - a.commit_log_offset,
            i64::try_from(a.store_size()).unwrap()
        );
        assert!(s.by_commit_offset(b.commit_log_offset).is_some());
    }

    #[test]
    fn search_by_time_per_flavor() {
        let s = store_with(20); // store times 100..=119
        let v5 = |ts, b| s.search_offset("T", 0, ts, b, BrokerFlavor::V5);
        assert_eq!(v5(0, BoundaryType::Lower), 0);
        assert_eq!(v5(1000, BoundaryType::Lower), 20);
        assert_eq!(v5(1000, BoundaryType::Upper), 19);
        assert_eq!(v5(105, BoundaryType::Lower), 5);
        assert_eq!(v5(0, BoundaryType::Upper), 0);
        let v4 = |ts| s.search_offset("T", 0, ts, BoundaryType::Lower, BrokerFlavor::V4_9);
        assert_eq!(v4(0), 0);
        assert_eq!(v4(1000), 19);
        assert_eq!(v4(107), 7);
    }

    #[test]
    fn crash_loses_what_was_not_flushed() {
        let mut s = store_with(3);
        s.flush();
        s.put(msg("T", 0), 200, BrokerFlavor::V5, 1 << 22).unwrap();
        assert_eq!(s.max_offset("T", 0), 4);
        assert_eq!(s.truncate_unflushed(), 1);
        assert_eq!(s.max_offset("T", 0), 3);
        let again = s.put(msg("T", 0), 201, BrokerFlavor::V5, 1 << 22).unwrap();
        assert_eq!(again.queue_offset, 3, "the lost offset is reused");
    }
}
