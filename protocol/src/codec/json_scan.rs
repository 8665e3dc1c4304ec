//! The fast reader of JSON headers written the way brokers write them: the
//! known members, integers, strings without escapes, `extFields` an object
//! of such strings. Its `extFields` stay positions in the header
//! ([`JsonFields`]). Any other header (escapes, unknown members, numbers in
//! `extFields`, bad syntax) is left to the map decoder.

use std::collections::HashMap;
use std::ops::Range;

use bytestring::ByteString;

use crate::code::LanguageCode;

use super::frame::HeaderFields;

/// A key or value of a JSON header's `extFields`: its place in the header,
/// between two quotes (so on char boundaries), free of escapes.
#[derive(Clone)]
pub(super) struct Text(Range<usize>);

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

/// The `extFields` of a scanned JSON header: the header (checked UTF-8
/// once, when the frame was read) and the entries' places in it, in order.
#[derive(Clone)]
pub(super) struct JsonFields {
    header: ByteString,
    fields: Vec<(Text, Text)>,
}

impl JsonFields {
    pub(super) fn new(header: ByteString, fields: Vec<(Text, Text)>) -> Self {
        JsonFields { header, fields }
    }

    /// The value of `key`; when a key appears twice, the later entry (as in
    /// the map).
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .rev()
            .find(|(k, _)| k.is(&self.header, key))
            .map(|(_, v)| v.str(&self.header))
    }

    /// The entries, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields
            .iter()
            .map(|(k, v)| (k.str(&self.header), v.str(&self.header)))
    }

    /// The entries as the map decoder's map (a later key wins).
    pub(super) fn into_map(self) -> HashMap<String, String> {
        let mut map = HashMap::with_capacity(self.fields.len());
        for (k, v) in self.iter() {
            map.insert(k.to_owned(), v.to_owned());
        }
        map
    }
}

/// Reads a JSON header written the way brokers write it: the known members
/// only, integers, strings without escapes, `extFields` an object of such
/// strings (or null). `None` for anything else (unknown members, escapes,
/// numbers in `extFields`, a syntax error): the map decoder then reads it (and
/// reports its errors), so this only decides how fast, never what.
pub(super) fn scan_json(text: &str) -> Option<(HeaderFields, Vec<(Text, Text)>)> {
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
    Some((top, fields))
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

    #[test]
    fn the_scanner_reads_headers_as_brokers_write_them() {
        let (top, fields) = scan_json(BROKER).expect("scanned");
        assert_eq!(
            (top.code, top.flag, top.opaque, top.version),
            (0, 1, -7, 475)
        );
        assert_eq!(top.language, LanguageCode::Java);
        let json = JsonFields::new(ByteString::from_static(BROKER), fields);
        assert_eq!(json.get("nextBeginOffset"), Some("32"));
        assert_eq!(json.iter().count(), 4);
        let spaced = r#" { "code" : 17 , "remark" : "no route" , "extFields" : null } "#;
        let (top, fields) = scan_json(spaced).expect("scanned");
        assert_eq!(top.code, 17);
        assert_eq!(top.remark.as_deref(), Some("no route"));
        assert!(fields.is_empty());
        let (top, _) = scan_json(r#"{"code":0,"remark":null,"extFields":{}}"#).expect("scanned");
        assert_eq!(top.remark, None);
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
