//! [`Properties`]: a message's name → value pairs, read in place from the
//! properties string of a stored record until one is changed.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use bytestring::ByteString;

use super::property;
use crate::error::{Error, Result};

/// Above this many pairs a properties string is split into owned pairs when
/// read, so lookups and iteration stay linear in the pairs even on hostile
/// input (iteration skips a pair that a later one of the same name replaces).
const MAX_WIRE_PAIRS: usize = 64;
/// A string shorter than this cannot hold [`MAX_WIRE_PAIRS`] pairs (each
/// takes a name, `0x01`, a value and `0x02`), so it is not counted.
const MAX_WIRE_PAIRS_LEN: usize = 4 * MAX_WIRE_PAIRS;

/// A message's properties (Java `Message.properties`): system ones (`TAGS`,
/// `KEYS`, `UNIQ_KEY`, ... see [`property`]) and user ones, one value per
/// name.
///
/// Works like a small map: [`get`](Self::get), [`insert`](Self::insert),
/// [`remove`](Self::remove), [`iter`](Self::iter). Properties of a consumed
/// message are read in place from the pull response (no copy, no map built)
/// until one is changed; changes are kept beside them. Like the body, they
/// keep the response's buffer alive while the message lives. Iteration order is
/// unspecified, like a `HashMap`'s; equality compares the pairs.
///
/// ```
/// use rmq_protocol::message::Properties;
/// let mut p: Properties = [("color", "red"), ("size", "L")].into_iter().collect();
/// p.insert("color", "blue");
/// assert_eq!(p.get("color"), Some("blue"));
/// assert_eq!(p.remove("size").as_deref(), Some("L"));
/// assert_eq!(p.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct Properties {
    /// A properties string as stored (UTF-8), read with Java's
    /// `string2messageProperties` rules on each lookup.
    wire: ByteString,
    /// Pairs set for many messages at once ([`insert_shared_in`](Self::insert_shared_in)),
    /// overriding `wire`: one list shared by the messages of a batch, one name
    /// each.
    shared: Option<SharedPairs>,
    /// Pairs set or removed one message at a time: one entry per name,
    /// overriding `shared` and `wire`; `None` hides a pair of either.
    edits: Vec<(ByteString, Option<ByteString>)>,
}

/// The pairs of [`Properties::shared`].
type SharedPairs = Arc<[(ByteString, ByteString)]>;

/// A property value that many messages can share without copying (a pull
/// response's `MIN_OFFSET`, say): cloning it is a reference-count increment.
///
/// ```
/// use rmq_protocol::message::{Properties, SharedValue};
/// let max = SharedValue::from("4096".to_owned());
/// let mut p = Properties::new();
/// p.insert_shared(rmq_protocol::message::property::MAX_OFFSET, &max);
/// assert_eq!(p.get("MAX_OFFSET"), Some("4096"));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SharedValue(ByteString);

impl SharedValue {
    /// The value.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for SharedValue {
    fn from(s: String) -> Self {
        SharedValue(ByteString::from(s))
    }
}

impl From<&str> for SharedValue {
    fn from(s: &str) -> Self {
        SharedValue(ByteString::from(s))
    }
}

impl fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Properties {
    /// No properties.
    pub const fn new() -> Self {
        Properties {
            wire: ByteString::new(),
            shared: None,
            edits: Vec::new(),
        }
    }

    /// The properties of a properties string (`name 0x01 value 0x02` for each
    /// pair), read in place: `bytes` is kept, not copied. Same rules as
    /// [`decode_properties`](super::decode_properties).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMessage`] if the bytes are not UTF-8.
    pub fn from_wire(bytes: Bytes) -> Result<Self> {
        Self::try_from_wire(bytes).map_err(|e| {
            Error::InvalidMessage(format!("properties string is not valid UTF-8: {e}"))
        })
    }

    /// [`from_wire`](Self::from_wire) with the plain UTF-8 error.
    pub(super) fn try_from_wire(bytes: Bytes) -> std::result::Result<Self, std::str::Utf8Error> {
        ByteString::try_from(bytes).map(Self::from_text)
    }

    fn from_text(wire: ByteString) -> Self {
        // Every pair but perhaps the last ends with 0x02.
        let pieces = if wire.len() < MAX_WIRE_PAIRS_LEN {
            0
        } else {
            wire.as_bytes().iter().filter(|&&b| b == 0x02).count()
        };
        if pieces < MAX_WIRE_PAIRS {
            return Properties {
                wire,
                shared: None,
                edits: Vec::new(),
            };
        }
        // Many pairs: owned pairs, duplicates resolved once (later wins).
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(pieces + 1);
        let mut edits: Vec<(ByteString, Option<ByteString>)> = Vec::with_capacity(pieces + 1);
        for (k, v) in wire_pairs(&wire) {
            let value = Some(wire.slice_ref(v));
            match index.entry(k) {
                Entry::Occupied(e) => {
                    if let Some(slot) = edits.get_mut(*e.get()) {
                        slot.1 = value;
                    }
                }
                Entry::Vacant(e) => {
                    e.insert(edits.len());
                    edits.push((wire.slice_ref(k), value));
                }
            }
        }
        Properties {
            wire: ByteString::new(),
            shared: None,
            edits,
        }
    }

    fn edit(&self, name: &str) -> Option<usize> {
        self.edits.iter().position(|(k, _)| &**k == name)
    }

    fn shared_get(&self, name: &str) -> Option<&str> {
        let pairs = self.shared.as_deref()?;
        pairs.iter().find(|(k, _)| &**k == name).map(|(_, v)| &**v)
    }

    /// The last pair of the stored string named `name`: the same answer as
    /// the last match of [`wire_pairs`], found by visiting the pieces
    /// between `0x02` bytes (a SIMD search) and comparing each one's start
    /// with `name` and `0x01`.
    fn wire_get(&self, name: &str) -> Option<&str> {
        let text: &str = &self.wire;
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

    /// A property's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        match self.edit(name) {
            Some(i) => self.edits.get(i).and_then(|(_, v)| v.as_deref()),
            None => self.shared_get(name).or_else(|| self.wire_get(name)),
        }
    }

    /// Whether a property is set.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Sets a property, replacing an earlier value. Names and values must be
    /// non-empty and free of `0x01`/`0x02`; that is checked when the message
    /// is encoded (see [`validate_properties`](super::validate_properties)).
    pub fn insert<N, V>(&mut self, name: N, value: V)
    where
        N: AsRef<str> + Into<String>,
        V: AsRef<str> + Into<String>,
    {
        let name = known_name(name.as_ref()).unwrap_or_else(|| ByteString::from(name.into()));
        let value = known_value(value.as_ref()).unwrap_or_else(|| ByteString::from(value.into()));
        self.set(name, Some(value));
    }

    /// Sets a property to a value shared with other messages (no copy).
    pub fn insert_shared(&mut self, name: &'static str, value: &SharedValue) {
        self.set(ByteString::from_static(name), Some(value.0.clone()));
    }

    /// Sets the same pairs in many messages' properties, as
    /// [`insert_shared`](Self::insert_shared) would in each: properties that
    /// were alike before (those of one pull response, say) share one list of
    /// the pairs afterwards, so a batch costs one allocation instead of one
    /// per message. A later name in `pairs` wins over an earlier one.
    ///
    /// ```
    /// use rmq_protocol::message::{Properties, SharedValue, property};
    /// let (min, max) = (SharedValue::from("0"), SharedValue::from("4096"));
    /// let mut batch = vec![Properties::new(); 32];
    /// Properties::insert_shared_in(
    ///     &mut batch,
    ///     &[(property::MIN_OFFSET, &min), (property::MAX_OFFSET, &max)],
    /// );
    /// assert!(batch.iter().all(|p| p.get("MAX_OFFSET") == Some("4096")));
    /// ```
    pub fn insert_shared_in<'a>(
        all: impl IntoIterator<Item = &'a mut Properties>,
        pairs: &[(&'static str, &SharedValue)],
    ) {
        // The shared list of the previous message, and what it became.
        let mut last: Option<(Option<SharedPairs>, SharedPairs)> = None;
        for props in all {
            // A name set here no longer has an edit of its own.
            if !props.edits.is_empty() {
                props
                    .edits
                    .retain(|(k, _)| !pairs.iter().any(|(name, _)| **k == **name));
            }
            let after = match &last {
                Some((before, after)) if same_pairs(before.as_ref(), props.shared.as_ref()) => {
                    after.clone()
                }
                _ => {
                    let after = with_pairs(props.shared.as_deref(), pairs);
                    last = Some((props.shared.clone(), after.clone()));
                    after
                }
            };
            props.shared = Some(after);
        }
    }

    fn set(&mut self, name: ByteString, value: Option<ByteString>) {
        match self.edit(&name) {
            Some(i) => {
                if let Some(slot) = self.edits.get_mut(i) {
                    slot.1 = value;
                }
            }
            None => {
                if self.edits.capacity() == 0 {
                    // Room for the few a consumer adds (offsets, start time).
                    self.edits.reserve(4);
                }
                self.edits.push((name, value));
            }
        }
    }

    /// Removes a property, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let old = self.get(name)?.to_owned();
        if self.wire_get(name).is_some() || self.shared_get(name).is_some() {
            self.set(text(name), None);
        } else if let Some(i) = self.edit(name) {
            self.edits.remove(i);
        }
        Some(old)
    }

    /// The pairs, in no particular order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            props: self,
            wire: wire_pairs(&self.wire),
            shared: self.shared.as_deref().unwrap_or_default().iter(),
            edits: self.edits.iter(),
        }
    }

    /// How many properties are set.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether no property is set.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// Removes every property.
    pub fn clear(&mut self) {
        *self = Properties::new();
    }

    /// The pairs as an owned map.
    pub fn to_map(&self) -> HashMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// Whether two messages hold the same shared list (or none).
fn same_pairs(a: Option<&SharedPairs>, b: Option<&SharedPairs>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// `before`'s pairs with `pairs` set (one entry per name, the last wins).
fn with_pairs(
    before: Option<&[(ByteString, ByteString)]>,
    pairs: &[(&'static str, &SharedValue)],
) -> SharedPairs {
    let before = before.unwrap_or_default();
    let mut all: Vec<(ByteString, ByteString)> = Vec::with_capacity(before.len() + pairs.len());
    all.extend(
        before
            .iter()
            .filter(|(k, _)| !pairs.iter().any(|(name, _)| **k == **name))
            .cloned(),
    );
    for (name, value) in pairs {
        match all.iter_mut().find(|(k, _)| **k == **name) {
            Some(slot) => slot.1 = value.0.clone(),
            None => all.push((ByteString::from_static(name), value.0.clone())),
        }
    }
    Arc::from(all)
}

/// A static text for names and values set often, so setting them copies
/// nothing.
fn known_name(name: &str) -> Option<ByteString> {
    const NAMES: [&str; 14] = [
        property::TAGS,
        property::KEYS,
        property::UNIQ_KEY,
        property::WAIT,
        property::DELAY,
        property::RETRY_TOPIC,
        property::MIN_OFFSET,
        property::MAX_OFFSET,
        property::RECONSUME_TIME,
        property::MAX_RECONSUME_TIMES,
        property::CONSUME_START_TIME,
        property::ORIGIN_MESSAGE_ID,
        property::TRANSACTION_ID,
        property::PGROUP,
    ];
    NAMES
        .iter()
        .find(|n| **n == name)
        .map(|n| ByteString::from_static(n))
}

fn known_value(value: &str) -> Option<ByteString> {
    match value {
        "true" => Some(ByteString::from_static("true")),
        "false" => Some(ByteString::from_static("false")),
        _ => None,
    }
}

/// An owned copy of `s` (or a static one for a known name).
fn text(s: &str) -> ByteString {
    known_name(s).unwrap_or_else(|| ByteString::from(s))
}

/// The pairs of a properties string, Java's `string2messageProperties`
/// rules: split on `0x02`; split each piece at its first `0x01`; keep the
/// pair only if name and value are non-empty. Duplicates are all yielded.
fn wire_pairs(text: &str) -> WirePairs<'_> {
    WirePairs { rest: text }
}

#[derive(Clone)]
struct WirePairs<'a> {
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

/// The pairs of [`Properties`]; see [`Properties::iter`].
pub struct Iter<'a> {
    props: &'a Properties,
    wire: WirePairs<'a>,
    shared: std::slice::Iter<'a, (ByteString, ByteString)>,
    edits: std::slice::Iter<'a, (ByteString, Option<ByteString>)>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        while let Some((k, v)) = self.wire.next() {
            // A pair that a later one or a change replaces is skipped.
            let replaced = self.props.edit(k).is_some()
                || self.props.shared_get(k).is_some()
                || self.wire.clone().any(|(later, _)| later == k);
            if !replaced {
                return Some((k, v));
            }
        }
        for (k, v) in self.shared.by_ref() {
            if self.props.edit(k).is_none() {
                return Some((k, v));
            }
        }
        for (k, v) in self.edits.by_ref() {
            if let Some(v) = v {
                return Some((k, v));
            }
        }
        None
    }
}

impl fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").finish_non_exhaustive()
    }
}

impl<'a> IntoIterator for &'a Properties {
    type Item = (&'a str, &'a str);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut pairs: Vec<(&str, &str)> = self.iter().collect();
        pairs.sort_unstable();
        f.debug_map().entries(pairs).finish()
    }
}

impl PartialEq for Properties {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl Eq for Properties {}

impl<N, V> FromIterator<(N, V)> for Properties
where
    N: AsRef<str> + Into<String>,
    V: AsRef<str> + Into<String>,
{
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut p = Properties::new();
        p.extend(iter);
        p
    }
}

impl<N, V> Extend<(N, V)> for Properties
where
    N: AsRef<str> + Into<String>,
    V: AsRef<str> + Into<String>,
{
    fn extend<I: IntoIterator<Item = (N, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl From<HashMap<String, String>> for Properties {
    fn from(map: HashMap<String, String>) -> Self {
        map.into_iter().collect()
    }
}

impl From<Properties> for HashMap<String, String> {
    fn from(p: Properties) -> Self {
        p.to_map()
    }
}

impl PartialEq<HashMap<String, String>> for Properties {
    fn eq(&self, other: &HashMap<String, String>) -> bool {
        self.len() == other.len() && other.iter().all(|(k, v)| self.get(k) == Some(v.as_str()))
    }
}

impl PartialEq<Properties> for HashMap<String, String> {
    fn eq(&self, other: &Properties) -> bool {
        other == self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(s: &str) -> Properties {
        Properties::from_wire(Bytes::copy_from_slice(s.as_bytes())).unwrap()
    }

    fn sorted(p: &Properties) -> Vec<(&str, &str)> {
        let mut v: Vec<_> = p.iter().collect();
        v.sort_unstable();
        v
    }

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
    fn changes_override_the_stored_string() {
        let mut p = wire("a\u{1}1\u{2}b\u{1}2\u{2}a\u{1}3\u{2}");
        p.insert("a", "x");
        p.insert("c", "y");
        assert_eq!(p.remove("b").as_deref(), Some("2"));
        assert_eq!(p.remove("b"), None);
        assert_eq!(sorted(&p), [("a", "x"), ("c", "y")]);
        assert_eq!(p.remove("a").as_deref(), Some("x"));
        assert_eq!(p.get("a"), None);
        p.insert("a", "again");
        assert_eq!(sorted(&p), [("a", "again"), ("c", "y")]);
        assert_eq!(p.remove("c").as_deref(), Some("y"));
        assert_eq!(p.len(), 1);
        let max = SharedValue::from("7".to_owned());
        p.insert_shared(property::MAX_OFFSET, &max);
        assert_eq!(p.get(property::MAX_OFFSET), Some("7"));
    }

    #[test]
    fn pairs_set_in_many_messages_are_shared_and_override_like_edits() {
        let (min, max) = (SharedValue::from("0"), SharedValue::from("9"));
        let mut batch = vec![wire("a\u{1}1\u{2}MAX_OFFSET\u{1}old\u{2}"); 3];
        batch[2].insert(property::MIN_OFFSET, "edited");
        batch[2].insert("c", "3");
        Properties::insert_shared_in(
            &mut batch,
            &[(property::MIN_OFFSET, &min), (property::MAX_OFFSET, &max)],
        );
        let lists: Vec<&SharedPairs> = batch.iter().filter_map(|p| p.shared.as_ref()).collect();
        assert_eq!(lists.len(), 3);
        assert!(
            Arc::ptr_eq(lists[0], lists[1]),
            "alike properties share one list"
        );
        for p in &batch[..2] {
            assert_eq!(
                sorted(p),
                [("MAX_OFFSET", "9"), ("MIN_OFFSET", "0"), ("a", "1")]
            );
        }
        // The edit of a name set for the batch is gone; others stay.
        assert_eq!(
            sorted(&batch[2]),
            [
                ("MAX_OFFSET", "9"),
                ("MIN_OFFSET", "0"),
                ("a", "1"),
                ("c", "3")
            ]
        );

        // Setting again replaces the shared value; a change of one message
        // still overrides it, and removing hides it.
        let start = SharedValue::from("1700000000000");
        let again = SharedValue::from("10");
        Properties::insert_shared_in(
            &mut batch[..2],
            &[
                (property::CONSUME_START_TIME, &start),
                (property::MAX_OFFSET, &again),
            ],
        );
        let p = &mut batch[0];
        assert_eq!(p.get(property::MAX_OFFSET), Some("10"));
        assert_eq!(p.get(property::CONSUME_START_TIME), Some("1700000000000"));
        assert_eq!(p.len(), 4);
        p.insert(property::MAX_OFFSET, "11");
        assert_eq!(p.get(property::MAX_OFFSET), Some("11"));
        assert_eq!(p.remove(property::MAX_OFFSET).as_deref(), Some("11"));
        assert_eq!(p.get(property::MAX_OFFSET), None);
        assert_eq!(p.remove(property::MIN_OFFSET).as_deref(), Some("0"));
        assert_eq!(
            sorted(p),
            [("CONSUME_START_TIME", "1700000000000"), ("a", "1")]
        );
        // The other message of the batch is untouched by those changes.
        assert_eq!(batch[1].get(property::MAX_OFFSET), Some("10"));
        assert_eq!(batch[1].get(property::MIN_OFFSET), Some("0"));

        let built: Properties = [
            ("a", "1"),
            ("MIN_OFFSET", "0"),
            ("MAX_OFFSET", "10"),
            ("CONSUME_START_TIME", "1700000000000"),
        ]
        .into_iter()
        .collect();
        assert_eq!(batch[1], built);
        assert_eq!(batch[1].to_map(), built.to_map());
    }

    #[test]
    fn equality_ignores_how_pairs_are_held() {
        let built: Properties = [("b", "2"), ("a", "1")].into_iter().collect();
        assert_eq!(wire("a\u{1}1\u{2}b\u{1}2\u{2}"), built);
        assert_ne!(wire("a\u{1}1\u{2}"), built);
        let map: HashMap<String, String> = built.to_map();
        assert_eq!(built, map);
        assert_eq!(Properties::from(map.clone()), built);
        assert_eq!(format!("{built:?}"), r#"{"a": "1", "b": "2"}"#);
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
