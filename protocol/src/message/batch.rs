//! The send-side batch encoding (Java `MessageDecoder.encodeMessages`), also the body of
//! a 5.x inner-batch container (§4.10).
//!
//! Each record: TOTALSIZE i32 ‖ MAGICCODE i32 (0) ‖ BODYCRC i32 (0) ‖ FLAG i32
//! ‖ BODYLENGTH i32 ‖ body ‖ PROPERTIESLENGTH i16 ‖ properties string.

use bytes::{BufMut, Bytes, BytesMut};

use super::properties::MAX_PROPERTIES_LEN;
use super::reader::{Reader, record_end};
use super::{Message, Properties};
use crate::error::{Error, Result};

/// Size of a batch record without body and properties.
const RECORD_OVERHEAD: usize = 4 + 4 + 4 + 4 + 4 + 2;
const WHAT: &str = "batch record";

/// Encodes messages as the body of a SEND_BATCH_MESSAGE request (Java
/// `MessageBatch.encode`): per message its flag, body and properties string
/// (its own `TAGS`, `KEYS`, `UNIQ_KEY`, `WAIT`, ...), nothing else.
///
/// The caller (the producer) enforces the batch rules first: one topic, one
/// `WAIT` value, no delay level, no `%RETRY%` topic, a `UNIQ_KEY` on every
/// message, no compression. This function only checks what the encoding
/// itself needs.
///
/// # Errors
///
/// [`Error::Encode`] for an empty batch, a property the properties string
/// cannot carry (see [`validate_properties`](super::validate_properties)), a
/// properties string over 32767 bytes or a record over 2 GiB.
pub fn encode_batch(messages: &[Message]) -> Result<Bytes> {
    if messages.is_empty() {
        return Err(Error::Encode(
            "a batch needs at least one message".to_owned(),
        ));
    }
    let mut props = Vec::with_capacity(messages.len());
    let mut len = 0usize;
    for (i, m) in messages.iter().enumerate() {
        let p = m
            .properties_string()
            .map_err(|e| Error::Encode(format!("message {i} of the batch: {e}")))?;
        let record = record_len(m.body.len(), p.len())
            .ok_or_else(|| Error::Encode(format!("message {i} of the batch is over 2 GiB")))?;
        len = len
            .checked_add(record)
            .ok_or_else(|| Error::Encode("the batch is too large".to_owned()))?;
        props.push(p);
    }
    let mut out = BytesMut::with_capacity(len);
    for (m, p) in messages.iter().zip(&props) {
        let (total, body_len, props_len) = record_fields(m.body.len(), p.len())?;
        out.put_i32(total);
        out.put_i32(0);
        out.put_i32(0);
        out.put_i32(m.flag);
        out.put_i32(body_len);
        out.put_slice(&m.body);
        out.put_i16(props_len);
        out.put_slice(p.as_bytes());
    }
    Ok(out.freeze())
}

/// The size of one record, if it fits an i32.
fn record_len(body: usize, props: usize) -> Option<usize> {
    let n = RECORD_OVERHEAD.checked_add(body)?.checked_add(props)?;
    i32::try_from(n).ok()?;
    Some(n)
}

/// TOTALSIZE, BODYLENGTH and PROPERTIESLENGTH as wire integers.
fn record_fields(body: usize, props: usize) -> Result<(i32, i32, i16)> {
    let too_big = || Error::Encode("batch record over 2 GiB".to_owned());
    let total = record_len(body, props).ok_or_else(too_big)?;
    let total = i32::try_from(total).map_err(|_| too_big())?;
    let body = i32::try_from(body).map_err(|_| too_big())?;
    let props = i16::try_from(props).map_err(|_| {
        Error::Encode(format!(
            "properties string of {props} bytes exceeds the limit of {MAX_PROPERTIES_LEN} bytes"
        ))
    })?;
    Ok((total, body, props))
}

/// One decoded batch record.
pub(super) struct BatchRecord {
    pub(super) size: i32,
    pub(super) body_crc: i32,
    pub(super) flag: i32,
    pub(super) body: Bytes,
    pub(super) properties: Properties,
}

/// Calls `f` for each record of a batch body, in order. Bodies are zero-copy
/// slices of `body`. Same TOTALSIZE rule as stored messages: it must cover
/// the fields read and fit in the bytes left; extra bytes are skipped.
pub(super) fn for_each_record(
    body: &Bytes,
    mut f: impl FnMut(BatchRecord) -> Result<()>,
) -> Result<()> {
    let mut start = 0usize;
    while start < body.len() {
        let end = record_end(body, start, RECORD_OVERHEAD, WHAT)?;
        let mut r = Reader::new(body, start, start.saturating_add(4), end, WHAT);
        let _magic = r.i32("MAGICCODE")?;
        let body_crc = r.i32("BODYCRC")?;
        let flag = r.i32("FLAG")?;
        let body_len = r.len_i32("BODYLENGTH")?;
        let msg_body = r.bytes(body_len, "BODY")?;
        let props_len = r.len_i16("PROPERTIESLENGTH")?;
        let props = r.bytes(props_len, "PROPERTIES")?;
        let properties = Properties::try_from_wire(props)
            .map_err(|e| r.error(format_args!("properties are not valid UTF-8: {e}")))?;
        let size = i32::try_from(end.saturating_sub(start)).unwrap_or(i32::MAX);
        f(BatchRecord {
            size,
            body_crc,
            flag,
            body: msg_body,
            properties,
        })?;
        start = end;
    }
    Ok(())
}

/// Decodes a batch body (the inverse of [`encode_batch`]) into messages of
/// `topic` (the records carry no topic). Bodies are zero-copy slices of
/// `body`. Used to unwrap 5.x inner batches and by tests and tools.
///
/// # Errors
///
/// [`Error::InvalidMessage`] if a record is truncated, its lengths are
/// inconsistent or its properties are not UTF-8.
pub fn decode_batch(body: &Bytes, topic: &str) -> Result<Vec<Message>> {
    let mut out = Vec::new();
    for_each_record(body, |rec| {
        out.push(Message {
            topic: topic.to_owned(),
            flag: rec.flag,
            properties: rec.properties,
            body: rec.body,
        });
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::property;

    #[test]
    fn layout_matches_reference() {
        let m = Message::new("t", "ab").with_flag(7).with_tags("x");
        let b = encode_batch(std::slice::from_ref(&m)).unwrap();
        let props = b"TAGS\x01x\x02";
        let mut want = Vec::new();
        want.extend_from_slice(&(20 + 2 + 2 + i32::try_from(props.len()).unwrap()).to_be_bytes());
        want.extend_from_slice(&0i32.to_be_bytes());
        want.extend_from_slice(&0i32.to_be_bytes());
        want.extend_from_slice(&7i32.to_be_bytes());
        want.extend_from_slice(&2i32.to_be_bytes());
        want.extend_from_slice(b"ab");
        want.extend_from_slice(&i16::try_from(props.len()).unwrap().to_be_bytes());
        want.extend_from_slice(props);
        assert_eq!(&b[..], &want[..]);
    }

    #[test]
    fn round_trip() {
        let msgs = vec![
            Message::new("t", "one")
                .with_keys(["k1", "k2"])
                .with_property(property::UNIQ_KEY, "A"),
            Message::new("t", Bytes::new()).with_flag(-1),
            Message::new("t", vec![0u8; 1000]).with_tags("tag"),
        ];
        let b = encode_batch(&msgs).unwrap();
        assert_eq!(decode_batch(&b, "t").unwrap(), msgs);
    }

    #[test]
    fn rejects() {
        assert!(encode_batch(&[]).is_err());
        let bad = Message::new("t", "x").with_property("k", "a\u{2}b");
        assert!(matches!(encode_batch(&[bad]), Err(Error::Encode(_))));
        let big = Message::new("t", "x").with_property("k", "v".repeat(MAX_PROPERTIES_LEN));
        assert!(matches!(encode_batch(&[big]), Err(Error::Encode(_))));
        let ok = Message::new("t", "x").with_property("k", "v".repeat(MAX_PROPERTIES_LEN - 3));
        assert_eq!(ok.properties_string().unwrap().len(), MAX_PROPERTIES_LEN);
        encode_batch(&[ok]).unwrap();
    }

    #[test]
    fn decode_truncated_and_bad_lengths() {
        let msgs = [Message::new("t", "body").with_tags("a")];
        let b = encode_batch(&msgs).unwrap();
        for cut in 1..b.len() {
            assert!(decode_batch(&b.slice(..cut), "t").is_err(), "cut {cut}");
        }
        // TOTALSIZE larger than the fields: extra bytes skipped.
        let mut padded = b.to_vec();
        padded.extend_from_slice(&[0xEE; 3]);
        let total = i32::try_from(padded.len()).unwrap();
        padded[..4].copy_from_slice(&total.to_be_bytes());
        assert_eq!(decode_batch(&Bytes::from(padded), "t").unwrap(), msgs);
        // Negative body length.
        let mut neg = b.to_vec();
        neg[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(decode_batch(&Bytes::from(neg), "t").is_err());
    }
}
