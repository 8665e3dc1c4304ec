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
//! access_key = "orders-app"      # ACL: signs every request
//! secret_key = "..."
//! tls_ca = "/etc/rmq/ca.pem"     # TLS, trusting this CA (`tls = true`: the system roots)
//! tls_cert = "/etc/rmq/client.pem"  # mTLS: client certificate and key
//! tls_key = "/etc/rmq/client.key"
//! ```
//!
//! Credentials: `--access-key`/`--secret-key`, then the profile's, then
//! `RMQ_ACCESS_KEY`/`RMQ_SECRET_KEY`. TLS: any `--tls*` flag, else the
//! profile's `tls*` keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use rmq::{ClientConfig, Credentials};
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

    /// ACL access key (user name): signs every request [default: the profile's, else RMQ_ACCESS_KEY]
    #[arg(long, global = true, value_name = "KEY", requires = "secret_key")]
    pub(crate) access_key: Option<String>,

    /// ACL secret key [default: the profile's, else RMQ_SECRET_KEY]
    #[arg(long, global = true, value_name = "SECRET", requires = "access_key")]
    pub(crate) secret_key: Option<Secret>,

    /// Speak TLS to name servers and brokers, trusting the system roots (or --tls-ca)
    #[arg(long, global = true)]
    pub(crate) tls: bool,

    /// TLS: trust this CA certificate (PEM) [implies --tls]
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) tls_ca: Option<PathBuf>,

    /// mTLS: client certificate (PEM) [implies --tls; needs --tls-key]
    #[arg(long, global = true, value_name = "PATH", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,

    /// mTLS: the client certificate's private key (PEM) [needs --tls-cert]
    #[arg(long, global = true, value_name = "PATH", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,

    /// TLS: the name the server certificates are checked against [default: each address's host]
    #[arg(long, global = true, value_name = "NAME")]
    pub(crate) tls_server_name: Option<String>,
}

/// A secret from the command line or a file: never printed by `Debug`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Ok(Secret(s.to_owned()))
    }
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
    /// ACL access key (with `secret_key`).
    access_key: Option<String>,
    /// ACL secret key (with `access_key`).
    secret_key: Option<Secret>,
    /// TLS with the system roots (implied by the other `tls_*` keys).
    #[serde(default)]
    tls: bool,
    /// TLS: the CA to trust.
    tls_ca: Option<PathBuf>,
    /// mTLS: client certificate (with `tls_key`).
    tls_cert: Option<PathBuf>,
    /// mTLS: its private key.
    tls_key: Option<PathBuf>,
    /// TLS: the server name to check.
    tls_server_name: Option<String>,
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
    /// ACL credentials (`None`: the client's default, the environment).
    pub(crate) credentials: Option<Credentials>,
    /// TLS settings (`None`: plaintext).
    pub(crate) tls: Option<Tls>,
}

/// The TLS settings of a command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tls {
    pub(crate) ca: Option<PathBuf>,
    pub(crate) client_cert: Option<(PathBuf, PathBuf)>,
    pub(crate) server_name: Option<String>,
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
        if let Some(c) = &settings.credentials {
            builder = builder.with_credentials(c.clone());
        }
        if let Some(tls) = &settings.tls {
            #[cfg(feature = "tls")]
            {
                builder = builder.tls(tls_config(tls));
            }
            #[cfg(not(feature = "tls"))]
            {
                let _ = tls;
                return Err(CliError::Usage(
                    "this rmq was built without TLS: rebuild it with the `tls` feature (a default)"
                        .to_owned(),
                ));
            }
        }
        builder.build().map_err(|e| {
            CliError::Usage(format!(
                "name servers {:?} from {}: {e}",
                settings.namesrv, settings.source
            ))
        })
    }
}

/// The client config's TLS settings.
#[cfg(feature = "tls")]
fn tls_config(tls: &Tls) -> rmq::TlsConfig {
    let mut config = rmq::TlsConfig::new();
    if let Some(ca) = &tls.ca {
        config = config.with_ca_file(ca);
    }
    if let Some((cert, key)) = &tls.client_cert {
        config = config.with_client_cert(cert, key);
    }
    if let Some(name) = &tls.server_name {
        config = config.with_server_name(name);
    }
    config
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
    let credentials = credentials(args, profile.as_ref())?;
    let tls = tls(args, profile.as_ref().map(|(_, p)| p));
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
        credentials,
        tls,
    })
}

/// The flags' credentials, else the profile's; both keys or neither.
fn credentials(
    args: &ConnectArgs,
    profile: Option<&(String, Profile)>,
) -> Result<Option<Credentials>> {
    if let (Some(ak), Some(Secret(sk))) = (&args.access_key, &args.secret_key) {
        return Ok(Some(Credentials::new(ak, sk)));
    }
    let Some((name, p)) = profile else {
        return Ok(None);
    };
    match (&p.access_key, &p.secret_key) {
        (Some(ak), Some(Secret(sk))) => Ok(Some(Credentials::new(ak, sk))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(CliError::Usage(format!(
            "profile {name:?} sets access_key without secret_key: set both, or neither"
        ))),
        (None, Some(_)) => Err(CliError::Usage(format!(
            "profile {name:?} sets secret_key without access_key: set both, or neither"
        ))),
    }
}

/// TLS from the flags when any `--tls*` is given, else from the profile.
fn tls(args: &ConnectArgs, profile: Option<&Profile>) -> Option<Tls> {
    let flags = args.tls
        || args.tls_ca.is_some()
        || args.tls_cert.is_some()
        || args.tls_server_name.is_some();
    if flags {
        return Some(Tls {
            ca: args.tls_ca.clone(),
            client_cert: args.tls_cert.clone().zip(args.tls_key.clone()),
            server_name: args.tls_server_name.clone(),
        });
    }
    let p = profile?;
    let on = p.tls || p.tls_ca.is_some() || p.tls_cert.is_some() || p.tls_server_name.is_some();
    on.then(|| Tls {
        ca: p.tls_ca.clone(),
        client_cert: p.tls_cert.clone().zip(p.tls_key.clone()),
        server_name: p.tls_server_name.clone(),
    })
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
        let half = file("[profiles.default]\nnamesrv = \"a:1\"\naccess_key = \"AK\"\n");
        let refused = resolve(&args(None, None), None, Some(&half), None).unwrap_err();
        assert!(refused.to_string().contains("access_key"), "{refused}");
        assert!(toml::from_str::<ConfigFile>("[profiles.x]\nnamesrvv = \"a\"").is_err());
        assert!(toml::from_str::<ConfigFile>("[profiles.x]\ntimeout = \"soon\"").is_err());
    }

    #[test]
    fn credentials_and_tls_from_flags_then_profile() {
        let f = file(
            "[profiles.sec]\nnamesrv = \"a:1\"\naccess_key = \"AK\"\nsecret_key = \"SK\"\n\
             tls_ca = \"/ca.pem\"\ntls_cert = \"/c.pem\"\ntls_key = \"/c.key\"\n",
        );
        let from_profile = resolve(&args(None, Some("sec")), None, Some(&f), None).unwrap();
        let c = from_profile.credentials.as_ref().unwrap();
        assert_eq!(c.access_key(), "AK");
        let tls = from_profile.tls.as_ref().unwrap();
        assert_eq!(tls.ca.as_deref(), Some(Path::new("/ca.pem")));
        assert_eq!(
            tls.client_cert,
            Some((PathBuf::from("/c.pem"), PathBuf::from("/c.key")))
        );
        let debug = format!("{from_profile:?} {f:?}");
        assert!(!debug.contains("SK"), "the secret in Debug: {debug}");

        let flags = ConnectArgs {
            access_key: Some("AK2".to_owned()),
            secret_key: Some(Secret("SK2".to_owned())),
            tls: true,
            ..args(None, Some("sec"))
        };
        let s = resolve(&flags, None, Some(&f), None).unwrap();
        assert_eq!(s.credentials.as_ref().unwrap().access_key(), "AK2");
        assert_eq!(
            s.tls,
            Some(Tls::default()),
            "--tls: the system roots, no profile keys"
        );
        assert!(!format!("{flags:?}").contains("SK2"));

        let plain = resolve(&args(Some("a:1"), None), None, None, None).unwrap();
        assert_eq!(
            (plain.credentials.is_none(), plain.tls.is_none()),
            (true, true)
        );
    }
}
