//! [`Properties`]: the stored string, the pairs shared with other messages
//! and the message's own edits, and the lookups and changes over them.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use bytes::Bytes;
use bytestring::ByteString;

use super::shared::{SharedPairs, SharedValue, same_pairs, with_pairs};
use super::wire::{MAX_WIRE_PAIRS, MAX_WIRE_PAIRS_LEN, last_value, wire_pairs};
use crate::error::{Error, Result};
use crate::message::property;

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
    pub(super) wire: ByteString,
    /// Pairs set for many messages at once ([`insert_shared_in`](Self::insert_shared_in)),
    /// overriding `wire`: one list shared by the messages of a batch, one name
    /// each.
    pub(super) shared: Option<SharedPairs>,
    /// Pairs set or removed one message at a time: one entry per name,
    /// overriding `shared` and `wire`; `None` hides a pair of either.
    pub(super) edits: Vec<(ByteString, Option<ByteString>)>,
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
    /// [`decode_properties`](crate::message::decode_properties).
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
    pub(in crate::message) fn try_from_wire(
        bytes: Bytes,
    ) -> std::result::Result<Self, std::str::Utf8Error> {
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

    pub(super) fn edit(&self, name: &str) -> Option<usize> {
        self.edits.iter().position(|(k, _)| &**k == name)
    }

    pub(super) fn shared_get(&self, name: &str) -> Option<&str> {
        let pairs = self.shared.as_deref()?;
        pairs.iter().find(|(k, _)| &**k == name).map(|(_, v)| &**v)
    }

    /// The last pair of the stored string named `name` (see [`last_value`]).
    fn wire_get(&self, name: &str) -> Option<&str> {
        last_value(&self.wire, name)
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
    /// is encoded (see [`validate_properties`](crate::message::validate_properties)).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::map::testing::{sorted, wire};

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
}
