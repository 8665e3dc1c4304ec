//! The properties string (Java `MessageDecoder.messageProperties2String` / `string2messageProperties`): `name 0x01 value 0x02`
//! for every pair, including the last.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// Byte between a property's name and its value (Java `NAME_VALUE_SEPARATOR`).
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Byte after every property value (Java `PROPERTY_SEPARATOR`).
pub const PROPERTY_SEPARATOR: char = '\u{2}';
/// Largest properties string, in bytes, that fits the signed 16-bit length of
/// stored and batch records; the broker rejects longer ones
/// (`PROPERTIES_SIZE_EXCEEDED`).
pub const MAX_PROPERTIES_LEN: usize = 32767;

/// Encodes properties as Java's `messageProperties2String` does, with the
/// pairs sorted by name so the output is deterministic.
///
/// This does not check the pairs: call [`validate_properties`] first (or use
/// [`Message::properties_string`](super::Message::properties_string)), since
/// a name or value containing `0x01`/`0x02`, or an empty value, does not
/// survive decoding.
pub fn encode_properties<'a, I, K, V>(properties: I) -> String
where
    I: IntoIterator<Item = (&'a K, &'a V)>,
    K: AsRef<str> + ?Sized + 'a,
    V: AsRef<str> + ?Sized + 'a,
{
    let mut pairs: Vec<(&str, &str)> = properties
        .into_iter()
        .map(|(k, v)| (k.as_ref(), v.as_ref()))
        .collect();
    pairs.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let len = pairs
        .iter()
        .fold(0usize, |n, (k, v)| n.saturating_add(k.len() + v.len() + 2));
    let mut out = String::with_capacity(len);
    for (k, v) in pairs {
        out.push_str(k);
        out.push(NAME_VALUE_SEPARATOR);
        out.push_str(v);
        out.push(PROPERTY_SEPARATOR);
    }
    out
}

/// Checks that every pair survives a round trip through the properties
/// string: names and values must be non-empty (Java's `putUserProperty` rule;
/// the decoder drops empty values) and must not contain the separators
/// `0x01`/`0x02`.
///
/// # Errors
///
/// [`Error::Encode`] naming the first offending property.
pub fn validate_properties<'a, I, K, V>(properties: I) -> Result<()>
where
    I: IntoIterator<Item = (&'a K, &'a V)>,
    K: AsRef<str> + ?Sized + 'a,
    V: AsRef<str> + ?Sized + 'a,
{
    for (k, v) in properties {
        validate_property(k.as_ref(), v.as_ref())?;
    }
    Ok(())
}

/// [`validate_properties`] for one pair.
///
/// # Errors
///
/// [`Error::Encode`] if the name or value is empty or contains `0x01`/`0x02`.
pub fn validate_property(name: &str, value: &str) -> Result<()> {
    let is_sep = |c: char| c == NAME_VALUE_SEPARATOR || c == PROPERTY_SEPARATOR;
    if name.is_empty() {
        return Err(Error::Encode(
            "a message property has an empty name; give it a name".to_owned(),
        ));
    }
    if value.is_empty() {
        return Err(Error::Encode(format!(
            "message property {name:?} has an empty value, which the broker would drop; \
             remove the property or give it a value"
        )));
    }
    if name.contains(is_sep) || value.contains(is_sep) {
        return Err(Error::Encode(format!(
            "message property {name:?} (value {value:?}) contains the byte 0x01 or 0x02, \
             which separate properties on the wire; remove those characters"
        )));
    }
    Ok(())
}

/// Decodes a properties string with Java's `string2messageProperties` rules:
/// split on `0x02`; in each piece split at the first `0x01`; keep the pair
/// only if both name and value are non-empty (so the value may contain
/// `0x01`); pieces without `0x01` are ignored; a later duplicate name wins.
///
/// # Errors
///
/// [`Error::InvalidMessage`] if the bytes are not UTF-8 (Java would replace
/// the bad bytes; this client reports them).
pub fn decode_properties(bytes: &[u8]) -> Result<HashMap<String, String>> {
    if bytes.is_empty() {
        return Ok(HashMap::new());
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::InvalidMessage(format!("properties string is not valid UTF-8: {e}")))?;
    Ok(decode_properties_str(text))
}

/// [`decode_properties`] of an already checked string.
pub(super) fn decode_properties_str(text: &str) -> HashMap<String, String> {
    if text.is_empty() {
        return HashMap::new();
    }
    let bytes = text.as_bytes();
    // One pass to size the map: every pair ends with 0x02 (the last may not).
    let pairs = bytes.iter().filter(|&&b| b == 0x02).count() + 1;
    let mut map = HashMap::with_capacity(pairs);
    // Split on bytes: 0x01 and 0x02 are ASCII, so every cut is a char boundary.
    let mut start = 0usize;
    for piece in bytes.split(|&b| b == 0x02) {
        let end = start + piece.len();
        if let Some(sep) = piece.iter().position(|&b| b == 0x01) {
            // Non-empty name and value (Java: kvSepIndex > index && < newIndex - 1).
            if sep > 0 && sep + 1 < piece.len() {
                let name = text.get(start..start + sep);
                let value = text.get(start + sep + 1..end);
                if let (Some(k), Some(v)) = (name, value) {
                    map.insert(k.to_owned(), v.to_owned());
                }
            }
        }
        start = end + 1;
    }
    map
}

/// The value of `name` in an encoded properties string, found without
/// decoding the others: what [`decode_properties`] would map `name` to
/// (the last non-empty value of a pair with that name).
pub fn find_property<'a>(properties: &'a str, name: &str) -> Option<&'a str> {
    let mut found = None;
    for piece in properties.split('\u{2}') {
        if let Some((k, v)) = piece.split_once('\u{1}') {
            if k == name && !k.is_empty() && !v.is_empty() {
                found = Some(v);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_property_agrees_with_decoding() {
        for text in [
            "",
            "UNIQ_KEY\u{1}ABC\u{2}",
            "TAGS\u{1}a\u{2}UNIQ_KEY\u{1}ABC\u{2}WAIT\u{1}true",
            "UNIQ_KEY\u{1}A\u{2}UNIQ_KEY\u{1}B\u{2}",
            "UNIQ_KEY\u{1}A\u{2}UNIQ_KEY\u{1}\u{2}",
            "UNIQ_KEY\u{1}A\u{1}B\u{2}",
            "UNIQ_KEY\u{2}\u{1}x\u{2}UNIQ_KEYS\u{1}y",
        ] {
            let decoded = decode_properties(text.as_bytes()).unwrap();
            for name in ["UNIQ_KEY", "TAGS", "WAIT", "", "x"] {
                assert_eq!(
                    find_property(text, name),
                    decoded.get(name).map(String::as_str),
                    "{name:?} in {text:?}"
                );
            }
        }
    }

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn encode_is_sorted_and_terminated() {
        let m = map(&[("b", "2"), ("a", "1"), ("TAGS", "t")]);
        assert_eq!(
            encode_properties(&m),
            "TAGS\u{1}t\u{2}a\u{1}1\u{2}b\u{1}2\u{2}"
        );
        assert_eq!(encode_properties(&HashMap::<String, String>::new()), "");
    }

    #[test]
    fn decode_java_rules() {
        // Last pair without its 0x02, an empty value, an empty key, a piece
        // without 0x01, a value containing 0x01 and a duplicate key.
        let s = b"a\x011\x02b\x01\x02\x01x\x02junk\x02c\x01v\x01w\x02a\x019";
        let m = decode_properties(s).unwrap();
        assert_eq!(m, map(&[("a", "9"), ("c", "v\u{1}w")]));
        assert!(decode_properties(b"").unwrap().is_empty());
        assert!(decode_properties(b"\x02\x02\x01\x02").unwrap().is_empty());
        assert_eq!(decode_properties(b"k\x01v").unwrap(), map(&[("k", "v")]));
    }

    #[test]
    fn decode_crc_property_and_utf8() {
        let m = decode_properties("键\u{1}值\u{2}__CRC32#\u{1}0123456789".as_bytes()).unwrap();
        assert_eq!(m, map(&[("键", "值"), ("__CRC32#", "0123456789")]));
        assert!(matches!(
            decode_properties(b"k\x01\xff\x02"),
            Err(Error::InvalidMessage(_))
        ));
    }

    #[test]
    fn round_trip() {
        let m = map(&[("UNIQ_KEY", "0A0B"), ("KEYS", "a b c"), ("x y", "z=1")]);
        validate_properties(&m).unwrap();
        assert_eq!(
            decode_properties(encode_properties(&m).as_bytes()).unwrap(),
            m
        );
    }

    #[test]
    fn validate_rejects_separators_and_empties() {
        for (k, v) in [("a\u{1}", "v"), ("a", "v\u{2}"), ("", "v"), ("a", "")] {
            let err = validate_property(k, v).unwrap_err();
            assert!(matches!(err, Error::Encode(_)), "{k:?}={v:?}");
        }
        assert!(validate_properties(&map(&[("a", "\u{2}")])).is_err());
        validate_property("a", "b").unwrap();
    }
}
