//! A tolerant JSON reader for the broker's fastjson output.
//!
//! fastjson writes map keys that are not strings without quotes (numbers:
//! `{0:"10.0.0.1:10911"}`) or as JSON objects (beans:
//! `{{"brokerName":"b","queueId":0,"topic":"t"}:1024}`). Strict parsers
//! reject both. [`parse`] accepts them and returns an ordinary
//! [`serde_json::Value`] in which every key is a string:
//!
//! * a string key stays as is;
//! * a number key becomes its decimal text (`0` → `"0"`, `-1` → `"-1"`);
//! * an object or array key becomes its canonical JSON text, as
//!   [`serde_json::to_string`] writes it (`{"brokerName":"b",...}`), which
//!   [`serde_json::from_str`] reads back. Such a key may not itself contain
//!   object or array keys: every level would escape the text again, so
//!   nested ones would grow the output exponentially;
//! * a bare identifier (`true`, `null`, `abc`) becomes that text.
//!
//! Everything else follows RFC 8259, with a few more tolerances: a leading
//! UTF-8 byte-order mark, raw control characters inside strings, invalid
//! UTF-8 and lone surrogate escapes (replaced by U+FFFD). Nesting deeper than
//! [`MAX_DEPTH`] is an error, so hostile input cannot exhaust the stack; no
//! input makes the reader panic.

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};

/// The deepest nesting of arrays and objects (keys included) accepted.
pub const MAX_DEPTH: usize = 128;

/// Parses `input` leniently into a JSON value.
///
/// # Errors
///
/// [`Error::InvalidBody`] (with `what` = `"JSON"`) when the input is not
/// JSON even by the tolerant rules above, nests deeper than [`MAX_DEPTH`],
/// or has trailing data.
pub fn parse(input: &[u8]) -> Result<Value> {
    parse_as(input, "JSON")
}

/// Parses `input` leniently and decodes it as `T` with serde; `what` names
/// the body in errors (e.g. `"TopicRouteData"`).
///
/// Object members whose value is `null` are dropped first, so a `null`
/// behaves like a missing key (fastjson omits nulls, other writers may not).
///
/// # Errors
///
/// [`Error::InvalidBody`] when the text does not parse or does not have
/// the shape of `T`.
pub fn decode<T: DeserializeOwned>(input: &[u8], what: &'static str) -> Result<T> {
    let mut value = parse_as(input, what)?;
    strip_nulls(&mut value);
    serde_json::from_value(value).map_err(|e| Error::InvalidBody {
        what,
        reason: e.to_string(),
    })
}

/// Like [`decode`], but the top-level value must be a JSON object (serde
/// would otherwise accept a struct written as an array).
pub(crate) fn decode_object<T: DeserializeOwned>(input: &[u8], what: &'static str) -> Result<T> {
    let mut value = parse_as(input, what)?;
    if !value.is_object() {
        return Err(Error::InvalidBody {
            what,
            reason: "expected a JSON object".to_owned(),
        });
    }
    strip_nulls(&mut value);
    serde_json::from_value(value).map_err(|e| Error::InvalidBody {
        what,
        reason: e.to_string(),
    })
}

/// Parses with `what` as the body name in errors.
pub(crate) fn parse_as(input: &[u8], what: &'static str) -> Result<Value> {
    let mut p = Parser {
        input,
        pos: 0,
        what,
        in_key: false,
    };
    if input.starts_with(b"\xEF\xBB\xBF") {
        p.pos = 3;
    }
    let value = p.value(0)?;
    p.skip_ws();
    if p.pos < input.len() {
        return Err(p.error("unexpected data after the JSON value"));
    }
    Ok(value)
}

/// Removes object members whose value is `null`, recursively.
pub(crate) fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
    what: &'static str,
    /// Inside an object or array used as a key.
    in_key: bool,
}

impl<'a> Parser<'a> {
    fn error(&self, reason: &str) -> Error {
        Error::InvalidBody {
            what: self.what,
            reason: format!("{reason} at byte {}", self.pos),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos = self.pos.saturating_add(1);
        Some(b)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos = self.pos.saturating_add(1);
        }
    }

    fn expect(&mut self, byte: u8) -> Result<()> {
        if self.peek() == Some(byte) {
            self.pos = self.pos.saturating_add(1);
            Ok(())
        } else {
            Err(self.error(&format!("expected `{}`", char::from(byte))))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value> {
        self.skip_ws();
        match self.peek() {
            None => Err(self.error("unexpected end of input")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number().map(Value::Number),
            Some(b) if is_ident_byte(b) => match self.ident() {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                "null" => Ok(Value::Null),
                _ => Err(self.error("unknown literal")),
            },
            Some(_) => Err(self.error("unexpected character")),
        }
    }

    fn enter(&self, depth: usize) -> Result<usize> {
        let depth = depth.saturating_add(1);
        if depth > MAX_DEPTH {
            return Err(self.error(&format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(depth)
    }

    fn object(&mut self, depth: usize) -> Result<Value> {
        let depth = self.enter(depth)?;
        self.expect(b'{')?;
        let mut map = Map::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos = self.pos.saturating_add(1);
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_ws();
            let key = self.key(depth)?;
            self.skip_ws();
            self.expect(b':')?;
            let value = self.value(depth)?;
            map.insert(key, value);
            self.skip_ws();
            match self.bump() {
                Some(b',') => {}
                Some(b'}') => return Ok(Value::Object(map)),
                _ => return Err(self.error("expected `,` or `}` in object")),
            }
        }
    }

    /// An object key: string, number, nested object/array, or identifier.
    fn key(&mut self, depth: usize) -> Result<String> {
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') => self.number().map(|n| n.to_string()),
            Some(b'{' | b'[') => {
                if self.in_key {
                    return Err(self.error("object keys inside an object key are not supported"));
                }
                self.in_key = true;
                let v = self.value(depth);
                self.in_key = false;
                serde_json::to_string(&v?).map_err(|e| self.error(&e.to_string()))
            }
            Some(b) if is_ident_byte(b) => Ok(self.ident().to_owned()),
            None => Err(self.error("unexpected end of input")),
            Some(_) => Err(self.error("expected an object key")),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value> {
        let depth = self.enter(depth)?;
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos = self.pos.saturating_add(1);
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.bump() {
                Some(b',') => {}
                Some(b']') => return Ok(Value::Array(items)),
                _ => return Err(self.error("expected `,` or `]` in array")),
            }
        }
    }

    fn ident(&mut self) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(is_ident_byte) {
            self.pos = self.pos.saturating_add(1);
        }
        // Identifier bytes are ASCII, so this slice is valid UTF-8.
        self.input
            .get(start..self.pos)
            .and_then(|s| std::str::from_utf8(s).ok())
            .unwrap_or_default()
    }

    fn number(&mut self) -> Result<Number> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos = self.pos.saturating_add(1);
        }
        let mut is_float = false;
        while let Some(b) = self.peek() {
            match b {
                b'0'..=b'9' => {}
                b'.' | b'e' | b'E' => is_float = true,
                b'+' | b'-' if is_float => {}
                _ => break,
            }
            self.pos = self.pos.saturating_add(1);
        }
        let text = self
            .input
            .get(start..self.pos)
            .and_then(|s| std::str::from_utf8(s).ok())
            .unwrap_or_default();
        if !is_float {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Number::from(n));
            }
            if let Ok(n) = text.parse::<u64>() {
                return Ok(Number::from(n));
            }
        }
        // Rust's float grammar is close to JSON's; reject what it rejects
        // and what does not fit in an f64.
        text.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && text.bytes().any(|b| b.is_ascii_digit()))
            .and_then(Number::from_f64)
            .ok_or_else(|| self.error(&format!("invalid number `{text}`")))
    }

    fn string(&mut self) -> Result<String> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.bump() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => break,
                Some(b'\\') => {
                    let c = match self.bump() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => self.unicode_escape()?,
                        _ => return Err(self.error("invalid escape in string")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                Some(b) => out.push(b),
            }
        }
        Ok(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// The character of a `\uXXXX` escape (after the `u`), joining a
    /// surrogate pair; a lone surrogate becomes U+FFFD.
    fn unicode_escape(&mut self) -> Result<char> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) {
            let save = self.pos;
            if self.bump() == Some(b'\\') && self.bump() == Some(b'u') {
                let second = self.hex4()?;
                if (0xDC00..0xE000).contains(&second) {
                    let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                    return Ok(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
                }
            }
            self.pos = save;
            return Ok(char::REPLACEMENT_CHARACTER);
        }
        Ok(char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    fn hex4(&mut self) -> Result<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = self
                .bump()
                .and_then(|b| char::from(b).to_digit(16))
                .ok_or_else(|| self.error("invalid \\u escape"))?;
            v = (v << 4) | d;
        }
        Ok(v)
    }
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Value {
        parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn standard_json() {
        assert_eq!(
            p(r#" {"a": [1, -2, 3.5, true, false, null, "x\"y\u00e9\n"], "b": {}} "#),
            json!({"a": [1, -2, 3.5, true, false, null, "x\"yé\n"], "b": {}})
        );
        assert_eq!(p("18446744073709551615"), json!(u64::MAX));
        assert_eq!(p("1e3"), json!(1000.0));
    }

    #[test]
    fn number_keys() {
        assert_eq!(
            p(r#"{0:"172.17.0.2:10911",1:"b",-1:"c"}"#),
            json!({"0": "172.17.0.2:10911", "1": "b", "-1": "c"})
        );
    }

    #[test]
    fn object_keys() {
        let v = p(
            r#"{{"brokerName":"b","queueId":0,"topic":"t"}:1024, {"topic":"t","queueId":1,"brokerName":"b"} : 7}"#,
        );
        let map = v.as_object().unwrap();
        assert_eq!(map.len(), 2);
        assert_eq!(
            map[r#"{"brokerName":"b","queueId":0,"topic":"t"}"#],
            json!(1024)
        );
        assert_eq!(
            map[r#"{"brokerName":"b","queueId":1,"topic":"t"}"#],
            json!(7)
        );
    }

    #[test]
    fn identifier_keys() {
        assert_eq!(p("{abc:1,true:2}"), json!({"abc": 1, "true": 2}));
    }

    #[test]
    fn surrogates() {
        assert_eq!(p(r#""\ud83d\ude00""#), json!("😀"));
        assert_eq!(p(r#""\ud83dx""#), json!("\u{FFFD}x"));
        assert_eq!(p(r#""\ude00""#), json!("\u{FFFD}"));
    }

    #[test]
    fn bom_and_invalid_utf8() {
        assert_eq!(parse(b"\xEF\xBB\xBF[1]").unwrap(), json!([1]));
        assert_eq!(parse(b"\"a\xFFb\"").unwrap(), json!("a\u{FFFD}b"));
    }

    #[test]
    fn errors() {
        for bad in [
            "",
            "{",
            "[1,",
            "{\"a\"}",
            "{\"a\":}",
            "[1 2]",
            "tru",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "-",
            "1.2.3e",
            "1e999",
            "[1]]",
            "{,}",
            "[,]",
            "@",
        ] {
            let err = parse(bad.as_bytes()).unwrap_err();
            assert!(matches!(err, Error::InvalidBody { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn depth_limit() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(ok.as_bytes()).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        let err = parse(deep.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("nesting deeper"), "{err}");
        // Nesting inside an object key counts too.
        let in_key = |n: usize| format!("{{{}{}:1}}", "[".repeat(n), "]".repeat(n));
        assert!(parse(in_key(MAX_DEPTH - 1).as_bytes()).is_ok());
        let err = parse(in_key(MAX_DEPTH).as_bytes()).unwrap_err().to_string();
        assert!(err.contains("nesting deeper"), "{err}");
    }

    #[test]
    fn object_keys_inside_object_keys_are_rejected() {
        // Each level would escape the key text again (exponential growth).
        let mut s = r#"{"a":1}"#.to_owned();
        for _ in 0..40 {
            s = format!("{{{s}:1}}");
        }
        let err = parse(s.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("inside an object key"), "{err}");
        // Number and string keys inside an object key are fine.
        assert_eq!(
            p(r#"{{0:"a","b":[1]}:2}"#),
            json!({r#"{"0":"a","b":[1]}"#: 2})
        );
    }

    #[test]
    fn decode_drops_nulls() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct S {
            #[serde(default)]
            v: Vec<i32>,
        }
        let s: S = decode(br#"{"v":null}"#, "test").unwrap();
        assert_eq!(s, S { v: vec![] });
    }
}
