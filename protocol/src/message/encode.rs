//! Encoding the stored format (Java `MessageDecoder.encode`, the layout of `CommitLog`), as a broker writes
//! it. For tests, fake brokers and tools: clients never send this format.

use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};

use super::compress::{CompressionType, DEFAULT_COMPRESS_LEVEL};
use super::decode::MessageVersion;
use super::properties::{MAX_PROPERTIES_LEN, encode_properties, validate_properties};
use super::{MessageExt, sys_flag};
use crate::error::{Error, Result};

/// Encodes `msg` as one stored record, the inverse of
/// [`decode_message`](super::decode_message). **For tests and tools** (fake
/// brokers, fuzz corpora): a client never sends this format.
///
/// * TOTALSIZE is computed (`msg.store_size` is ignored), and so are the
///   sysFlag host bits 4/5 (from the address families of `born_host` and
///   `store_host`).
/// * With `compression`, the body is compressed (Java's default level 5) and
///   sysFlag gets bit 0 plus that codec's type bits; without, bit 0 is
///   cleared and the body written as is.
/// * BODYCRC is `msg.body_crc` as given (see [`body_crc`](super::body_crc)).
/// * `msg_id`, `offset_msg_id` and `broker_name` are not part of the format.
///
/// Decoding the result gives `msg` back with `store_size` = the record's
/// length, bit 0 of `sys_flag` cleared, the host bits set as above and the
/// ids computed.
///
/// # Errors
///
/// [`Error::Encode`] for a topic too long for `version` (V1: 255 bytes, V2:
/// 32767), invalid properties (see [`validate_properties`]), a properties
/// string over 32767 bytes or a record over 2 GiB.
pub fn encode_stored_message(
    msg: &MessageExt,
    version: MessageVersion,
    compression: Option<CompressionType>,
) -> Result<Bytes> {
    let mut flag = msg.sys_flag & !sys_flag::COMPRESSED;
    let body = match compression {
        Some(codec) => {
            flag = (flag & !sys_flag::COMPRESSION_TYPE_MASK) | codec.sys_flag_bits();
            codec.compress(&msg.message.body, DEFAULT_COMPRESS_LEVEL)?
        }
        None => msg.message.body.clone(),
    };
    validate_properties(&msg.message.properties)?;
    let props = encode_properties(&msg.message.properties);
    encode_stored_record(&StoredRecord {
        version,
        topic: &msg.message.topic,
        queue_id: msg.queue_id,
        flag: msg.message.flag,
        queue_offset: msg.queue_offset,
        commit_log_offset: msg.commit_log_offset,
        sys_flag: flag,
        born_timestamp: msg.born_timestamp,
        born_host: msg.born_host,
        store_timestamp: msg.store_timestamp,
        store_host: msg.store_host,
        reconsume_times: msg.reconsume_times,
        prepared_transaction_offset: msg.prepared_transaction_offset,
        body_crc: msg.body_crc,
        body: &body,
        properties: &props,
    })
}

/// The fields of one stored record exactly as a broker writes them: the body
/// *as stored* (still compressed when `sys_flag` bit 0 says so) and the
/// encoded properties string (see [`encode_properties`]). Input of
/// [`encode_stored_record`].
#[derive(Debug, Clone, Copy)]
pub struct StoredRecord<'a> {
    /// V1 (1-byte topic length) or V2 (2-byte).
    pub version: MessageVersion,
    /// Topic.
    pub topic: &'a str,
    /// Queue id.
    pub queue_id: i32,
    /// The user's message flag.
    pub flag: i32,
    /// Offset in the consume queue.
    pub queue_offset: i64,
    /// Commit-log (physical) offset.
    pub commit_log_offset: i64,
    /// System flag, written as given except the host bits 4/5, which follow
    /// the address families of `born_host` and `store_host`.
    pub sys_flag: i32,
    /// Producer timestamp, ms since the epoch.
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// Broker timestamp, ms since the epoch.
    pub store_timestamp: i64,
    /// Broker address.
    pub store_host: SocketAddr,
    /// Number of previous deliveries via retry.
    pub reconsume_times: i32,
    /// Prepared-transaction offset.
    pub prepared_transaction_offset: i64,
    /// BODYCRC (see [`body_crc`](super::body_crc)).
    pub body_crc: i32,
    /// The body as stored.
    pub body: &'a [u8],
    /// The encoded properties string.
    pub properties: &'a str,
}

impl StoredRecord<'_> {
    /// TOTALSIZE of the record, or `None` if it exceeds 2 GiB.
    pub fn encoded_len(&self) -> Option<usize> {
        let host_len = |h: SocketAddr| if h.is_ipv6() { 20 } else { 8 };
        let topic_len_size = match self.version {
            MessageVersion::V1 => 1,
            MessageVersion::V2 => 2,
        };
        let fixed = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8 + 4 + 2;
        let total = [
            fixed,
            host_len(self.born_host),
            host_len(self.store_host),
            self.body.len(),
            topic_len_size,
            self.topic.len(),
            self.properties.len(),
        ]
        .iter()
        .try_fold(0usize, |a, b| a.checked_add(*b))?;
        i32::try_from(total).ok()?;
        Some(total)
    }
}

/// Encodes one stored record from its raw fields ([`StoredRecord`]), without
/// touching the body: what a broker's commit log holds for a message it
/// stored, and what a pull answer carries. **For fake brokers and tools.**
///
/// # Errors
///
/// [`Error::Encode`] for a topic too long for the version (V1: 255 bytes,
/// V2: 32767), a properties string over 32767 bytes or a record over 2 GiB.
pub fn encode_stored_record(r: &StoredRecord<'_>) -> Result<Bytes> {
    let mut flag = r.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
    if r.born_host.is_ipv6() {
        flag |= sys_flag::BORNHOST_V6;
    }
    if r.store_host.is_ipv6() {
        flag |= sys_flag::STOREHOST_V6;
    }
    let topic = r.topic.as_bytes();
    let topic_max = match r.version {
        MessageVersion::V1 => usize::from(u8::MAX),
        MessageVersion::V2 => usize::from(i16::MAX.unsigned_abs()),
    };
    if topic.len() > topic_max {
        return Err(Error::Encode(format!(
            "topic of {} bytes is too long for a {:?} stored message (at most {topic_max})",
            topic.len(),
            r.version
        )));
    }
    let props_len = i16::try_from(r.properties.len()).map_err(|_| {
        Error::Encode(format!(
            "properties string of {} bytes exceeds the limit of {MAX_PROPERTIES_LEN} bytes",
            r.properties.len()
        ))
    })?;
    let too_big = || Error::Encode("stored message over 2 GiB".to_owned());
    let total = r.encoded_len().ok_or_else(too_big)?;
    let total_i32 = i32::try_from(total).map_err(|_| too_big())?;
    let body_len = i32::try_from(r.body.len()).map_err(|_| too_big())?;

    let mut out = BytesMut::with_capacity(total);
    out.put_i32(total_i32);
    out.put_i32(r.version.magic_code());
    out.put_i32(r.body_crc);
    out.put_i32(r.queue_id);
    out.put_i32(r.flag);
    out.put_i64(r.queue_offset);
    out.put_i64(r.commit_log_offset);
    out.put_i32(flag);
    out.put_i64(r.born_timestamp);
    put_host(&mut out, r.born_host);
    out.put_i64(r.store_timestamp);
    put_host(&mut out, r.store_host);
    out.put_i32(r.reconsume_times);
    out.put_i64(r.prepared_transaction_offset);
    out.put_i32(body_len);
    out.put_slice(r.body);
    match r.version {
        MessageVersion::V1 => out.put_u8(u8::try_from(topic.len()).map_err(|_| too_big())?),
        MessageVersion::V2 => out.put_i16(i16::try_from(topic.len()).map_err(|_| too_big())?),
    }
    out.put_slice(topic);
    out.put_i16(props_len);
    out.put_slice(r.properties.as_bytes());
    Ok(out.freeze())
}

fn put_host(out: &mut BytesMut, host: SocketAddr) {
    match host.ip() {
        std::net::IpAddr::V4(ip) => out.put_slice(&ip.octets()),
        std::net::IpAddr::V6(ip) => out.put_slice(&ip.octets()),
    }
    out.put_i32(i32::from(host.port()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Properties, body_crc, decode_message, property};
    use std::net::{Ipv4Addr, SocketAddrV4};

    #[test]
    fn raw_record_keeps_a_compressed_body_and_its_sys_flag() {
        let plain = b"stored as sent ".repeat(40);
        let codec = CompressionType::Zlib;
        let stored = codec.compress(&plain, 5).unwrap();
        let host = |p| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, p));
        let props = encode_properties(&Properties::from_iter([(property::TAGS, "t")]));
        let record = StoredRecord {
            version: MessageVersion::V1,
            topic: "T",
            queue_id: 2,
            flag: 7,
            queue_offset: 9,
            commit_log_offset: 4096,
            sys_flag: codec.sys_flag_bits(),
            born_timestamp: 1,
            born_host: host(5000),
            store_timestamp: 2,
            store_host: host(10911),
            reconsume_times: 3,
            prepared_transaction_offset: 0,
            body_crc: body_crc(&stored),
            body: &stored,
            properties: &props,
        };
        let bytes = encode_stored_record(&record).unwrap();
        assert_eq!(Some(bytes.len()), record.encoded_len());
        let msg = decode_message(&bytes).unwrap();
        assert_eq!(msg.message.body, plain);
        assert_eq!(
            msg.sys_flag,
            codec.sys_flag_bits() & !sys_flag::COMPRESSED,
            "bit 0 cleared on decode"
        );
        assert_eq!(msg.queue_offset, 9);
        assert_eq!(msg.commit_log_offset, 4096);
        assert_eq!(msg.reconsume_times, 3);
        assert_eq!(msg.message.tags(), Some("t"));
        assert_eq!(msg.store_size, i32::try_from(bytes.len()).unwrap());
    }
}
