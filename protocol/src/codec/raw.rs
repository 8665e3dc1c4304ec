//! [`RawCommand`]: a decoded frame whose ext fields stay where they are in
//! the frame until someone asks for them.
//!
//! Decoding a [`RemotingCommand`] builds its ext-field map: a `String` per
//! key and per value, and a hash insert each. A caller that reads a few
//! fields into a typed header once (a pull or send answer) pays that for
//! nothing. A [`RawCommand`] keeps a JSON header's ext fields as positions in
//! the frame and reads a typed header straight from them
//! ([`RawCommand::decode_header`]); [`RawCommand::into_command`] builds the
//! same [`RemotingCommand`] the map decoder would have.
//!
//! A small scanner reads headers the way brokers write them: the known
//! members, integers, strings without escapes, `extFields` an object of
//! such strings. Any other header (escapes, unknown members, numbers in
//! `extFields`, bad syntax), and every binary header, is decoded by the map
//! decoder, so its rules and its errors hold unchanged.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use bytes::{Bytes, BytesMut};
use bytestring::ByteString;
use tokio_util::codec::Decoder;

use crate::code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
use crate::command::{FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand};
use crate::error::{Error, Result};
use crate::header::{CommandHeader, FieldSource};

use super::frame::{HeaderFields, RemotingCodec, decode_header, header_and_body};

/// A decoded command whose ext fields are read on demand. Made by
/// [`RawCodec`].
///
/// Decoding a [`RemotingCommand`] builds its ext-field map: a `String` per
/// key and per value, and a hash insert each. A `RawCommand` keeps a JSON
/// header's fields as positions in the frame, reads a typed header straight from them
/// ([`decode_header`](Self::decode_header)), and converts into the very
/// command the map decoder makes ([`into_command`](Self::into_command)).
/// Binary headers, and JSON headers other than the plain ones brokers
/// write, are decoded by the map decoder.
#[derive(Clone)]
pub struct RawCommand {
    code: i32,
    language: LanguageCode,
    version: i32,
    opaque: i32,
    flag: i32,
    remark: Option<String>,
    ext: Ext,
    body: Bytes,
    serialize_type: SerializeType,
}

#[derive(Clone)]
enum Ext {
    /// Decoded by the map decoder (or converted from a command).
    Map(HashMap<String, String>),
    /// The JSON header (checked UTF-8 once, when the frame was read) and
    /// its `extFields` entries, in order.
    Json {
        header: ByteString,
        fields: Vec<(Text, Text)>,
    },
}

/// A key or value of a JSON header's `extFields`: its place in the header,
/// between two quotes (so on char boundaries), free of escapes.
#[derive(Clone)]
struct Text(Range<usize>);

impl Text {
    fn bytes<'a>(&self, header: &'a str) -> &'a [u8] {
        header.as_bytes().get(self.0.clone()).unwrap_or_default()
    }

    /// Whether this is `key` (lengths compared first: most keys differ there).
    fn is(&self, header: &str, key: &str) -> bool {
        self.0.len() == key.len() && self.bytes(header) == key.as_bytes()
    }

    fn str<'a>(&self, header: &'a str) -> &'a str {
        header.get(self.0.clone()).unwrap_or_default()
    }
}

impl RawCommand {
    /// Request or response code.
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The code read as a request code.
    pub fn request_code(&self) -> RequestCode {
        RequestCode(self.code)
    }

    /// The code read as a response code.
    pub fn response_code(&self) -> ResponseCode {
        ResponseCode(self.code)
    }

    /// Request id; a response repeats its request's value.
    pub fn opaque(&self) -> i32 {
        self.opaque
    }

    /// The flag bits ([`FLAG_RESPONSE`], [`FLAG_ONEWAY`]).
    pub fn flag(&self) -> i32 {
        self.flag
    }

    /// Whether this is a response (flag bit 0).
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// Whether this is a oneway request (flag bit 1).
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// The remark, if any.
    pub fn remark(&self) -> Option<&str> {
        self.remark.as_deref()
    }

    /// The body; empty when the frame has none.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// Takes the body out, leaving an empty one.
    pub fn take_body(&mut self) -> Bytes {
        std::mem::take(&mut self.body)
    }

    /// One ext field's value; when a key appears twice, the later entry
    /// (as in the map).
    pub fn ext_field(&self, key: &str) -> Option<&str> {
        match &self.ext {
            Ext::Map(map) => map.get(key).map(String::as_str),
            Ext::Json { header, fields } => fields
                .iter()
                .rev()
                .find(|(k, _)| k.is(header, key))
                .map(|(_, v)| v.str(header)),
        }
    }

    /// Decodes the ext fields as the typed header `H`, without building the
    /// map for headers declared in this crate.
    ///
    /// # Errors
    ///
    /// As [`RemotingCommand::decode_header`].
    pub fn decode_header<H: CommandHeader>(&self) -> Result<H> {
        H::read_from_source(self)
    }

    /// The command the map decoder makes of the same frame.
    pub fn into_command(self) -> RemotingCommand {
        let ext_fields = match self.ext {
            Ext::Map(map) => map,
            Ext::Json { header, fields } => {
                let mut map = HashMap::with_capacity(fields.len());
                for (k, v) in fields {
                    map.insert(k.str(&header).to_owned(), v.str(&header).to_owned());
                }
                map
            }
        };
        RemotingCommand {
            code: self.code,
            language: self.language,
            version: self.version,
            opaque: self.opaque,
            flag: self.flag,
            remark: self.remark,
            ext_fields,
            body: self.body,
            serialize_type: self.serialize_type,
        }
    }
}

impl FieldSource for RawCommand {
    fn field(&self, key: &str) -> Option<&str> {
        self.ext_field(key)
    }

    fn to_ext_fields(&self) -> crate::header::ExtFields {
        match &self.ext {
            Ext::Map(map) => map.clone(),
            Ext::Json { header, fields } => fields
                .iter()
                .map(|(k, v)| (k.str(header).to_owned(), v.str(header).to_owned()))
                .collect(),
        }
    }
}

impl From<RemotingCommand> for RawCommand {
    fn from(cmd: RemotingCommand) -> Self {
        RawCommand {
            code: cmd.code,
            language: cmd.language,
            version: cmd.version,
            opaque: cmd.opaque,
            flag: cmd.flag,
            remark: cmd.remark,
            ext: Ext::Map(cmd.ext_fields),
            body: cmd.body,
            serialize_type: cmd.serialize_type,
        }
    }
}

impl fmt::Debug for RawCommand {
    /// The ext fields as a map, like [`RemotingCommand`]'s.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut fields: Vec<(&str, &str)> = match &self.ext {
            Ext::Map(map) => map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
            Ext::Json { header, fields } => fields
                .iter()
                .map(|(k, v)| (k.str(header), v.str(header)))
                .collect(),
        };
        fields.sort_unstable();
        f.debug_struct("RawCommand")
            .field("code", &self.code)
            .field("language", &self.language)
            .field("version", &self.version)
            .field("opaque", &self.opaque)
            .field("flag", &self.flag)
            .field("remark", &self.remark)
            .field("ext_fields", &fields)
            .field("body_len", &self.body.len())
            .field("serialize_type", &self.serialize_type)
            .finish()
    }
}

/// Decodes frames as [`RawCommand`]s; the framing (and its limits) is
/// [`RemotingCodec`]'s.
#[derive(Debug, Clone, Default)]
pub struct RawCodec {
    inner: RemotingCodec,
}

impl From<RemotingCodec> for RawCodec {
    fn from(inner: RemotingCodec) -> Self {
        RawCodec { inner }
    }
}

impl Decoder for RawCodec {
    type Item = RawCommand;
    type Error = Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RawCommand>, Error> {
        self.inner.decode_with(src, parse_raw)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<RawCommand>, Error> {
        self.inner.decode_eof_with(src, parse_raw)
    }
}

/// Splits a whole frame (length word excluded) into a [`RawCommand`].
fn parse_raw(
    frame: Bytes,
    header_len: usize,
    serialize_type: SerializeType,
) -> Result<RawCommand, Error> {
    let (header, body) = header_and_body(&frame, header_len)?;
    if serialize_type == SerializeType::Json {
        // The one UTF-8 check of the header: every string in it is then valid
        // text (its quotes are ASCII), read by slicing.
        if let Ok(text) = ByteString::try_from(frame.slice_ref(header)) {
            if let Some(raw) = scan_json(&text) {
                return Ok(raw.into_command_parts(text, body));
            }
        }
    }
    let h = decode_header(header, serialize_type)?;
    Ok(RawCommand::from(h.into_command(body, serialize_type)))
}

/// A JSON header with its ext fields as positions.
struct JsonRaw {
    top: HeaderFields,
    fields: Vec<(Text, Text)>,
}

impl JsonRaw {
    fn into_command_parts(self, header: ByteString, body: Bytes) -> RawCommand {
        let h = self.top;
        RawCommand {
            code: h.code,
            language: h.language,
            version: h.version,
            opaque: h.opaque,
            flag: h.flag,
            remark: h.remark,
            ext: Ext::Json {
                header,
                fields: self.fields,
            },
            body,
            serialize_type: SerializeType::Json,
        }
    }
}

/// Reads a JSON header written the way brokers write it: the known members
/// only, integers, strings without escapes, `extFields` an object of such
/// strings (or null). `None` for anything else (unknown members, escapes,
/// numbers in `extFields`, a syntax error): the map decoder then reads it (and
/// reports its errors), so this only decides how fast, never what.
fn scan_json(text: &str) -> Option<JsonRaw> {
    let header = text.as_bytes();
    // Brokers write compact JSON: no control byte anywhere (checked without stopping early, so
    // on vector registers). Strings are then scanned for their end with memchr.
    let controls = header.iter().fold(false, |acc, &c| acc | (c < 0x20));
    let mut sc = Scanner {
        text,
        b: header,
        i: 0,
        controls,
    };
    let mut code = None;
    let mut top = HeaderFields::json_defaults();
    // Room for a pull or send answer's fields without growing.
    let mut fields = Vec::with_capacity(8);
    sc.ws();
    sc.eat(b'{')?;
    sc.ws();
    if !sc.eat_if(b'}') {
        loop {
            sc.ws();
            let key = sc.string()?;
            sc.ws();
            sc.eat(b':')?;
            sc.ws();
            match header.get(key)? {
                b"code" => code = Some(sc.int()?),
                b"flag" => top.flag = sc.int()?,
                b"opaque" => top.opaque = sc.int()?,
                b"version" => top.version = sc.int()?,
                b"language" => {
                    let name = sc.string()?;
                    top.language = LanguageCode::from_name(sc.text(name)?);
                }
                b"remark" => {
                    top.remark = if sc.eat_lit(b"null") {
                        None
                    } else {
                        let r = sc.string()?;
                        Some(sc.text(r)?.to_owned())
                    };
                }
                b"extFields" => {
                    // A later `extFields` replaces an earlier one, as in the map decoder.
                    fields.clear();
                    if !sc.eat_lit(b"null") {
                        sc.ext_fields(&mut fields)?;
                    }
                }
                b"serializeTypeCurrentRPC" => {
                    sc.string()?;
                }
                _ => return None,
            }
            sc.ws();
            match sc.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    }
    sc.ws();
    if sc.i != header.len() {
        return None;
    }
    top.code = code?;
    Some(JsonRaw { top, fields })
}

/// A cursor over JSON text for [`scan_json`]; every method returns `None`
/// where the text leaves the subset it reads.
struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    /// Whether `b` holds a control byte (whitespace included).
    controls: bool,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn eat_if(&mut self, c: u8) -> bool {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn eat_lit(&mut self, lit: &[u8]) -> bool {
        if self.b.get(self.i..self.i + lit.len()) == Some(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    /// A string without escapes or control characters: its contents.
    fn string(&mut self) -> Option<Range<usize>> {
        self.eat(b'"')?;
        let start = self.i;
        let rest = self.b.get(start..)?;
        let n = if self.controls {
            rest.iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?
        } else {
            memchr::memchr2(b'"', b'\\', rest)?
        };
        if rest.get(n) != Some(&b'"') {
            return None;
        }
        self.i = start + n + 1;
        Some(start..start + n)
    }

    fn text(&self, r: Range<usize>) -> Option<&str> {
        self.text.get(r)
    }

    /// A JSON integer (no fraction, no exponent, no leading zero) that fits
    /// an `i32`.
    fn int(&mut self) -> Option<i32> {
        let negative = self.eat_if(b'-');
        let start = self.i;
        let mut n: i64 = 0;
        while let Some(&c @ b'0'..=b'9') = self.b.get(self.i) {
            n = n.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        if digits == 0 || (digits > 1 && self.b.get(start) == Some(&b'0')) {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.b.get(self.i) {
            return None;
        }
        i32::try_from(if negative { -n } else { n }).ok()
    }

    /// `{"key":"value",...}` of strings only.
    fn ext_fields(&mut self, out: &mut Vec<(Text, Text)>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat_if(b'}') {
            return Some(());
        }
        loop {
            self.ws();
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let value = self.string()?;
            out.push((Text(key), Text(value)));
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BROKER: &str = r#"{"code":0,"extFields":{"suggestWhichBrokerId":"0","nextBeginOffset":"32","minOffset":"0","maxOffset":"100"},"flag":1,"language":"JAVA","opaque":-7,"serializeTypeCurrentRPC":"JSON","version":475}"#;

    fn field<'a>(raw: &'a JsonRaw, header: &'a str, key: &str) -> Option<&'a str> {
        raw.fields
            .iter()
            .rev()
            .find(|(k, _)| k.is(header, key))
            .map(|(_, v)| v.str(header))
    }

    #[test]
    fn the_scanner_reads_headers_as_brokers_write_them() {
        let raw = scan_json(BROKER).expect("scanned");
        assert_eq!(
            (raw.top.code, raw.top.flag, raw.top.opaque, raw.top.version),
            (0, 1, -7, 475)
        );
        assert_eq!(raw.top.language, LanguageCode::Java);
        assert_eq!(field(&raw, BROKER, "nextBeginOffset"), Some("32"));
        assert_eq!(raw.fields.len(), 4);
        let spaced = r#" { "code" : 17 , "remark" : "no route" , "extFields" : null } "#;
        let raw = scan_json(spaced).expect("scanned");
        assert_eq!(raw.top.code, 17);
        assert_eq!(raw.top.remark.as_deref(), Some("no route"));
        assert!(raw.fields.is_empty());
        let raw = scan_json(r#"{"code":0,"remark":null,"extFields":{}}"#).expect("scanned");
        assert_eq!(raw.top.remark, None);
    }

    #[test]
    fn the_scanner_leaves_everything_else_to_the_map_decoder() {
        for header in [
            r#"{"code":0,"extFields":{"a":"x\"y"}}"#,
            r#"{"code":0,"extFields":{"a":1}}"#,
            r#"{"code":0,"extFields":{"a":null}}"#,
            r#"{"code":0,"other":1}"#,
            r#"{"code":1.0}"#,
            r#"{"code":01}"#,
            r#"{"code":2147483648}"#,
            r#"{"code":0,"language":12}"#,
            r#"{"flag":1}"#,
            r#"{"code":0} x"#,
            r#"{"code":0,}"#,
            "{\"code\":0,\"remark\":\"a\nb\"}",
        ] {
            assert!(scan_json(header).is_none(), "{header}");
        }
    }
}
