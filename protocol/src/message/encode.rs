//! Encoding the stored format (Java `MessageDecoder.encode`, the layout of `CommitLog`), as a broker writes
//! it. For tests, fake brokers and tools: clients never send this format.

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
    let mut flag =
        msg.sys_flag & !(sys_flag::COMPRESSED | sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
    if msg.born_host.is_ipv6() {
        flag |= sys_flag::BORNHOST_V6;
    }
    if msg.store_host.is_ipv6() {
        flag |= sys_flag::STOREHOST_V6;
    }
    let body = match compression {
        Some(codec) => {
            flag = (flag & !sys_flag::COMPRESSION_TYPE_MASK) | codec.sys_flag_bits();
            codec.compress(&msg.message.body, DEFAULT_COMPRESS_LEVEL)?
        }
        None => msg.message.body.clone(),
    };

    let topic = msg.message.topic.as_bytes();
    let topic_len_size = match version {
        MessageVersion::V1 => 1,
        MessageVersion::V2 => 2,
    };
    let topic_max = match version {
        MessageVersion::V1 => usize::from(u8::MAX),
        MessageVersion::V2 => usize::from(i16::MAX.unsigned_abs()),
    };
    if topic.len() > topic_max {
        return Err(Error::Encode(format!(
            "topic of {} bytes is too long for a {version:?} stored message (at most {topic_max})",
            topic.len()
        )));
    }
    validate_properties(&msg.message.properties)?;
    let props = encode_properties(&msg.message.properties);
    let props_len = i16::try_from(props.len()).map_err(|_| {
        Error::Encode(format!(
            "properties string of {} bytes exceeds the limit of {MAX_PROPERTIES_LEN} bytes",
            props.len()
        ))
    })?;

    let host_len = |v6: bool| if v6 { 20 } else { 8 };
    let fixed = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8 + 4 + 2;
    let too_big = || Error::Encode("stored message over 2 GiB".to_owned());
    let total = [
        fixed,
        host_len(msg.born_host.is_ipv6()),
        host_len(msg.store_host.is_ipv6()),
        body.len(),
        topic_len_size,
        topic.len(),
        props.len(),
    ]
    .iter()
    .try_fold(0usize, |a, b| a.checked_add(*b))
    .ok_or_else(too_big)?;
    let total_i32 = i32::try_from(total).map_err(|_| too_big())?;
    let body_len = i32::try_from(body.len()).map_err(|_| too_big())?;

    let mut out = BytesMut::with_capacity(total);
    out.put_i32(total_i32);
    out.put_i32(version.magic_code());
    out.put_i32(msg.body_crc);
    out.put_i32(msg.queue_id);
    out.put_i32(msg.message.flag);
    out.put_i64(msg.queue_offset);
    out.put_i64(msg.commit_log_offset);
    out.put_i32(flag);
    out.put_i64(msg.born_timestamp);
    put_host(&mut out, msg.born_host);
    out.put_i64(msg.store_timestamp);
    put_host(&mut out, msg.store_host);
    out.put_i32(msg.reconsume_times);
    out.put_i64(msg.prepared_transaction_offset);
    out.put_i32(body_len);
    out.put_slice(&body);
    match version {
        MessageVersion::V1 => out.put_u8(u8::try_from(topic.len()).map_err(|_| too_big())?),
        MessageVersion::V2 => out.put_i16(i16::try_from(topic.len()).map_err(|_| too_big())?),
    }
    out.put_slice(topic);
    out.put_i16(props_len);
    out.put_slice(props.as_bytes());
    Ok(out.freeze())
}

fn put_host(out: &mut BytesMut, host: std::net::SocketAddr) {
    match host.ip() {
        std::net::IpAddr::V4(ip) => out.put_slice(&ip.octets()),
        std::net::IpAddr::V6(ip) => out.put_slice(&ip.octets()),
    }
    out.put_i32(i32::from(host.port()));
}
