//! A tiny `--flag value` parser (the driver is called by `run.sh`, not by people).

use std::collections::HashMap;
use std::str::FromStr;

use crate::error::{BenchError, Result};

/// The `--name value` pairs of a command line.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    values: HashMap<String, String>,
}

impl Flags {
    /// Parses `--name value` pairs; anything else is an error.
    pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Self> {
        let mut values = HashMap::new();
        let mut it = args.into_iter();
        while let Some(flag) = it.next() {
            let Some(name) = flag.strip_prefix("--") else {
                return Err(BenchError::Args(format!("expected a --flag, got {flag:?}")));
            };
            let value = it
                .next()
                .ok_or_else(|| BenchError::Args(format!("--{name} needs a value")))?;
            values.insert(name.to_owned(), value);
        }
        Ok(Flags { values })
    }

    /// The value of `--name`, or `default`.
    pub(crate) fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T> {
        match self.values.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| BenchError::Args(format!("--{name}: cannot parse {v:?}"))),
        }
    }

    /// The value of `--name`, which must be given.
    pub(crate) fn required<T: FromStr>(&self, name: &str) -> Result<T> {
        let v = self
            .values
            .get(name)
            .ok_or_else(|| BenchError::Args(format!("--{name} is required")))?;
        v.parse()
            .map_err(|_| BenchError::Args(format!("--{name}: cannot parse {v:?}")))
    }

    /// The value of `--name`, if given.
    pub(crate) fn optional<T: FromStr>(&self, name: &str) -> Result<Option<T>> {
        match self.values.get(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| BenchError::Args(format!("--{name}: cannot parse {v:?}"))),
        }
    }

    /// The name server list: `--namesrv`, else `NAMESRV_ADDR`, else the local default.
    pub(crate) fn namesrv(&self) -> String {
        self.values
            .get("namesrv")
            .cloned()
            .or_else(|| std::env::var("NAMESRV_ADDR").ok())
            .unwrap_or_else(|| "127.0.0.1:9876".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(s: &str) -> Result<Flags> {
        Flags::parse(s.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn parses_pairs_and_defaults() {
        let f = flags("--count 10 --topic T").unwrap();
        assert_eq!(f.get("count", 1u64).unwrap(), 10);
        assert_eq!(f.get("size", 7usize).unwrap(), 7);
        assert_eq!(f.required::<String>("topic").unwrap(), "T");
        assert!(f.required::<String>("group").is_err());
        assert_eq!(f.optional::<u64>("skip").unwrap(), None);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(flags("count 10").is_err());
        assert!(flags("--count").is_err());
        assert!(flags("--count x").unwrap().get("count", 0u64).is_err());
    }
}
