//! Decoding stored messages (Java `MessageDecoder.decode`): the body of a
//! PULL_MESSAGE response (records back to back), of CONSUME_MESSAGE_DIRECTLY
//! and of CHECK_TRANSACTION_STATE.
//!
//! The rules are in the [`message`](super) module docs.

use std::iter::FusedIterator;

use bytes::Bytes;

use super::batch::for_each_record;
use super::compress::{CompressionType, DEFAULT_MAX_BODY_SIZE};
use super::crc::body_crc;
use super::id::offset_msg_id;
use super::reader::{Reader, record_end};
use super::{Message, MessageExt, Properties, property, sys_flag};
use crate::error::{Error, Result};

/// Magic code of V1 stored messages (1-byte topic length), `0xDAA320A7`.
pub const MAGIC_CODE_V1: i32 = i32::from_be_bytes([0xDA, 0xA3, 0x20, 0xA7]);
/// Magic code of V2 stored messages (2-byte topic length), `0xDAA320AB`.
pub const MAGIC_CODE_V2: i32 = i32::from_be_bytes([0xDA, 0xA3, 0x20, 0xAB]);

/// Default of [`DecodeOptions::max_total_decompressed`]: 256 MiB.
pub const DEFAULT_MAX_TOTAL_DECOMPRESSED: usize = 256 * 1024 * 1024;

/// Smallest stored record: V1, IPv4 hosts, empty body, topic and properties.
pub const MIN_STORED_RECORD_LEN: usize = 91;

const WHAT: &str = "stored message";

/// Stored-message format version (Java `MessageVersion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageVersion {
    /// Magic `0xDAA320A7`: 1-byte topic length.
    V1,
    /// Magic `0xDAA320AB`: 2-byte topic length (5.1+ brokers, topics over 127 bytes).
    V2,
}

impl MessageVersion {
    /// The magic code of this version.
    pub const fn magic_code(self) -> i32 {
        match self {
            MessageVersion::V1 => MAGIC_CODE_V1,
            MessageVersion::V2 => MAGIC_CODE_V2,
        }
    }

    /// The version with this magic code, if any.
    pub const fn from_magic_code(magic: i32) -> Option<Self> {
        match magic {
            MAGIC_CODE_V1 => Some(MessageVersion::V1),
            MAGIC_CODE_V2 => Some(MessageVersion::V2),
            _ => None,
        }
    }

    /// The version a 5.1+ broker writes for `topic` (`autoMessageVersionOnTopicLen`):
    /// V2 for topics longer than 127 bytes, else V1.
    pub fn for_topic(topic: &str) -> Self {
        if topic.len() > 127 {
            MessageVersion::V2
        } else {
            MessageVersion::V1
        }
    }
}

/// Options for decoding stored messages. `Default` gives the values below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeOptions {
    /// Largest decompressed body; a larger one is an error (zip-bomb guard).
    /// Default: [`DEFAULT_MAX_BODY_SIZE`] (64 MiB).
    pub max_body_size: usize,
    /// Largest total of decompressed bodies in one call (one pull body, or one
    /// [`StoredMessages`] iteration), so a body full of small zip bombs cannot
    /// exhaust memory either. Default: [`DEFAULT_MAX_TOTAL_DECOMPRESSED`] (256 MiB).
    pub max_total_decompressed: usize,
    /// Whether [`decode_messages_with`] replaces 5.x inner-batch containers
    /// (sysFlag `INNER_BATCH | NEED_UNWRAP`) by their messages, as the Java
    /// client's `PullAPIWrapper` does. Default: `true`.
    pub unwrap_inner_batch: bool,
    /// Whether to check BODYCRC against the stored body (Java's
    /// `checkCRC`, off in clients). Default: `false`.
    pub verify_body_crc: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_body_size: DEFAULT_MAX_BODY_SIZE,
            max_total_decompressed: DEFAULT_MAX_TOTAL_DECOMPRESSED,
            unwrap_inner_batch: true,
            verify_body_crc: false,
        }
    }
}

impl DecodeOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`max_body_size`](Self::max_body_size).
    pub fn with_max_body_size(mut self, max: usize) -> Self {
        self.max_body_size = max;
        self
    }

    /// Sets [`max_total_decompressed`](Self::max_total_decompressed).
    pub fn with_max_total_decompressed(mut self, max: usize) -> Self {
        self.max_total_decompressed = max;
        self
    }

    /// Sets [`unwrap_inner_batch`](Self::unwrap_inner_batch).
    pub fn with_unwrap_inner_batch(mut self, unwrap: bool) -> Self {
        self.unwrap_inner_batch = unwrap;
        self
    }

    /// Sets [`verify_body_crc`](Self::verify_body_crc).
    pub fn with_verify_body_crc(mut self, verify: bool) -> Self {
        self.verify_body_crc = verify;
        self
    }
}

/// Decodes a pull body (stored records back to back) with the default
/// [`DecodeOptions`]: inner batches are unwrapped, bodies decompressed up to
/// 64 MiB. An empty body gives an empty list.
///
/// The caller still applies what the pull response adds (Java
/// `processPullResult`): `offsetDelta`, `MIN_OFFSET`/`MAX_OFFSET`, the broker
/// name and queue id of the pulled queue, and the tag re-check.
///
/// # Errors
///
/// [`Error::InvalidMessage`] or [`Error::Decompress`] for the first record
/// that cannot be decoded; see the [decoding rules](super#decoding-stored-messages).
pub fn decode_messages(body: &Bytes) -> Result<Vec<MessageExt>> {
    decode_messages_with(body, &DecodeOptions::default())
}

/// [`decode_messages`] with explicit options.
///
/// # Errors
///
/// As [`decode_messages`].
pub fn decode_messages_with(body: &Bytes, options: &DecodeOptions) -> Result<Vec<MessageExt>> {
    let mut out = Vec::with_capacity(count_records(body));
    for msg in StoredMessages::new(body, *options) {
        let msg = msg?;
        if options.unwrap_inner_batch && sys_flag::is_inner_batch(msg.sys_flag) {
            unwrap_inner_batch_into(&msg, &mut out)?;
        } else {
            out.push(msg);
        }
    }
    Ok(out)
}

/// Decodes one stored message at the start of `buf` (a CONSUME_MESSAGE_DIRECTLY
/// or CHECK_TRANSACTION_STATE body), with default options. Bytes after its
/// TOTALSIZE are ignored; inner batches are not unwrapped (see
/// [`unwrap_inner_batch`]).
///
/// # Errors
///
/// As [`decode_messages`].
pub fn decode_message(buf: &Bytes) -> Result<MessageExt> {
    decode_message_with(buf, &DecodeOptions::default())
}

/// [`decode_message`] with explicit options.
///
/// # Errors
///
/// As [`decode_messages`].
pub fn decode_message_with(buf: &Bytes, options: &DecodeOptions) -> Result<MessageExt> {
    let mut budget = options.max_total_decompressed;
    decode_record(buf, 0, options, &mut budget).map(|(msg, _)| msg)
}

/// An iterator over the stored records of a pull body, one `Result` per
/// record, without inner-batch unwrapping. After the first error it ends, so
/// a caller can keep the messages before a bad record, as Java does.
#[derive(Debug, Clone)]
pub struct StoredMessages<'a> {
    body: &'a Bytes,
    pos: usize,
    options: DecodeOptions,
    /// Decompressed bytes still allowed.
    budget: usize,
    done: bool,
}

impl<'a> StoredMessages<'a> {
    /// Iterates over the records of `body`.
    pub fn new(body: &'a Bytes, options: DecodeOptions) -> Self {
        StoredMessages {
            body,
            pos: 0,
            options,
            budget: options.max_total_decompressed,
            done: false,
        }
    }
}

impl Iterator for StoredMessages<'_> {
    type Item = Result<MessageExt>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.body.len() {
            return None;
        }
        match decode_record(self.body, self.pos, &self.options, &mut self.budget) {
            Ok((msg, next)) => {
                self.pos = next;
                Some(Ok(msg))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl FusedIterator for StoredMessages<'_> {}

/// Splits a 5.x inner-batch container (Java `MessageDecoder.decodeMessages` of a `MessageSysFlag.INNER_BATCH_FLAG` record) into its
/// messages: each has its own flag, body (a zero-copy slice of the
/// container's body) and properties, `msg_id` from its `UNIQ_KEY`, and the
/// container's topic, queue id, hosts, timestamps, commit-log offset, offset
/// id, reconsume times and sysFlag (with [`sys_flag::NEED_UNWRAP`] cleared,
/// unlike Java, so unwrapping twice is harmless); queue offset = container's
/// + index; `store_size` = size of its batch record.
///
/// Returns the message itself when it is not a container.
///
/// # Errors
///
/// [`Error::InvalidMessage`] if the container's body is not a valid batch
/// body, or a queue offset overflows.
pub fn unwrap_inner_batch(msg: &MessageExt) -> Result<Vec<MessageExt>> {
    let mut out = Vec::new();
    if sys_flag::is_inner_batch(msg.sys_flag) {
        unwrap_inner_batch_into(msg, &mut out)?;
    } else {
        out.push(msg.clone());
    }
    Ok(out)
}

fn unwrap_inner_batch_into(outer: &MessageExt, out: &mut Vec<MessageExt>) -> Result<()> {
    let mut index = 0i64;
    for_each_record(&outer.message.body, |rec| {
        let queue_offset = outer.queue_offset.checked_add(index).ok_or_else(|| {
            Error::InvalidMessage(format!(
                "inner batch at queue offset {}: queue offset overflows",
                outer.queue_offset
            ))
        })?;
        index = index.saturating_add(1);
        let msg_id = rec
            .properties
            .get(property::UNIQ_KEY)
            .map_or_else(|| outer.offset_msg_id.clone(), str::to_owned);
        out.push(MessageExt {
            message: Message {
                topic: outer.message.topic.clone(),
                flag: rec.flag,
                properties: rec.properties,
                body: rec.body,
            },
            broker_name: outer.broker_name.clone(),
            queue_id: outer.queue_id,
            store_size: rec.size,
            queue_offset,
            sys_flag: outer.sys_flag & !sys_flag::NEED_UNWRAP,
            born_timestamp: outer.born_timestamp,
            born_host: outer.born_host,
            store_timestamp: outer.store_timestamp,
            store_host: outer.store_host,
            commit_log_offset: outer.commit_log_offset,
            body_crc: rec.body_crc,
            reconsume_times: outer.reconsume_times,
            prepared_transaction_offset: outer.prepared_transaction_offset,
            msg_id,
            offset_msg_id: outer.offset_msg_id.clone(),
        });
        Ok(())
    })
}

/// How many records `body` holds, following TOTALSIZE and stopping at the
/// first that does not fit (decoding reports it), so a result `Vec` is
/// allocated once.
fn count_records(body: &Bytes) -> usize {
    let mut n = 0usize;
    let mut pos = 0usize;
    while let Some(head) = body.get(pos..).and_then(|b| b.first_chunk::<4>()) {
        let size = usize::try_from(i32::from_be_bytes(*head)).unwrap_or(0);
        n += 1;
        if size < MIN_STORED_RECORD_LEN {
            break;
        }
        pos = pos.saturating_add(size);
    }
    n
}

/// Decodes the record at `buf[start..]`; returns it and where the next starts.
fn decode_record(
    buf: &Bytes,
    start: usize,
    options: &DecodeOptions,
    budget: &mut usize,
) -> Result<(MessageExt, usize)> {
    let end = record_end(buf, start, MIN_STORED_RECORD_LEN, WHAT)?;
    let mut r = Reader::new(buf, start, start.saturating_add(4), end, WHAT);
    let store_size = i32::try_from(end.saturating_sub(start)).unwrap_or(i32::MAX);

    let magic = r.i32("MAGICCODE")?;
    let version = MessageVersion::from_magic_code(magic).ok_or_else(|| {
        r.error(format_args!(
            "unknown magic code {magic:#010x} (expected {MAGIC_CODE_V1:#010x} for V1 or \
             {MAGIC_CODE_V2:#010x} for V2); the rest of the body cannot be decoded"
        ))
    })?;
    let stored_crc = r.i32("BODYCRC")?;
    let queue_id = r.i32("QUEUEID")?;
    let flag = r.i32("FLAG")?;
    let queue_offset = r.i64("QUEUEOFFSET")?;
    let commit_log_offset = r.i64("PHYSICALOFFSET")?;
    let mut sys_flag = r.i32("SYSFLAG")?;
    let born_timestamp = r.i64("BORNTIMESTAMP")?;
    let born_host = r.host(sys_flag::check(sys_flag, sys_flag::BORNHOST_V6), "BORNHOST")?;
    let store_timestamp = r.i64("STORETIMESTAMP")?;
    let store_host = r.host(
        sys_flag::check(sys_flag, sys_flag::STOREHOST_V6),
        "STOREHOST",
    )?;
    let reconsume_times = r.i32("RECONSUMETIMES")?;
    let prepared_transaction_offset = r.i64("PREPARED_TRANSACTION_OFFSET")?;

    let body_len = r.len_i32("BODYLENGTH")?;
    let mut body = r.bytes(body_len, "BODY")?;
    if options.verify_body_crc {
        let actual = body_crc(&body);
        if actual != stored_crc {
            return Err(r.error(format_args!(
                "BODYCRC {stored_crc} does not match the body's CRC {actual}"
            )));
        }
    }
    if !body.is_empty() && sys_flag::check(sys_flag, sys_flag::COMPRESSED) {
        let codec = CompressionType::from_sys_flag(sys_flag).map_err(|_| {
            r.error(format_args!(
                "compressed body with unknown compression type {} (sysFlag {sys_flag:#x})",
                (sys_flag & sys_flag::COMPRESSION_TYPE_MASK) >> 8
            ))
        })?;
        body = codec.decompress(&body, options.max_body_size.min(*budget))?;
        *budget = budget.saturating_sub(body.len());
        sys_flag &= !sys_flag::COMPRESSED;
    }

    let topic_len = match version {
        MessageVersion::V1 => usize::from(r.u8("TOPICLENGTH")?),
        MessageVersion::V2 => r.len_i16("TOPICLENGTH")?,
    };
    let topic = r.take(topic_len, "TOPIC")?;
    let topic = std::str::from_utf8(topic)
        .map_err(|e| r.error(format_args!("topic is not valid UTF-8: {e}")))?
        .to_owned();

    let props_len = r.len_i16("PROPERTIESLENGTH")?;
    let props = r.bytes(props_len, "PROPERTIES")?;
    let properties = Properties::try_from_wire(props)
        .map_err(|e| r.error(format_args!("properties are not valid UTF-8: {e}")))?;

    let offset_msg_id = offset_msg_id(store_host, commit_log_offset);
    let msg_id = match properties.get(property::UNIQ_KEY) {
        Some(uniq) => uniq.to_owned(),
        None => offset_msg_id.clone(),
    };
    let msg = MessageExt {
        message: Message {
            topic,
            flag,
            properties,
            body,
        },
        broker_name: String::new(),
        queue_id,
        store_size,
        queue_offset,
        sys_flag,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        commit_log_offset,
        body_crc: stored_crc,
        reconsume_times,
        prepared_transaction_offset,
        msg_id,
        offset_msg_id,
    };
    Ok((msg, end))
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::message::{encode_batch, encode_stored_message};

    fn sample(topic: &str, born: &str, store: &str) -> MessageExt {
        MessageExt {
            message: Message::new(topic, "Hello RocketMQ")
                .with_tags("TagA")
                .with_keys(["k1", "k2"])
                .with_flag(3),
            queue_id: 2,
            queue_offset: 77,
            commit_log_offset: 0x1_0000_0001,
            sys_flag: sys_flag::TRANSACTION_COMMIT_TYPE,
            born_timestamp: 1_700_000_000_000,
            born_host: born.parse().unwrap(),
            store_timestamp: 1_700_000_000_005,
            store_host: store.parse().unwrap(),
            body_crc: 1_774_740_973,
            reconsume_times: 1,
            prepared_transaction_offset: 12,
            ..MessageExt::default()
        }
    }

    /// What decoding `encode_stored_message(msg)` must give.
    fn expected(msg: &MessageExt, len: usize) -> MessageExt {
        let mut want = msg.clone();
        want.store_size = i32::try_from(len).unwrap();
        want.sys_flag &= !(sys_flag::COMPRESSED | sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
        if msg.born_host.is_ipv6() {
            want.sys_flag |= sys_flag::BORNHOST_V6;
        }
        if msg.store_host.is_ipv6() {
            want.sys_flag |= sys_flag::STOREHOST_V6;
        }
        want.offset_msg_id = offset_msg_id(msg.store_host, msg.commit_log_offset);
        want.msg_id = msg
            .unique_key()
            .map_or_else(|| want.offset_msg_id.clone(), str::to_owned);
        want
    }

    /// A V1 IPv4 record built by hand from the reference's byte offsets.
    fn hand_built() -> Vec<u8> {
        let mut b = vec![0u8; 88];
        b[4..8].copy_from_slice(&MAGIC_CODE_V1.to_be_bytes());
        b[8..12].copy_from_slice(&1_774_740_973i32.to_be_bytes()); // BODYCRC
        b[12..16].copy_from_slice(&5i32.to_be_bytes()); // QUEUEID
        b[16..20].copy_from_slice(&6i32.to_be_bytes()); // FLAG
        b[20..28].copy_from_slice(&7i64.to_be_bytes()); // QUEUEOFFSET
        b[28..36].copy_from_slice(&8i64.to_be_bytes()); // PHYSICALOFFSET
        b[36..40].copy_from_slice(&0i32.to_be_bytes()); // SYSFLAG
        b[40..48].copy_from_slice(&9i64.to_be_bytes()); // BORNTIMESTAMP
        b[48..52].copy_from_slice(&[10, 0, 0, 1]); // BORNHOST
        b[52..56].copy_from_slice(&40000i32.to_be_bytes());
        b[56..64].copy_from_slice(&10i64.to_be_bytes()); // STORETIMESTAMP
        b[64..68].copy_from_slice(&[10, 0, 0, 2]); // STOREHOST
        b[68..72].copy_from_slice(&10911i32.to_be_bytes());
        b[72..76].copy_from_slice(&11i32.to_be_bytes()); // RECONSUMETIMES
        b[76..84].copy_from_slice(&12i64.to_be_bytes()); // PREPARED_TRANSACTION_OFFSET
        b[84..88].copy_from_slice(&14i32.to_be_bytes()); // BODYLENGTH
        b.extend_from_slice(b"Hello RocketMQ");
        b.push(5);
        b.extend_from_slice(b"Topic");
        let props = b"UNIQ_KEY\x01ABC\x02TAGS\x01t\x02";
        b.extend_from_slice(&i16::try_from(props.len()).unwrap().to_be_bytes());
        b.extend_from_slice(props);
        let total = i32::try_from(b.len()).unwrap();
        b[0..4].copy_from_slice(&total.to_be_bytes());
        b
    }

    #[test]
    fn decodes_hand_built_record() {
        let raw = Bytes::from(hand_built());
        let m = decode_message(&raw).unwrap();
        assert_eq!(m.store_size, i32::try_from(raw.len()).unwrap());
        assert_eq!(m.body_crc, 1_774_740_973);
        assert_eq!(body_crc(&m.body), m.body_crc);
        assert_eq!(
            (m.queue_id, m.flag, m.queue_offset, m.commit_log_offset),
            (5, 6, 7, 8)
        );
        assert_eq!((m.born_timestamp, m.store_timestamp), (9, 10));
        assert_eq!(m.born_host, "10.0.0.1:40000".parse::<SocketAddr>().unwrap());
        assert_eq!(
            m.store_host,
            "10.0.0.2:10911".parse::<SocketAddr>().unwrap()
        );
        assert_eq!((m.reconsume_times, m.prepared_transaction_offset), (11, 12));
        assert_eq!(&m.body[..], b"Hello RocketMQ");
        assert_eq!(m.topic, "Topic");
        assert_eq!(m.tags(), Some("t"));
        assert_eq!(m.msg_id, "ABC");
        assert_eq!(m.offset_msg_id, "0A00000200002A9F0000000000000008");
        // Same bytes from the encoder.
        let mut again = m.clone();
        again.store_size = 0;
        let enc = encode_stored_message(&again, MessageVersion::V1, None).unwrap();
        assert_eq!(decode_message(&enc).unwrap(), m);
        assert_eq!(enc.len(), raw.len());
        // Only the properties order may differ (the encoder sorts them).
        assert_eq!(enc[..105], raw[..105]);
        assert!(
            decode_message_with(&raw, &DecodeOptions::new().with_verify_body_crc(true)).is_ok()
        );
    }

    #[test]
    fn all_variants_round_trip_zero_copy() {
        let hosts = [
            ("10.1.2.3:5555", "10.0.0.9:10911"),
            ("[::1]:5555", "[fe80::2]:10911"),
            ("10.1.2.3:5555", "[fe80::2]:10911"),
            ("[::1]:5555", "10.0.0.9:10911"),
        ];
        let long_topic = "T".repeat(200);
        for (born, store) in hosts {
            for (topic, version) in [
                ("TopicTest", MessageVersion::V1),
                ("TopicTest", MessageVersion::V2),
                (long_topic.as_str(), MessageVersion::V2),
            ] {
                let msg = sample(topic, born, store);
                let enc = encode_stored_message(&msg, version, None).unwrap();
                let got = decode_message(&enc).unwrap();
                assert_eq!(got, expected(&msg, enc.len()), "{born} {store} {version:?}");
                // The body is a slice of the input, not a copy.
                let range = enc.as_ptr_range();
                assert!(range.contains(&got.body.as_ptr()));
            }
        }
    }

    #[test]
    fn compressed_bodies() {
        let body = Bytes::from("compress me ".repeat(500));
        for codec in [
            CompressionType::Zlib,
            CompressionType::Lz4,
            CompressionType::Zstd,
        ] {
            let mut msg = sample("T", "1.2.3.4:1", "5.6.7.8:2");
            msg.message.body = body.clone();
            let enc = encode_stored_message(&msg, MessageVersion::V1, Some(codec)).unwrap();
            assert!(enc.len() < body.len());
            let got = decode_message(&enc).unwrap();
            assert_eq!(got.body, body);
            // Bit 0 cleared, the type bits stay.
            assert_eq!(
                got.sys_flag,
                msg.sys_flag | (codec.sys_flag_bits() & !sys_flag::COMPRESSED)
            );
            // Bounded.
            let small = DecodeOptions::new().with_max_body_size(body.len() - 1);
            assert!(matches!(
                decode_message_with(&enc, &small),
                Err(Error::Decompress { .. })
            ));
        }
    }

    #[test]
    fn total_decompressed_budget() {
        let mut msg = sample("T", "1.2.3.4:1", "5.6.7.8:2");
        msg.message.body = Bytes::from(vec![0u8; 1000]);
        let one =
            encode_stored_message(&msg, MessageVersion::V1, Some(CompressionType::Zlib)).unwrap();
        let body = Bytes::from([&one[..], &one[..], &one[..]].concat());
        let opts = DecodeOptions::new().with_max_total_decompressed(3000);
        assert_eq!(decode_messages_with(&body, &opts).unwrap().len(), 3);
        let opts = DecodeOptions::new().with_max_total_decompressed(2999);
        let err = decode_messages_with(&body, &opts).unwrap_err();
        assert!(matches!(err, Error::Decompress { .. }), "{err}");
        // Each call has its own budget.
        let opts = DecodeOptions::new().with_max_total_decompressed(1000);
        assert!(decode_message_with(&one, &opts).is_ok());
        assert!(decode_message_with(&one, &opts).is_ok());
    }

    #[test]
    fn legacy_zlib_and_unknown_codec() {
        let msg = sample("T", "1.2.3.4:1", "5.6.7.8:2");
        let enc =
            encode_stored_message(&msg, MessageVersion::V1, Some(CompressionType::Zlib)).unwrap();
        let patch = |flag: i32| {
            let mut v = enc.to_vec();
            v[36..40].copy_from_slice(&flag.to_be_bytes());
            Bytes::from(v)
        };
        // 4.x producer: bit 0 only.
        let got = decode_message(&patch(sys_flag::COMPRESSED)).unwrap();
        assert_eq!(got.body, msg.body);
        assert_eq!(got.sys_flag, 0);
        let err = decode_message(&patch(sys_flag::COMPRESSED | (5 << 8))).unwrap_err();
        assert!(err.to_string().contains("compression type 5"), "{err}");
    }

    #[test]
    fn several_records_and_iterator() {
        let a = sample("A", "1.2.3.4:1", "5.6.7.8:2");
        let b = sample("B", "[::1]:1", "[::2]:2").with_unique_key_for_test("U");
        let ea = encode_stored_message(&a, MessageVersion::V1, None).unwrap();
        let eb = encode_stored_message(&b, MessageVersion::V2, Some(CompressionType::Lz4)).unwrap();
        let body = Bytes::from([&ea[..], &eb[..]].concat());
        let got = decode_messages(&body).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], expected(&a, ea.len()));
        assert_eq!(got[1].msg_id, "U");
        assert_eq!(got[1].topic, "B");
        assert!(decode_messages(&Bytes::new()).unwrap().is_empty());

        // A bad magic in the second record: decode_messages fails, the
        // iterator yields the first one, then the error, then ends.
        let mut bad = body.to_vec();
        bad[ea.len() + 4] ^= 0xFF;
        let bad = Bytes::from(bad);
        let err = decode_messages(&bad).unwrap_err();
        assert!(err.to_string().contains("unknown magic code"), "{err}");
        let mut it = StoredMessages::new(&bad, DecodeOptions::default());
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }

    #[test]
    fn truncation_is_an_error_at_every_length() {
        let msg = sample("TopicTest", "[::1]:1", "5.6.7.8:2");
        let enc =
            encode_stored_message(&msg, MessageVersion::V2, Some(CompressionType::Zstd)).unwrap();
        for cut in 1..enc.len() {
            assert!(decode_messages(&enc.slice(..cut)).is_err(), "cut {cut}");
        }
        // Shrinking TOTALSIZE instead of the buffer.
        for total in 0..i32::try_from(enc.len()).unwrap() {
            let mut v = enc.to_vec();
            v[..4].copy_from_slice(&total.to_be_bytes());
            assert!(decode_messages(&Bytes::from(v)).is_err(), "total {total}");
        }
    }

    #[test]
    fn totalsize_padding_is_skipped() {
        let msg = sample("T", "1.2.3.4:1", "5.6.7.8:2");
        let enc = encode_stored_message(&msg, MessageVersion::V1, None).unwrap();
        let mut v = enc.to_vec();
        v.extend_from_slice(&[0xAB; 5]);
        let total = i32::try_from(v.len()).unwrap();
        v[..4].copy_from_slice(&total.to_be_bytes());
        v.extend_from_slice(&enc);
        let got = decode_messages(&Bytes::from(v)).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].store_size, total);
        assert_eq!(got[1], expected(&msg, enc.len()));
    }

    #[test]
    fn bad_fields() {
        let raw = hand_built();
        let with = |at: usize, bytes: &[u8]| {
            let mut v = raw.clone();
            v[at..at + bytes.len()].copy_from_slice(bytes);
            Bytes::from(v)
        };
        // Negative body length, port out of range, negative properties length,
        // topic not UTF-8, properties not UTF-8, negative TOTALSIZE.
        assert!(decode_message(&with(84, &(-1i32).to_be_bytes())).is_err());
        assert!(decode_message(&with(52, &70000i32.to_be_bytes())).is_err());
        assert!(decode_message(&with(108, &(-2i16).to_be_bytes())).is_err());
        assert!(decode_message(&with(103, &[0xFF])).is_err());
        assert!(decode_message(&with(110, &[0xFF])).is_err());
        assert!(decode_message(&with(0, &(-1i32).to_be_bytes())).is_err());
        // CRC check, when asked.
        let crc = DecodeOptions::new().with_verify_body_crc(true);
        assert!(decode_message_with(&with(8, &1i32.to_be_bytes()), &crc).is_err());
        assert!(decode_message(&with(8, &1i32.to_be_bytes())).is_ok());
    }

    #[test]
    fn inner_batch() {
        let inner = vec![
            Message::new("", "first")
                .with_property(property::UNIQ_KEY, "ID1")
                .with_flag(1),
            Message::new("", "second").with_tags("t2"),
        ];
        let mut outer = sample("Batched", "1.2.3.4:1", "5.6.7.8:2");
        outer.message = Message::new("Batched", encode_batch(&inner).unwrap());
        outer.sys_flag = sys_flag::INNER_BATCH | sys_flag::NEED_UNWRAP;
        outer.queue_offset = 100;
        for compression in [None, Some(CompressionType::Zlib)] {
            let enc = encode_stored_message(&outer, MessageVersion::V1, compression).unwrap();
            let plain = sample("Plain", "1.2.3.4:1", "5.6.7.8:2");
            let enc_plain = encode_stored_message(&plain, MessageVersion::V1, None).unwrap();
            let body = Bytes::from([&enc[..], &enc_plain[..]].concat());

            let got = decode_messages(&body).unwrap();
            assert_eq!(got.len(), 3);
            let (a, b) = (&got[0], &got[1]);
            assert_eq!(
                (a.topic.as_str(), &a.body[..], a.flag),
                ("Batched", &b"first"[..], 1)
            );
            assert_eq!(
                (b.topic.as_str(), &b.body[..], b.tags()),
                ("Batched", &b"second"[..], Some("t2"))
            );
            assert_eq!((a.queue_offset, b.queue_offset), (100, 101));
            assert_eq!(a.msg_id, "ID1");
            let offset_id = offset_msg_id(outer.store_host, outer.commit_log_offset);
            assert_eq!(b.msg_id, offset_id);
            assert_eq!(b.offset_msg_id, offset_id);
            assert_eq!(
                a.sys_flag & !sys_flag::COMPRESSION_TYPE_MASK,
                sys_flag::INNER_BATCH
            );
            assert_eq!(a.store_host, outer.store_host);
            assert_eq!(a.commit_log_offset, outer.commit_log_offset);
            assert_eq!(got[2].topic, "Plain");

            // Without unwrapping: the container, which unwrap_inner_batch splits.
            let opts = DecodeOptions::new().with_unwrap_inner_batch(false);
            let raw = decode_messages_with(&body, &opts).unwrap();
            assert_eq!(raw.len(), 2);
            let split = unwrap_inner_batch(&raw[0]).unwrap();
            assert_eq!(split[..], got[..2]);
            // Unwrapping an unwrapped message is the identity.
            assert_eq!(
                unwrap_inner_batch(&split[0]).unwrap(),
                vec![split[0].clone()]
            );
        }
        // A container whose body is not a batch.
        let mut broken = outer.clone();
        broken.message.body = Bytes::from_static(b"\x00\x00\x00\x40 not a batch");
        let enc = encode_stored_message(&broken, MessageVersion::V1, None).unwrap();
        assert!(decode_messages(&enc).is_err());
    }

    trait TestExt {
        fn with_unique_key_for_test(self, id: &str) -> Self;
    }

    impl TestExt for MessageExt {
        fn with_unique_key_for_test(mut self, id: &str) -> Self {
            self.set_property(property::UNIQ_KEY, id);
            self
        }
    }
}
