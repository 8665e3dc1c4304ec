//! Helpers of the unit tests of this folder.

use bytes::Bytes;

use super::Properties;

pub(super) fn wire(s: &str) -> Properties {
    Properties::from_wire(Bytes::copy_from_slice(s.as_bytes())).unwrap()
}

pub(super) fn sorted(p: &Properties) -> Vec<(&str, &str)> {
    let mut v: Vec<_> = p.iter().collect();
    v.sort_unstable();
    v
}
