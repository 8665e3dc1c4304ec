//! Unique topic and group names, so tests never share broker state.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The longest name [`unique_name`] returns.
pub const MAX_NAME_LEN: usize = 64;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name no other test (in this or another process) uses: `<prefix>_<pid>_<counter>_<random>`.
///
/// Only `[A-Za-z0-9_-]` (other characters of `prefix` become `_`; an empty prefix becomes `rmq`), at
/// most [`MAX_NAME_LEN`] characters (the prefix is shortened when needed), so it is a valid topic,
/// consumer group and producer group name on every RocketMQ version.
pub fn unique_name(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(n);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.write_u128(nanos);
    let random = hasher.finish() & 0xFFFF_FFFF;
    let suffix = format!("_{}_{n}_{random:08x}", std::process::id());

    let mut prefix: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if prefix.is_empty() {
        prefix.push_str("rmq");
    }
    // Every char is ASCII now, so byte truncation is char truncation.
    prefix.truncate(MAX_NAME_LEN.saturating_sub(suffix.len()));
    prefix + &suffix
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_unique_and_valid() {
        let names: HashSet<String> = (0..1000).map(|_| unique_name("topic")).collect();
        assert_eq!(names.len(), 1000);
        assert!(names.iter().all(|n| valid(n) && n.starts_with("topic_")));
    }

    #[test]
    fn odd_prefixes_are_cleaned_and_shortened() {
        let long = "x".repeat(200);
        for prefix in ["", "a b/c%d|é", long.as_str(), "%RETRY%group"] {
            let name = unique_name(prefix);
            assert!(valid(&name), "{name:?} from {prefix:?}");
        }
        assert!(unique_name("").starts_with("rmq_"));
        assert!(unique_name("a b").starts_with("a_b_"));
        assert_eq!(unique_name(&long).len(), MAX_NAME_LEN);
    }
}
