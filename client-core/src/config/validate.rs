//! The checks of a built [`ClientConfig`] and the defaults derived from the
//! environment (address list, local IP).

#[cfg(feature = "local-ip")]
use std::net::IpAddr;
use std::net::Ipv4Addr;

use super::{ClientConfig, NAMESRV_ADDR_ENV};
use crate::error::{Error, Result};

/// Splits a `;`-separated address list, dropping empty entries.
pub(super) fn split_addrs(addrs: &str) -> Vec<String> {
    addrs
        .split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The first non-loopback local IPv4 address, else `127.0.0.1`.
#[cfg(feature = "local-ip")]
pub(super) fn default_client_ip() -> String {
    let from_interfaces = local_ip_address::list_afinet_netifas()
        .ok()
        .and_then(|list| {
            list.into_iter().find_map(|(_, ip)| match ip {
                IpAddr::V4(v4) if !v4.is_loopback() && !v4.is_unspecified() => Some(v4),
                _ => None,
            })
        });
    from_interfaces.unwrap_or(Ipv4Addr::LOCALHOST).to_string()
}

/// `127.0.0.1`: built without the `local-ip` feature, the host's interfaces are not looked up.
#[cfg(not(feature = "local-ip"))]
pub(super) fn default_client_ip() -> String {
    Ipv4Addr::LOCALHOST.to_string()
}

/// The error of a remoting client started without a name server.
pub(crate) fn no_namesrv() -> Error {
    Error::Config(format!(
        "no name-server address: set one with ClientConfig::builder().namesrv_addr(\"host:9876\") \
         or the {NAMESRV_ADDR_ENV} environment variable"
    ))
}

/// Checks a built config. No name server is fine here (a client of a 5.x
/// proxy needs none); a client instance refuses to start without one.
pub(super) fn validate(config: &ClientConfig) -> Result<()> {
    for addr in &config.namesrv_addrs {
        let valid = match addr.rsplit_once(':') {
            Some((host, port)) => !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0),
            None => false,
        };
        if !valid {
            return Err(Error::Config(format!(
                "name-server address {addr:?} is not host:port (e.g. \"127.0.0.1:9876\")"
            )));
        }
    }
    check_name("instance name", &config.instance_name)?;
    check_name("client IP", &config.client_ip)?;
    if let Some(unit) = &config.unit_name {
        check_name("unit name", unit)?;
    }
    for (what, value) in [
        ("request timeout", config.request_timeout),
        (
            "poll name-server interval",
            config.poll_name_server_interval,
        ),
        ("heartbeat interval", config.heartbeat_broker_interval),
        (
            "persist consumer offset interval",
            config.persist_consumer_offset_interval,
        ),
    ] {
        if value.is_zero() {
            return Err(Error::Config(format!("{what} must be greater than zero")));
        }
    }
    Ok(())
}

/// A client-id component: non-empty, no `@`, no whitespace.
fn check_name(what: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::Config(format!("{what} must not be empty")));
    }
    if value.contains('@') || value.chars().any(char::is_whitespace) {
        return Err(Error::Config(format!(
            "{what} {value:?} must not contain '@' or whitespace (it is part of the client id)"
        )));
    }
    Ok(())
}
