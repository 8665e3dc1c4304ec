//! Where the command connects: `--namesrv`, a profile of
//! `~/.config/rmq/config.toml`, or `NAMESRV_ADDR`; and the client config
//! built from that.
//!
//! Precedence: `--namesrv`, then an explicitly chosen profile
//! (`--profile` / `RMQ_PROFILE`), then `NAMESRV_ADDR`, then the config
//! file's default profile.
//!
//! ```toml
//! default_profile = "local"
//!
//! [profiles.local]
//! namesrv = "127.0.0.1:9876"
//!
//! [profiles.prod]
//! namesrv = "10.0.0.1:9876;10.0.0.2:9876"
//! timeout = "5s"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use rmq::ClientConfig;
use serde::Deserialize;

use crate::error::{CliError, Result};

/// The environment variable naming the default name servers.
const NAMESRV_ENV: &str = "NAMESRV_ADDR";

/// Connection options every command takes.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ConnectArgs {
    /// Name-server addresses, `host:port`, several separated by `;`
    /// [default: the profile's, else NAMESRV_ADDR]
    #[arg(short = 'n', long, global = true, value_name = "ADDRS")]
    pub(crate) namesrv: Option<String>,

    /// Profile of the config file to use [default: its `default_profile`]
    #[arg(long, global = true, env = "RMQ_PROFILE", value_name = "NAME")]
    pub(crate) profile: Option<String>,

    /// Config file [default: $XDG_CONFIG_HOME/rmq/config.toml or ~/.config/rmq/config.toml]
    #[arg(long, global = true, env = "RMQ_CONFIG", value_name = "PATH")]
    pub(crate) config: Option<PathBuf>,

    /// Timeout of each admin and route call, e.g. `3s`, `500ms` [default: the profile's, else 3s]
    #[arg(long, global = true, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub(crate) timeout: Option<Duration>,
}

/// The config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    /// The profile used when none is chosen.
    default_profile: Option<String>,
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

/// One profile of the config file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Profile {
    namesrv: Option<String>,
    #[serde(default, with = "humantime_serde_opt")]
    timeout: Option<Duration>,
    /// Reserved for ACL credentials (see [`check_security`]).
    access_key: Option<String>,
    /// Reserved for ACL credentials.
    secret_key: Option<String>,
    /// Reserved for TLS.
    tls_ca: Option<PathBuf>,
}

/// `timeout = "5s"` in the config file.
mod humantime_serde_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => humantime::parse_duration(&text)
                .map(Some)
                .map_err(|e| serde::de::Error::custom(format!("timeout {text:?}: {e}"))),
        }
    }
}

/// What a command connects with, resolved from flags, file and environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `;`-separated name-server addresses.
    pub(crate) namesrv: String,
    /// Where they came from, for error messages.
    pub(crate) source: String,
    pub(crate) timeout: Option<Duration>,
}

impl ConnectArgs {
    /// Resolves the settings (reads the config file when there is one).
    pub(crate) fn settings(&self) -> Result<Settings> {
        let env = std::env::var(NAMESRV_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty());
        let path = self.config.clone().or_else(default_config_path);
        let file = match &path {
            Some(p) => read_config(p, self.config.is_some())?,
            None => None,
        };
        resolve(self, env, file.as_ref(), path.as_deref())
    }

    /// The client config for these settings. `instance` names this
    /// process's client instance (its id must differ from other processes').
    pub(crate) fn client_config(&self, instance: &str) -> Result<ClientConfig> {
        let settings = self.settings()?;
        let mut builder = ClientConfig::builder()
            .namesrv_addr(&settings.namesrv)
            .instance_name(format!("{instance}-{}", std::process::id()));
        if let Some(t) = settings.timeout {
            builder = builder.request_timeout(t);
        }
        builder.build().map_err(|e| {
            CliError::Usage(format!(
                "name servers {:?} from {}: {e}",
                settings.namesrv, settings.source
            ))
        })
    }
}

fn default_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("rmq").join("config.toml"))
}

/// Reads the file; a missing default file is no error, a missing file
/// named with `--config` is.
fn read_config(path: &Path, explicit: bool) -> Result<Option<ConfigFile>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => return Ok(None),
        Err(source) => {
            return Err(CliError::ConfigRead {
                path: path.to_owned(),
                source,
            });
        }
    };
    toml::from_str(&text)
        .map(Some)
        .map_err(|source| CliError::ConfigParse {
            path: path.to_owned(),
            source,
        })
}

fn resolve(
    args: &ConnectArgs,
    env: Option<String>,
    file: Option<&ConfigFile>,
    path: Option<&Path>,
) -> Result<Settings> {
    let file_name = || {
        path.map(|p| p.display().to_string())
            .unwrap_or_else(|| "the config file".to_owned())
    };
    let profile = match (&args.profile, file) {
        (Some(name), Some(f)) => Some((
            name.clone(),
            f.profiles.get(name).cloned().ok_or_else(|| {
                CliError::Usage(format!(
                    "no profile {name:?} in {} (profiles: {})",
                    file_name(),
                    f.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            })?,
        )),
        (Some(name), None) => {
            return Err(CliError::Usage(format!(
                "--profile {name}: no config file (looked for {})",
                file_name()
            )));
        }
        (None, Some(f)) => {
            let default = f.default_profile.clone().or_else(|| {
                f.profiles
                    .contains_key("default")
                    .then(|| "default".to_owned())
            });
            match default {
                Some(name) => Some((
                    name.clone(),
                    f.profiles.get(&name).cloned().ok_or_else(|| {
                        CliError::Usage(format!(
                            "default_profile {name:?} is not a profile of {}",
                            file_name()
                        ))
                    })?,
                )),
                None => None,
            }
        }
        (None, None) => None,
    };
    if let Some((name, p)) = &profile {
        check_security(name, p)?;
    }
    let timeout = args
        .timeout
        .or_else(|| profile.as_ref().and_then(|(_, p)| p.timeout));
    let from_profile = profile
        .as_ref()
        .and_then(|(name, p)| p.namesrv.clone().map(|a| (a, format!("profile {name:?}"))));
    let (namesrv, source) = if let Some(a) = &args.namesrv {
        (a.clone(), "--namesrv".to_owned())
    } else if let (Some(_), Some(found)) = (&args.profile, from_profile.clone()) {
        found
    } else if let Some(e) = env {
        (e, NAMESRV_ENV.to_owned())
    } else if let Some(found) = from_profile {
        found
    } else {
        return Err(CliError::Usage(format!(
            "no name server: pass --namesrv HOST:PORT, set {NAMESRV_ENV}, or add a profile with \
             `namesrv = \"HOST:PORT\"` to {}",
            file_name()
        )));
    };
    Ok(Settings {
        namesrv,
        source,
        timeout,
    })
}

/// Credentials and TLS: the profile keys are reserved, but the client has
/// no place for them yet, so a profile that sets them is refused rather
/// than used without them.
fn check_security(name: &str, p: &Profile) -> Result<()> {
    let set: Vec<&str> = [
        ("access_key", p.access_key.is_some()),
        ("secret_key", p.secret_key.is_some()),
        ("tls_ca", p.tls_ca.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, on)| on.then_some(k))
    .collect();
    if set.is_empty() {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "profile {name:?} sets {}: this build of rmq cannot authenticate or use TLS yet; \
             remove them to connect without",
            set.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> ConfigFile {
        toml::from_str(text).unwrap()
    }

    const FILE: &str = r#"
default_profile = "local"
[profiles.local]
namesrv = "127.0.0.1:9876"
[profiles.prod]
namesrv = "10.0.0.1:9876;10.0.0.2:9876"
timeout = "5s"
"#;

    fn args(namesrv: Option<&str>, profile: Option<&str>) -> ConnectArgs {
        ConnectArgs {
            namesrv: namesrv.map(str::to_owned),
            profile: profile.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn precedence() {
        let f = file(FILE);
        let env = || Some("1.1.1.1:1".to_owned());
        let r = |a: ConnectArgs, e: Option<String>| resolve(&a, e, Some(&f), None).unwrap();
        assert_eq!(
            r(args(Some("9.9.9.9:9"), Some("prod")), env()).namesrv,
            "9.9.9.9:9"
        );
        let prod = r(args(None, Some("prod")), env());
        assert_eq!(prod.namesrv, "10.0.0.1:9876;10.0.0.2:9876");
        assert_eq!(prod.timeout, Some(Duration::from_secs(5)));
        assert_eq!(r(args(None, None), env()).namesrv, "1.1.1.1:1");
        assert_eq!(r(args(None, None), None).namesrv, "127.0.0.1:9876");
        assert_eq!(r(args(None, None), None).source, "profile \"local\"");
    }

    #[test]
    fn errors_say_what_to_do() {
        let none = resolve(&args(None, None), None, None, None).unwrap_err();
        assert!(none.to_string().contains("--namesrv"), "{none}");
        let f = file(FILE);
        let missing = resolve(&args(None, Some("qa")), None, Some(&f), None).unwrap_err();
        assert!(missing.to_string().contains("local, prod"), "{missing}");
        let secured = file("[profiles.default]\nnamesrv = \"a:1\"\naccess_key = \"AK\"\n");
        let refused = resolve(&args(None, None), None, Some(&secured), None).unwrap_err();
        assert!(refused.to_string().contains("access_key"), "{refused}");
        assert!(toml::from_str::<ConfigFile>("[profiles.x]\nnamesrvv = \"a\"").is_err());
        assert!(toml::from_str::<ConfigFile>("[profiles.x]\ntimeout = \"soon\"").is_err());
    }
}
