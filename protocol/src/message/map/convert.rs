//! The standard traits of [`Properties`]: `Debug`, equality, collecting,
//! and conversions from and to `HashMap`.

use std::collections::HashMap;
use std::fmt;

use super::properties::Properties;

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
    use crate::message::map::testing::wire;

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
}
