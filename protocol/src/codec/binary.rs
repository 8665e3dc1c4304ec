//! The ROCKETMQ compact binary header (serialize type 1).
//!
//! Layout (all integers big-endian):
//!
//! ```text
//! code i16 | language u8 | version i16 | opaque i32 | flag i32
//! | remark_len i32 | remark (UTF-8; length 0 = no remark)
//! | ext_len i32 | ext_len bytes of entries:
//!     key_len i16 | key | val_len i32 | value
//! ```
//!
//! Decoding keeps the last value of a key that appears twice (Java's
//! `FastCodesHeader` encoders may write a field twice), reads a zero-length
//! value as the empty string, and ignores bytes after the map area (as
//! Java's decoder does).

use std::collections::HashMap;

use bytes::{BufMut, BytesMut};

use crate::code::LanguageCode;
use crate::command::RemotingCommand;
use crate::error::{Error, Result};

use super::HeaderFields;

/// Size of the fixed part of the header: 2+1+2+4+4+4+4.
pub(super) const FIXED_LEN: usize = 21;

/// A bounds-checked reader over the header bytes.
struct Reader<'a> {
    buf: &'a [u8],
    /// Offset of `buf` within the header, for error messages.
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        match self.buf.split_at_checked(n) {
            Some((head, rest)) => {
                self.buf = rest;
                self.pos += n;
                Ok(head)
            }
            None => Err(Error::BinaryHeader(format!(
                "{what} needs {n} bytes at offset {} but only {} remain",
                self.pos,
                self.buf.len()
            ))),
        }
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let bytes = self.take(N, what)?;
        // `take` returned exactly N bytes.
        <[u8; N]>::try_from(bytes)
            .map_err(|_| Error::BinaryHeader(format!("{what}: internal length mismatch")))
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(u8::from_be_bytes(self.array(what)?))
    }

    fn i16(&mut self, what: &str) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    /// A length field read as `len_value`, which must not be negative.
    fn len(value: i64, what: &str) -> Result<usize> {
        usize::try_from(value)
            .map_err(|_| Error::BinaryHeader(format!("{what} is negative ({value})")))
    }

    fn string(&mut self, len: usize, what: &str) -> Result<String> {
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::BinaryHeader(format!("{what} is not valid UTF-8")))
    }
}

/// Decodes a ROCKETMQ binary header.
pub(super) fn decode(header: &[u8]) -> Result<HeaderFields> {
    let mut r = Reader {
        buf: header,
        pos: 0,
    };
    let code = i32::from(r.i16("code")?);
    let language = LanguageCode::from_code(r.u8("language")?);
    let version = i32::from(r.i16("version")?);
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;

    let remark_len = Reader::len(i64::from(r.i32("remark length")?), "remark length")?;
    let remark = if remark_len == 0 {
        None
    } else {
        Some(r.string(remark_len, "remark")?)
    };

    let ext_len = Reader::len(i64::from(r.i32("ext fields length")?), "ext fields length")?;
    let mut ext_fields = HashMap::new();
    if ext_len > 0 {
        let area_pos = r.pos;
        let area = r.take(ext_len, "ext fields area")?;
        let mut m = Reader {
            buf: area,
            pos: area_pos,
        };
        while !m.buf.is_empty() {
            let key_len = Reader::len(i64::from(m.i16("ext key length")?), "ext key length")?;
            let key = m.string(key_len, "ext key")?;
            let val_len = Reader::len(i64::from(m.i32("ext value length")?), "ext value length")?;
            let value = m.string(val_len, "ext value")?;
            // Later entries win, like Java's HashMap.put.
            ext_fields.insert(key, value);
        }
    }

    Ok(HeaderFields {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
    })
}

/// An upper bound guess of the encoded header size, for reserving.
pub(super) fn estimate_len(cmd: &RemotingCommand) -> usize {
    let remark = cmd.remark.as_ref().map_or(0, String::len);
    cmd.ext_fields
        .iter()
        .fold(FIXED_LEN.saturating_add(remark), |acc, (k, v)| {
            acc.saturating_add(6)
                .saturating_add(k.len())
                .saturating_add(v.len())
        })
}

fn encode_err(what: &str, value: impl std::fmt::Display, limit: &str) -> Error {
    Error::Encode(format!(
        "{what} {value} does not fit the ROCKETMQ binary header ({limit}); send this command with a JSON header"
    ))
}

fn i32_len(len: usize, what: &str) -> Result<i32> {
    i32::try_from(len).map_err(|_| encode_err(what, len, "at most 2147483647 bytes"))
}

/// Appends `cmd`'s header in ROCKETMQ binary form to `dst`.
///
/// Entries are written in key order so that equal commands encode to equal
/// bytes.
///
/// # Errors
///
/// [`Error::Encode`] when the code or version does not fit an `i16`, or a key
/// is longer than 32767 bytes. `dst` may then hold a partial header; the
/// caller truncates it.
pub(super) fn encode(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<()> {
    let code =
        i16::try_from(cmd.code).map_err(|_| encode_err("code", cmd.code, "an i16 is required"))?;
    let version = i16::try_from(cmd.version)
        .map_err(|_| encode_err("version", cmd.version, "an i16 is required"))?;

    dst.put_i16(code);
    dst.put_u8(cmd.language.code());
    dst.put_i16(version);
    dst.put_i32(cmd.opaque);
    dst.put_i32(cmd.flag);
    match &cmd.remark {
        Some(remark) => {
            dst.put_i32(i32_len(remark.len(), "remark length")?);
            dst.put_slice(remark.as_bytes());
        }
        None => dst.put_i32(0),
    }

    let ext_len_pos = dst.len();
    dst.put_i32(0);
    let mut entries: Vec<(&String, &String)> = cmd.ext_fields.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (key, value) in entries {
        let key_len = i16::try_from(key.len())
            .map_err(|_| encode_err("ext key length", key.len(), "at most 32767 bytes"))?;
        dst.put_i16(key_len);
        dst.put_slice(key.as_bytes());
        dst.put_i32(i32_len(value.len(), "ext value length")?);
        dst.put_slice(value.as_bytes());
    }
    let area_len = dst
        .len()
        .checked_sub(ext_len_pos + 4)
        .ok_or_else(|| Error::Encode("ext fields area length underflow".into()))?;
    let area_len = i32_len(area_len, "ext fields length")?;
    dst.get_mut(ext_len_pos..ext_len_pos + 4)
        .ok_or_else(|| Error::Encode("ext fields length slot is missing".into()))?
        .copy_from_slice(&area_len.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::SerializeType;
    use crate::codec::testing;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn route_query() -> RemotingCommand {
        testing::route_query(SerializeType::RocketMq, LanguageCode::Rust)
    }

    const WORKED_HEADER: &str = "0069 0c 01df 00000001 00000000 00000000 00000014 \
                                 0005 746f706963 00000009 546f70696354657374";

    #[test]
    fn reference_worked_example_encodes_exactly() {
        let mut dst = BytesMut::new();
        encode(&route_query(), &mut dst).unwrap();
        assert_eq!(dst.len(), 41);
        assert_eq!(&dst[..], &hex(WORKED_HEADER)[..]);
    }

    #[test]
    fn reference_worked_example_decodes() {
        let h = decode(&hex(WORKED_HEADER)).unwrap();
        testing::assert_route_query(&h, LanguageCode::Rust);
    }

    #[test]
    fn later_duplicate_keys_win_and_empty_values_are_empty_strings() {
        let mut area = Vec::new();
        for (k, v) in [("a", "1"), ("b", ""), ("a", "2")] {
            area.extend_from_slice(&i16::try_from(k.len()).unwrap().to_be_bytes());
            area.extend_from_slice(k.as_bytes());
            area.extend_from_slice(&i32::try_from(v.len()).unwrap().to_be_bytes());
            area.extend_from_slice(v.as_bytes());
        }
        let mut h = hex("000b 00 0191 00000007 00000001 00000002 6869");
        h.extend_from_slice(&i32::try_from(area.len()).unwrap().to_be_bytes());
        h.extend_from_slice(&area);
        let d = decode(&h).unwrap();
        assert_eq!(d.code, 11);
        assert_eq!(d.language, LanguageCode::Java);
        assert_eq!(d.version, 401);
        assert_eq!(d.flag, 1);
        assert_eq!(d.remark.as_deref(), Some("hi"));
        assert_eq!(d.ext_fields.len(), 2);
        assert_eq!(d.ext_fields["a"], "2");
        assert_eq!(d.ext_fields["b"], "");
    }

    #[test]
    fn every_truncation_is_an_error() {
        let full = hex(WORKED_HEADER);
        for cut in 0..full.len() {
            let err = decode(&full[..cut]).unwrap_err();
            assert!(matches!(err, Error::BinaryHeader(_)), "cut {cut}: {err:?}");
        }
    }

    #[test]
    fn negative_lengths_and_bad_utf8_are_errors() {
        let neg_remark = hex("0069 0c 01df 00000001 00000000 ffffffff 00000000");
        assert!(
            matches!(decode(&neg_remark), Err(Error::BinaryHeader(m)) if m.contains("negative"))
        );
        let neg_ext = hex("0069 0c 01df 00000001 00000000 00000000 80000000");
        assert!(matches!(decode(&neg_ext), Err(Error::BinaryHeader(m)) if m.contains("negative")));
        let neg_key = hex("0069 0c 01df 00000001 00000000 00000000 00000002 ffff");
        assert!(matches!(decode(&neg_key), Err(Error::BinaryHeader(m)) if m.contains("negative")));
        let bad_utf8 = hex("0069 0c 01df 00000001 00000000 00000001 ff 00000000");
        assert!(matches!(decode(&bad_utf8), Err(Error::BinaryHeader(m)) if m.contains("UTF-8")));
    }

    #[test]
    fn trailing_bytes_after_the_map_are_ignored() {
        let mut h = hex(WORKED_HEADER);
        h.extend_from_slice(&[1, 2, 3]);
        assert_eq!(decode(&h).unwrap().ext_fields["topic"], "TopicTest");
    }

    #[test]
    fn codes_and_versions_outside_i16_are_refused() {
        let mut dst = BytesMut::new();
        let mut cmd = route_query();
        cmd.code = 200_052;
        assert!(matches!(encode(&cmd, &mut dst), Err(Error::Encode(m)) if m.contains("code")));
        let mut cmd = route_query();
        cmd.version = 40_000;
        assert!(matches!(encode(&cmd, &mut dst), Err(Error::Encode(m)) if m.contains("version")));
        let cmd = route_query().with_ext_field("k".repeat(40_000), "v");
        assert!(matches!(encode(&cmd, &mut dst), Err(Error::Encode(m)) if m.contains("key")));
    }

    #[test]
    fn unknown_language_byte_round_trips() {
        let mut cmd = route_query();
        cmd.language = LanguageCode::Unknown(77);
        cmd.remark = Some("ünïcode".into());
        let mut dst = BytesMut::new();
        encode(&cmd, &mut dst).unwrap();
        assert!(estimate_len(&cmd) >= dst.len());
        let h = decode(&dst).unwrap();
        assert_eq!(h.language, LanguageCode::Unknown(77));
        assert_eq!(h.remark.as_deref(), Some("ünïcode"));
    }
}
