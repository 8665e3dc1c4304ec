//! The `--flag value` command line of every mode (parsed with `lexopt`; the driver is called
//! by `run.sh`, not by people, so every flag takes a value and the modes look them up by name).

use std::collections::HashMap;
use std::ffi::OsString;
use std::str::FromStr;

use rmq_client_core::ClientConfig;
use rmq_remoting::TlsConfig;

use crate::error::{BenchError, Result};

/// The `--name value` pairs of a command line.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    values: HashMap<String, String>,
}

impl Flags {
    /// Parses `--name value` (or `--name=value`) pairs; anything else is an error.
    pub(crate) fn parse<I>(args: I) -> Result<Self>
    where
        I: IntoIterator,
        I::Item: Into<OsString>,
    {
        let bad = |e: lexopt::Error| BenchError::Args(e.to_string());
        let mut values = HashMap::new();
        let mut parser = lexopt::Parser::from_args(args);
        while let Some(arg) = parser.next().map_err(bad)? {
            match arg {
                lexopt::Arg::Long(name) => {
                    let name = name.to_owned();
                    let value = parser
                        .value()
                        .map_err(|_| BenchError::Args(format!("--{name} needs a value")))?;
                    let value = value
                        .into_string()
                        .map_err(|v| BenchError::Args(format!("--{name}: {v:?} is not UTF-8")))?;
                    values.insert(name, value);
                }
                other => {
                    return Err(BenchError::Args(format!(
                        "expected a --flag, got {}",
                        other.unexpected()
                    )));
                }
            }
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

    /// The client config of every mode: `--namesrv`, plus TLS with `--tls-ca PATH` (and
    /// `--tls-cert` / `--tls-key` for a client certificate), plus signing with
    /// `--access-key` / `--secret-key`.
    pub(crate) fn client_config(&self, instance_name: Option<String>) -> Result<ClientConfig> {
        let mut b = ClientConfig::builder().namesrv_addr(self.namesrv());
        if let Some(name) = instance_name {
            b = b.instance_name(name);
        }
        if let Some(ca) = self.values.get("tls-ca") {
            let mut tls = TlsConfig::new().with_ca_file(ca);
            if let (Some(cert), Some(key)) =
                (self.values.get("tls-cert"), self.values.get("tls-key"))
            {
                tls = tls.with_client_cert(cert, key);
            }
            b = b.tls(tls);
        }
        match (self.values.get("access-key"), self.values.get("secret-key")) {
            (Some(ak), Some(sk)) => b = b.credentials(ak, sk),
            (None, None) => {}
            _ => {
                return Err(BenchError::Args(
                    "--access-key and --secret-key go together".into(),
                ));
            }
        }
        b.build().map_err(|source| BenchError::Client {
            what: "the client config".into(),
            source,
        })
    }

    /// A builder of the runtime `--runtime multi-thread|current-thread` names (default
    /// multi-thread: a worker per core).
    pub(crate) fn runtime_builder(&self) -> Result<tokio::runtime::Builder> {
        match self.get("runtime", String::from("multi-thread"))?.as_str() {
            "multi-thread" => Ok(tokio::runtime::Builder::new_multi_thread()),
            "current-thread" => Ok(tokio::runtime::Builder::new_current_thread()),
            other => Err(BenchError::Args(format!(
                "--runtime {other:?}: use multi-thread or current-thread"
            ))),
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
        Flags::parse(s.split_whitespace())
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
