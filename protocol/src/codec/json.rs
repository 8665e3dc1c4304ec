//! The JSON header (serialize type 0).
//!
//! Written like Java's fastjson writes `RemotingCommand`: keys in
//! alphabetical order (`code`, `extFields`, `flag`, `language`, `opaque`,
//! `remark`, `serializeTypeCurrentRPC`, `version`), `remark` omitted when
//! `None`, `extFields` omitted when empty, non-ASCII text written raw and
//! control characters escaped. Ext fields are written in key order.
//!
//! Read tolerantly: any key order, unknown keys ignored, `extFields` absent
//! or `null` means none, ext values that are numbers or booleans (or
//! nested JSON) are kept as their JSON text and `null` values are dropped,
//! `language` may be a name (unknown names are `OTHER`), a number or `null`.
//! `code` is required; `version`, `opaque` and `flag` default to 0.

use std::collections::HashMap;
use std::fmt;

use bytes::{BufMut, BytesMut};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::code::LanguageCode;
use crate::command::RemotingCommand;
use crate::error::{Error, Result};

use super::HeaderFields;

/// Decodes a JSON header.
pub(super) fn decode(header: &[u8]) -> Result<HeaderFields> {
    serde_json::from_slice::<JsonHeader>(header)
        .map(|h| h.0)
        .map_err(Error::JsonHeader)
}

struct JsonHeader(HeaderFields);

#[derive(Deserialize)]
#[serde(field_identifier)]
enum Field {
    #[serde(rename = "code")]
    Code,
    #[serde(rename = "language")]
    Language,
    #[serde(rename = "version")]
    Version,
    #[serde(rename = "opaque")]
    Opaque,
    #[serde(rename = "flag")]
    Flag,
    #[serde(rename = "remark")]
    Remark,
    #[serde(rename = "extFields")]
    ExtFields,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for JsonHeader {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(HeaderVisitor)
    }
}

struct HeaderVisitor;

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = JsonHeader;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a RocketMQ command header object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<JsonHeader, A::Error> {
        let mut code = None;
        let mut h = HeaderFields::json_defaults();
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Code => code = Some(map.next_value::<i32>()?),
                Field::Language => h.language = map.next_value::<Language>()?.0,
                Field::Version => h.version = map.next_value()?,
                Field::Opaque => h.opaque = map.next_value()?,
                Field::Flag => h.flag = map.next_value()?,
                Field::Remark => h.remark = map.next_value()?,
                Field::ExtFields => h.ext_fields = map.next_value::<ExtFields>()?.0,
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        h.code = code.ok_or_else(|| de::Error::missing_field("code"))?;
        Ok(JsonHeader(h))
    }
}

/// `language`: a name, a byte value, or null.
struct Language(LanguageCode);

impl<'de> Deserialize<'de> for Language {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Language;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a language name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Language, E> {
                Ok(Language(LanguageCode::from_name(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Language, E> {
                Ok(Language(
                    u8::try_from(v).map_or(LanguageCode::Other, LanguageCode::from_code),
                ))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Language, E> {
                Ok(Language(
                    u8::try_from(v).map_or(LanguageCode::Other, LanguageCode::from_code),
                ))
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Language, E> {
                Ok(Language(LanguageCode::Other))
            }
        }
        d.deserialize_any(V)
    }
}

/// `extFields`: an object (values converted to text) or null.
struct ExtFields(HashMap<String, String>);

impl<'de> Deserialize<'de> for ExtFields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ExtFields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of header fields")
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<ExtFields, E> {
                Ok(ExtFields(HashMap::new()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<ExtFields, A::Error> {
                let mut fields = HashMap::with_capacity(map.size_hint().unwrap_or(8).min(64));
                while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
                    let text = match value {
                        serde_json::Value::String(s) => s,
                        serde_json::Value::Null => continue,
                        serde_json::Value::Bool(b) => b.to_string(),
                        serde_json::Value::Number(n) => n.to_string(),
                        nested => nested.to_string(),
                    };
                    fields.insert(key, text);
                }
                Ok(ExtFields(fields))
            }
        }
        d.deserialize_any(V)
    }
}

/// An upper bound guess of the encoded header size (exact unless strings
/// need escaping), for reserving.
pub(super) fn estimate_len(cmd: &RemotingCommand) -> usize {
    // Keys and punctuation (98 bytes, `extFields` wrapper included), the
    // longest language name (9 with quotes) and four i32 values of at most
    // 11 characters each.
    const FIXED: usize = 98 + 9 + 44;
    let remark = cmd.remark.as_ref().map_or(0, |r| r.len() + 12);
    cmd.ext_fields
        .iter()
        .fold(FIXED.saturating_add(remark), |acc, (k, v)| {
            acc.saturating_add(6)
                .saturating_add(k.len())
                .saturating_add(v.len())
        })
}

/// Appends `cmd`'s header as fastjson-style JSON to `dst`; `ext_members`,
/// when given, are the pre-encoded members of `extFields` (and
/// `cmd.ext_fields` is not read).
pub(super) fn encode(cmd: &RemotingCommand, ext_members: Option<&[u8]>, dst: &mut BytesMut) {
    dst.put_slice(b"{\"code\":");
    put_i32(dst, cmd.code);
    let has_ext = ext_members.map_or(!cmd.ext_fields.is_empty(), |m| !m.is_empty());
    if has_ext {
        dst.put_slice(b",\"extFields\":{");
        match ext_members {
            Some(members) => dst.put_slice(members),
            None => put_ext_fields(cmd, dst),
        }
        dst.put_u8(b'}');
    }
    dst.put_slice(b",\"flag\":");
    put_i32(dst, cmd.flag);
    dst.put_slice(b",\"language\":");
    put_str(dst, cmd.language.name());
    dst.put_slice(b",\"opaque\":");
    put_i32(dst, cmd.opaque);
    if let Some(remark) = &cmd.remark {
        dst.put_slice(b",\"remark\":");
        put_str(dst, remark);
    }
    dst.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    put_i32(dst, cmd.version);
    dst.put_u8(b'}');
}

/// The members of `cmd`'s ext-field map, in key order.
fn put_ext_fields(cmd: &RemotingCommand, dst: &mut BytesMut) {
    let mut entries: Vec<(&String, &String)> = cmd.ext_fields.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            dst.put_u8(b',');
        }
        put_str(dst, key);
        dst.put_u8(b':');
        put_str(dst, value);
    }
}

/// Writes an `i32` in decimal without allocating.
fn put_i32(dst: &mut BytesMut, v: i32) {
    dst.put_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Whether `bytes` holds a byte a JSON string must escape (`"`, `\`, a
/// control character). Scans every byte without stopping early, so the loop
/// runs on vector registers: the answer is almost always "no".
fn needs_escape(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |acc, &b| {
        acc | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// Writes a JSON string literal: `"` and `\` escaped, control characters
/// escaped (short forms where JSON has them), everything else raw UTF-8.
pub(crate) fn put_str(dst: &mut BytesMut, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    dst.put_u8(b'"');
    let bytes = s.as_bytes();
    // Header keys and values almost never need escaping: one scan, one copy.
    if !needs_escape(bytes) {
        dst.put_slice(bytes);
        dst.put_u8(b'"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            0..=0x1f => 0,
            _ => continue,
        };
        dst.put_slice(bytes.get(start..i).unwrap_or_default());
        start = i + 1;
        if short == 0 {
            dst.put_slice(b"\\u00");
            dst.put_u8(HEX.get(usize::from(b >> 4)).copied().unwrap_or(b'0'));
            dst.put_u8(HEX.get(usize::from(b & 0xf)).copied().unwrap_or(b'0'));
        } else {
            dst.put_u8(b'\\');
            dst.put_u8(short);
        }
    }
    dst.put_slice(bytes.get(start..).unwrap_or_default());
    dst.put_u8(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{RequestCode, SerializeType};
    use crate::codec::testing;

    const JAVA_ROUTE_QUERY: &str = r#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#;

    fn java_route_query() -> RemotingCommand {
        testing::route_query(SerializeType::Json, LanguageCode::Java)
    }

    #[test]
    fn reproduces_the_java_route_query_bytes() {
        let mut dst = BytesMut::new();
        encode(&java_route_query(), None, &mut dst);
        assert_eq!(std::str::from_utf8(&dst).unwrap(), JAVA_ROUTE_QUERY);
        assert_eq!(dst.len(), 131);
        assert!(estimate_len(&java_route_query()) >= dst.len());
    }

    #[test]
    fn decodes_the_java_route_query() {
        let h = decode(JAVA_ROUTE_QUERY.as_bytes()).unwrap();
        testing::assert_route_query(&h, LanguageCode::Java);
    }

    #[test]
    fn keys_are_alphabetical_and_remark_is_written_when_present() {
        let mut cmd = java_route_query().with_ext_field("a", "1");
        cmd.remark = Some("boom".into());
        cmd.code = -7;
        cmd.opaque = i32::MIN;
        cmd.flag = i32::MAX;
        let mut dst = BytesMut::new();
        encode(&cmd, None, &mut dst);
        assert_eq!(
            std::str::from_utf8(&dst).unwrap(),
            r#"{"code":-7,"extFields":{"a":"1","topic":"TopicTest"},"flag":2147483647,"language":"JAVA","opaque":-2147483648,"remark":"boom","serializeTypeCurrentRPC":"JSON","version":479}"#
        );
    }

    #[test]
    fn empty_ext_fields_are_omitted() {
        let mut dst = BytesMut::new();
        encode(
            &RemotingCommand::new_request(RequestCode::HEART_BEAT),
            None,
            &mut dst,
        );
        assert_eq!(
            std::str::from_utf8(&dst).unwrap(),
            r#"{"code":34,"flag":0,"language":"RUST","opaque":0,"serializeTypeCurrentRPC":"JSON","version":401}"#
        );
    }

    #[test]
    fn strings_are_escaped_and_round_trip() {
        let nasty = "q\"b\\s/n\nr\rt\tb\u{8}f\u{c}z\u{0}u\u{1f}é漢🎉\u{7f}";
        let cmd = java_route_query()
            .with_ext_field(nasty, nasty)
            .with_ext_field("", "");
        let mut cmd = cmd;
        cmd.remark = Some(nasty.into());
        let mut dst = BytesMut::new();
        encode(&cmd, None, &mut dst);
        let text = std::str::from_utf8(&dst).unwrap();
        assert!(
            text.contains(r#"q\"b\\s/n\nr\rt\tb\bf\fz\u0000u\u001fé漢🎉"#),
            "{text}"
        );
        // serde_json agrees it is valid JSON with the same content.
        let v: serde_json::Value = serde_json::from_slice(&dst).unwrap();
        assert_eq!(v["remark"], nasty);
        let h = decode(&dst).unwrap();
        assert_eq!(h.remark.as_deref(), Some(nasty));
        assert_eq!(h.ext_fields[nasty], nasty);
        assert_eq!(h.ext_fields[""], "");
    }

    #[test]
    fn tolerates_odd_peers() {
        // Go client order, remark "", unknown keys, numeric and boolean values,
        // a null value, a nested value, unknown language name.
        let text = r#"{"code":0,"language":"KOTLIN","version":317,"opaque":9,"flag":1,"remark":"",
            "extFields":{"queueId":3,"ok":true,"big":12345678901234,"f":1.5,"n":null,"o":{"x":[1]}},
            "serializeTypeCurrentRPC":"JSON","whatever":[1,{"a":null}]}"#;
        let h = decode(text.as_bytes()).unwrap();
        assert_eq!(h.language, LanguageCode::Other);
        assert_eq!(h.version, 317);
        assert_eq!(h.opaque, 9);
        assert_eq!(h.flag, 1);
        assert_eq!(h.remark.as_deref(), Some(""));
        assert_eq!(h.ext_fields["queueId"], "3");
        assert_eq!(h.ext_fields["ok"], "true");
        assert_eq!(h.ext_fields["big"], "12345678901234");
        assert_eq!(h.ext_fields["f"], "1.5");
        assert_eq!(h.ext_fields["o"], r#"{"x":[1]}"#);
        assert!(!h.ext_fields.contains_key("n"));
    }

    #[test]
    fn minimal_header_and_null_fields() {
        let h = decode(br#"{"code":17}"#).unwrap();
        assert_eq!(h.code, 17);
        assert_eq!(h.language, LanguageCode::Other);
        assert!(h.ext_fields.is_empty());
        let h = decode(br#"{"code":17,"language":null,"remark":null,"extFields":null}"#).unwrap();
        assert_eq!(h.remark, None);
        assert!(h.ext_fields.is_empty());
        let h = decode(br#"{"code":17,"language":12}"#).unwrap();
        assert_eq!(h.language, LanguageCode::Rust);
    }

    #[test]
    fn bad_json_is_a_typed_error() {
        for bad in [
            &b""[..],
            b"{",
            b"[]",
            b"null",
            b"{\"code\":\"105\"}",
            b"{\"code\":1e3}",
            b"{\"code\":4294967296}",
            b"{\"opaque\":1}",
            b"{\"code\":1,\"extFields\":[]}",
            b"{\"code\":1,\"remark\":5}",
            b"{\"code\":1} trailing",
            b"{\"code\":1,\"remark\":\"\xff\"}",
        ] {
            assert!(
                matches!(decode(bad), Err(Error::JsonHeader(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn put_i32_matches_display() {
        for v in [
            0,
            1,
            -1,
            9,
            10,
            479,
            -2_147_483_648,
            2_147_483_647,
            1_000_000,
        ] {
            let mut dst = BytesMut::new();
            put_i32(&mut dst, v);
            assert_eq!(std::str::from_utf8(&dst).unwrap(), v.to_string());
        }
    }
}
