//! Reading a stored properties string: its pairs, and the value of one
//! name, by Java's `string2messageProperties` rules.

/// Above this many pairs a properties string is split into owned pairs when
/// read, so lookups and iteration stay linear in the pairs even on hostile
/// input (iteration skips a pair that a later one of the same name replaces).
pub(super) const MAX_WIRE_PAIRS: usize = 64;
/// A string shorter than this cannot hold [`MAX_WIRE_PAIRS`] pairs (each
/// takes a name, `0x01`, a value and `0x02`), so it is not counted.
pub(super) const MAX_WIRE_PAIRS_LEN: usize = 4 * MAX_WIRE_PAIRS;

/// The value of the last pair of `text` named `name`: the same answer as
/// the last match of [`wire_pairs`], found by visiting the pieces between
/// `0x02` bytes (a SIMD search) and comparing each one's start with `name`
/// and `0x01`.
pub(super) fn last_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    // A name with a separator never matches: a piece splits at its first 0x01.
    // (A byte scan: 0x01 and 0x02 are ASCII, so no UTF-8 decoding is needed.)
    if name.is_empty() || name.bytes().any(|b| b == 0x01 || b == 0x02) {
        return None;
    }
    let (bytes, key) = (text.as_bytes(), name.as_bytes());
    let mut found = None;
    let mut start = 0usize;
    let ends = memchr::memchr_iter(0x02, bytes).chain(std::iter::once(bytes.len()));
    for end in ends {
        let value_at = start + key.len() + 1;
        if value_at < end
            && bytes.get(start..start + key.len()) == Some(key)
            && bytes.get(start + key.len()) == Some(&0x01)
        {
            // 0x01 and 0x02 are ASCII: both cuts are char boundaries.
            found = text.get(value_at..end);
        }
        start = end + 1;
    }
    found
}

/// The pairs of a properties string, Java's `string2messageProperties`
/// rules: split on `0x02`; split each piece at its first `0x01`; keep the
/// pair only if name and value are non-empty. Duplicates are all yielded.
pub(super) fn wire_pairs(text: &str) -> WirePairs<'_> {
    WirePairs { rest: text }
}

#[derive(Clone)]
pub(super) struct WirePairs<'a> {
    rest: &'a str,
}

impl<'a> Iterator for WirePairs<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        // 0x01 and 0x02 are ASCII, so every cut is a char boundary.
        while !self.rest.is_empty() {
            let (piece, rest) = match self.rest.split_once('\u{2}') {
                Some(split) => split,
                None => (self.rest, ""),
            };
            self.rest = rest;
            if let Some((k, v)) = piece.split_once('\u{1}') {
                if !k.is_empty() && !v.is_empty() {
                    return Some((k, v));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use crate::message::Properties;
    use crate::message::map::testing::{sorted, wire};

    #[test]
    fn wire_follows_java_rules() {
        // Last pair without its 0x02, an empty value, an empty name, a piece
        // without 0x01, a value containing 0x01 and a duplicate name.
        let p = wire("a\u{1}1\u{2}b\u{1}\u{2}\u{1}x\u{2}junk\u{2}c\u{1}v\u{1}w\u{2}a\u{1}9");
        assert_eq!(sorted(&p), [("a", "9"), ("c", "v\u{1}w")]);
        assert_eq!(p.get("a"), Some("9"));
        assert_eq!(p.get("b"), None);
        assert_eq!(p.len(), 2);
        assert!(wire("").is_empty());
        assert!(wire("\u{2}\u{2}\u{1}\u{2}").is_empty());
        assert!(Properties::from_wire(Bytes::from_static(b"k\x01\xff")).is_err());
    }

    #[test]
    fn many_pairs_stay_linear_and_later_wins() {
        let mut s = String::new();
        for i in 0..5_000 {
            s.push_str(&format!("k{}\u{1}{i}\u{2}", i % 2_000));
        }
        let p = wire(&s);
        assert_eq!(p.len(), 2_000);
        assert_eq!(p.get("k0"), Some("4000"));
        assert_eq!(p.get("k1999"), Some("3999"));
    }
}
