//! [`OffsetMap`]: the held messages of a process queue by queue offset, in
//! a sorted ring instead of a tree.
//!
//! A queue's pulls arrive in offset order and its listener calls finish
//! mostly in that order, so inserts append at the back and removals take
//! the front: both O(1), with no node allocated or freed per message. A
//! removal in the middle leaves an empty slot until the slots before it
//! are gone; an insert below the largest offset (rare: messages handed
//! back) is placed by binary search.

use std::collections::VecDeque;

/// One offset's slot: empty once its value was removed.
#[derive(Debug)]
struct Slot<V> {
    offset: i64,
    value: Option<V>,
}

/// Queue offset → value, ordered by offset. The first and the last slot
/// always hold a value.
#[derive(Debug)]
pub(crate) struct OffsetMap<V> {
    slots: VecDeque<Slot<V>>,
    /// Slots holding a value.
    len: usize,
}

impl<V> Default for OffsetMap<V> {
    fn default() -> Self {
        OffsetMap {
            slots: VecDeque::new(),
            len: 0,
        }
    }
}

impl<V> OffsetMap<V> {
    /// Values held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot index of `offset`, or where it would go.
    fn find(&self, offset: i64) -> Result<usize, usize> {
        // The common cases first: the front (calls finishing in order) and
        // past the back (a new pull).
        match (self.slots.front(), self.slots.back()) {
            (Some(front), _) if front.offset == offset => Ok(0),
            (_, Some(back)) if back.offset < offset => Err(self.slots.len()),
            (None, _) => Err(0),
            _ => self.slots.binary_search_by_key(&offset, |s| s.offset),
        }
    }

    pub(crate) fn contains_key(&self, offset: i64) -> bool {
        self.find(offset)
            .ok()
            .and_then(|i| self.slots.get(i))
            .is_some_and(|s| s.value.is_some())
    }

    /// Inserts `value` at `offset`; returns the value it replaced.
    pub(crate) fn insert(&mut self, offset: i64, value: V) -> Option<V> {
        match self.find(offset) {
            Ok(i) => {
                let old = self.slots.get_mut(i).and_then(|s| s.value.replace(value));
                if old.is_none() {
                    self.len = self.len.saturating_add(1);
                }
                old
            }
            Err(i) => {
                let slot = Slot {
                    offset,
                    value: Some(value),
                };
                if i == self.slots.len() {
                    self.slots.push_back(slot);
                } else {
                    self.slots.insert(i, slot);
                }
                self.len = self.len.saturating_add(1);
                None
            }
        }
    }

    /// Removes and returns the value at `offset`.
    pub(crate) fn remove(&mut self, offset: i64) -> Option<V> {
        let i = self.find(offset).ok()?;
        let old = self.slots.get_mut(i).and_then(|s| s.value.take())?;
        self.len = self.len.saturating_sub(1);
        self.trim();
        Some(old)
    }

    /// Drops the empty slots at both ends.
    fn trim(&mut self) {
        while self.slots.front().is_some_and(|s| s.value.is_none()) {
            self.slots.pop_front();
        }
        while self.slots.back().is_some_and(|s| s.value.is_none()) {
            self.slots.pop_back();
        }
    }

    /// The smallest offset and its value.
    pub(crate) fn first(&self) -> Option<(i64, &V)> {
        let s = self.slots.front()?;
        s.value.as_ref().map(|v| (s.offset, v))
    }

    /// The largest offset and its value.
    pub(crate) fn last(&self) -> Option<(i64, &V)> {
        let s = self.slots.back()?;
        s.value.as_ref().map(|v| (s.offset, v))
    }

    /// Removes and returns the smallest offset and its value.
    pub(crate) fn pop_first(&mut self) -> Option<(i64, V)> {
        let s = self.slots.pop_front()?;
        let value = s.value?;
        self.len = self.len.saturating_sub(1);
        self.trim();
        Some((s.offset, value))
    }

    /// The offsets and values in offset order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (i64, &V)> {
        self.slots
            .iter()
            .filter_map(|s| s.value.as_ref().map(|v| (s.offset, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn in_order_inserts_and_removals() {
        let mut m = OffsetMap::default();
        for o in 10..20 {
            assert_eq!(m.insert(o, o * 2), None);
        }
        assert_eq!(m.len(), 10);
        assert_eq!(m.first(), Some((10, &20)));
        assert_eq!(m.last(), Some((19, &38)));
        assert_eq!(m.remove(10), Some(20));
        assert_eq!(m.remove(10), None);
        assert_eq!(m.first(), Some((11, &22)));
        assert!(m.contains_key(15));
        assert!(!m.contains_key(10));
        assert!(!m.contains_key(99));
    }

    #[test]
    fn holes_in_the_middle_and_at_the_ends() {
        let mut m = OffsetMap::default();
        for o in [1, 2, 3, 5, 8] {
            m.insert(o, ());
        }
        assert_eq!(m.remove(3), Some(()));
        assert_eq!(m.remove(4), None);
        assert_eq!(m.len(), 4);
        assert_eq!(m.iter().map(|(o, _)| o).collect::<Vec<_>>(), [1, 2, 5, 8]);
        assert_eq!(m.remove(8), Some(()));
        assert_eq!(m.last().map(|(o, _)| o), Some(5));
        assert_eq!(m.remove(1), Some(()));
        assert_eq!(m.remove(2), Some(()));
        // The hole at 3 went with the slots before it.
        assert_eq!(m.first().map(|(o, _)| o), Some(5));
        assert_eq!(m.pop_first(), Some((5, ())));
        assert!(m.is_empty());
        assert_eq!(m.first(), None);
        assert_eq!(m.pop_first(), None);
    }

    #[test]
    fn inserts_below_the_largest_offset_and_refills() {
        let mut m = OffsetMap::default();
        m.insert(10, "a");
        m.insert(20, "b");
        m.insert(15, "c");
        m.insert(5, "d");
        assert_eq!(m.insert(15, "e"), Some("c"));
        m.insert(12, "f");
        m.remove(12);
        // A removed slot in the middle takes a value again.
        assert_eq!(m.insert(12, "g"), None);
        assert_eq!(
            m.iter().collect::<Vec<_>>(),
            [(5, &"d"), (10, &"a"), (12, &"g"), (15, &"e"), (20, &"b")]
        );
        assert_eq!(m.len(), 5);
    }

    /// Any sequence of inserts and removals gives what a `BTreeMap` gives.
    #[test]
    fn same_as_a_tree() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut m = OffsetMap::default();
        let mut t = BTreeMap::new();
        for step in 0..20_000_u64 {
            let offset = i64::try_from(next() % 64).unwrap_or(0);
            match next() % 4 {
                0 | 1 => assert_eq!(m.insert(offset, step), t.insert(offset, step)),
                2 => assert_eq!(m.remove(offset), t.remove(&offset)),
                _ => assert_eq!(m.pop_first(), t.pop_first()),
            }
            assert_eq!(m.len(), t.len());
            assert_eq!(m.first(), t.first_key_value().map(|(k, v)| (*k, v)));
            assert_eq!(m.last(), t.last_key_value().map(|(k, v)| (*k, v)));
            assert_eq!(m.contains_key(offset), t.contains_key(&offset));
        }
        assert!(m.iter().eq(t.iter().map(|(k, v)| (*k, v))));
    }
}
