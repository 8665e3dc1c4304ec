//! [`Iter`]: the pairs of [`Properties`], each name once.

use std::fmt;

use bytestring::ByteString;

use super::properties::Properties;
use super::wire::{WirePairs, wire_pairs};

impl Properties {
    /// The pairs, in no particular order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            props: self,
            wire: wire_pairs(&self.wire),
            shared: self.shared.as_deref().unwrap_or_default().iter(),
            edits: self.edits.iter(),
        }
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
