//! [`SharedValue`] and the lists of pairs that the messages of a batch
//! share.

use std::fmt;
use std::sync::Arc;

use bytestring::ByteString;

/// The pairs of [`Properties::shared`].
pub(super) type SharedPairs = Arc<[(ByteString, ByteString)]>;

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
pub struct SharedValue(pub(super) ByteString);

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

/// Whether two messages hold the same shared list (or none).
pub(super) fn same_pairs(a: Option<&SharedPairs>, b: Option<&SharedPairs>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// `before`'s pairs with `pairs` set (one entry per name, the last wins).
pub(super) fn with_pairs(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Properties;
    use crate::message::map::testing::{sorted, wire};
    use crate::message::property;

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
}
