//! [`ClientConfig`]: what every producer and consumer shares (Java
//! `ClientConfig`), with a validating [`ClientConfigBuilder`].

use std::fmt;
#[cfg(feature = "local-ip")]
use std::net::IpAddr;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmq_remoting::{ClientOptions, RpcHook};

use crate::auth::{AclSigner, Credentials};
use crate::error::{Error, Result};

/// The environment variable read for the default name-server list
/// (Java `MixAll.NAMESRV_ADDR_ENV`).
pub const NAMESRV_ADDR_ENV: &str = "NAMESRV_ADDR";

/// The instance name a client has until it is made unique (Java
/// `ClientConfig.instanceName` default).
pub const DEFAULT_INSTANCE_NAME: &str = "DEFAULT";

/// The Java client's default consumer group, which consumers refuse to
/// start with (`MixAll.DEFAULT_CONSUMER_GROUP`).
pub use rmq_protocol::names::DEFAULT_CONSUMER_GROUP;

/// Client configuration shared by every producer and consumer of a
/// [`ClientInstance`](crate::ClientInstance).
///
/// Build it with [`ClientConfig::builder`]; every default is the Java
/// client's. Two configs with the same [`client_id`](ClientConfig::client_id)
/// share one `ClientInstance` in a process.
///
/// ```
/// use std::time::Duration;
/// use rmq_client_core::ClientConfig;
///
/// let config = ClientConfig::builder()
///     .namesrv_addr("127.0.0.1:9876")
///     .instance_name("orders")
///     .client_ip("10.0.0.5")
///     .request_timeout(Duration::from_secs(5))
///     .build()
///     .unwrap();
/// assert_eq!(config.client_id(), "10.0.0.5@orders");
/// ```
#[derive(Clone)]
pub struct ClientConfig {
    namesrv_addrs: Vec<String>,
    instance_name: String,
    client_ip: String,
    unit_name: Option<String>,
    request_timeout: Duration,
    poll_name_server_interval: Duration,
    heartbeat_broker_interval: Duration,
    persist_consumer_offset_interval: Duration,
    vip_channel_enabled: bool,
    credentials: Option<Credentials>,
    #[cfg(feature = "tls")]
    tls: Option<rmq_remoting::TlsConfig>,
    remoting: ClientOptions,
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("namesrv_addrs", &self.namesrv_addrs)
            .field("instance_name", &self.instance_name)
            .field("client_ip", &self.client_ip)
            .field("unit_name", &self.unit_name)
            .field("request_timeout", &self.request_timeout)
            .field("poll_name_server_interval", &self.poll_name_server_interval)
            .field("heartbeat_broker_interval", &self.heartbeat_broker_interval)
            .field(
                "persist_consumer_offset_interval",
                &self.persist_consumer_offset_interval,
            )
            .field("vip_channel_enabled", &self.vip_channel_enabled)
            .field("credentials", &self.credentials)
            .field("remoting", &self.remoting)
            .finish_non_exhaustive()
    }
}

impl ClientConfig {
    /// A builder with every field at its default.
    pub fn builder() -> ClientConfigBuilder {
        ClientConfigBuilder::default()
    }

    /// The client config a producer or consumer builder was given: `config`
    /// when set, else a default config with `namesrv_addrs` (`;`-separated)
    /// when set, else the defaults (name servers from `NAMESRV_ADDR`).
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) when the built config is invalid.
    pub fn from_parts(
        config: Option<ClientConfig>,
        namesrv_addrs: Option<String>,
    ) -> crate::Result<ClientConfig> {
        match (config, namesrv_addrs) {
            (Some(c), _) => Ok(c),
            (None, Some(addrs)) => ClientConfig::builder().namesrv_addr(addrs).build(),
            (None, None) => ClientConfig::builder().build(),
        }
    }

    /// Name-server addresses (`host:port`), tried in turn.
    ///
    /// Java `namesrvAddr` (`;`-separated). Default: the `NAMESRV_ADDR`
    /// environment variable, split on `;`.
    pub fn namesrv_addrs(&self) -> &[String] {
        &self.namesrv_addrs
    }

    /// Instance name. Java `instanceName`; default `DEFAULT` (or the
    /// `rocketmq.client.name` system property in Java), replaced by
    /// `<pid>#<nanos>` when a producer or clustering consumer starts, see
    /// [`change_instance_name_to_pid`](ClientConfig::change_instance_name_to_pid).
    pub fn instance_name(&self) -> &str {
        &self.instance_name
    }

    /// Client IP used in the client id. Java `clientIP`; default the first
    /// non-loopback local IPv4 address, else `127.0.0.1`.
    pub fn client_ip(&self) -> &str {
        &self.client_ip
    }

    /// Unit name (unitized deployments). Java `unitName`; default none.
    pub fn unit_name(&self) -> Option<&str> {
        self.unit_name.as_deref()
    }

    /// Timeout of the miscellaneous broker and name-server calls (route,
    /// heartbeat, min/max offset, consumer list...). Java
    /// `mqClientApiTimeout`; default 3 s.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// How often every route in use is refreshed from the name server.
    /// Java `pollNameServerInterval`; default 30 s.
    pub fn poll_name_server_interval(&self) -> Duration {
        self.poll_name_server_interval
    }

    /// How often heartbeats are sent to the brokers. Java
    /// `heartbeatBrokerInterval`; default 30 s.
    pub fn heartbeat_broker_interval(&self) -> Duration {
        self.heartbeat_broker_interval
    }

    /// How often consumers persist their offsets (used by the consumer
    /// layers). Java `persistConsumerOffsetInterval`; default 5 s.
    pub fn persist_consumer_offset_interval(&self) -> Duration {
        self.persist_consumer_offset_interval
    }

    /// Whether sends go to the broker's VIP port (listen port − 2). Java
    /// `vipChannelEnabled` (system property
    /// `com.rocketmq.sendMessageWithVIPChannel`); default `false`.
    pub fn vip_channel_enabled(&self) -> bool {
        self.vip_channel_enabled
    }

    /// The credentials every request is signed with (ACL), if any. Java
    /// `AclClientRPCHook`'s `SessionCredentials`; default: from the
    /// `RMQ_ACCESS_KEY` / `RMQ_SECRET_KEY` (/ `RMQ_SECURITY_TOKEN`)
    /// environment variables, else none.
    pub fn credentials(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }

    /// The TLS settings of every name-server and broker connection, if TLS
    /// is on. Default: plaintext.
    #[cfg(feature = "tls")]
    pub fn tls(&self) -> Option<&rmq_remoting::TlsConfig> {
        self.tls.as_ref()
    }

    /// Options handed to the remoting client (connect timeout, RPC hook,
    /// serialization). Default: [`ClientOptions::default`].
    pub fn remoting_options(&self) -> &ClientOptions {
        &self.remoting
    }

    /// The client id: `ip@instance` or `ip@instance@unit` (Java
    /// `ClientConfig.buildMQClientId`). Instances are shared per client id.
    pub fn client_id(&self) -> String {
        match &self.unit_name {
            Some(unit) => format!("{}@{}@{}", self.client_ip, self.instance_name, unit),
            None => format!("{}@{}", self.client_ip, self.instance_name),
        }
    }

    /// Replaces the instance name `DEFAULT` with `<pid>#<nanos>` (Java
    /// `changeInstanceNameToPID`), so that two producers or clustering
    /// consumers started in one process with default configs get distinct
    /// client ids per start. A name the user set is kept. Producers and
    /// clustering consumers call this before
    /// [`ClientInstance::get_or_start`](crate::ClientInstance::get_or_start).
    pub fn change_instance_name_to_pid(&mut self) {
        if self.instance_name == DEFAULT_INSTANCE_NAME {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            self.instance_name = format!("{}#{}", std::process::id(), nanos);
        }
    }

    /// The address to send to for `broker_addr`: the VIP port (port − 2)
    /// when [`vip_channel_enabled`](ClientConfig::vip_channel_enabled),
    /// else `broker_addr` unchanged (Java `MixAll.brokerVIPChannel`).
    pub fn send_addr(&self, broker_addr: &str) -> String {
        if !self.vip_channel_enabled {
            return broker_addr.to_owned();
        }
        match broker_addr.rsplit_once(':') {
            Some((host, port)) => match port.parse::<u32>() {
                Ok(p) if p >= 2 => format!("{host}:{}", p - 2),
                _ => broker_addr.to_owned(),
            },
            None => broker_addr.to_owned(),
        }
    }
}

/// Builder of [`ClientConfig`]; [`build`](ClientConfigBuilder::build)
/// validates.
#[derive(Clone, Default)]
pub struct ClientConfigBuilder {
    namesrv_addrs: Option<Vec<String>>,
    instance_name: Option<String>,
    client_ip: Option<String>,
    unit_name: Option<String>,
    request_timeout: Option<Duration>,
    poll_name_server_interval: Option<Duration>,
    heartbeat_broker_interval: Option<Duration>,
    persist_consumer_offset_interval: Option<Duration>,
    vip_channel_enabled: bool,
    credentials: Option<Credentials>,
    #[cfg(feature = "tls")]
    tls: Option<rmq_remoting::TlsConfig>,
    remoting: Option<ClientOptions>,
}

impl fmt::Debug for ClientConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfigBuilder")
            .field("namesrv_addrs", &self.namesrv_addrs)
            .field("instance_name", &self.instance_name)
            .field("client_ip", &self.client_ip)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

impl ClientConfigBuilder {
    /// Name-server addresses, `;`-separated like Java `namesrvAddr`
    /// (`"10.0.0.1:9876;10.0.0.2:9876"`). Replaces earlier addresses.
    /// Default: the `NAMESRV_ADDR` environment variable.
    pub fn namesrv_addr(mut self, addrs: impl AsRef<str>) -> Self {
        self.namesrv_addrs = Some(split_addrs(addrs.as_ref()));
        self
    }

    /// Name-server addresses as a list. Replaces earlier addresses.
    pub fn namesrv_addrs<I, S>(mut self, addrs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.namesrv_addrs = Some(
            addrs
                .into_iter()
                .map(|a| a.into().trim().to_owned())
                .collect(),
        );
        self
    }

    /// Instance name. Java `instanceName`; default `DEFAULT`.
    pub fn instance_name(mut self, name: impl Into<String>) -> Self {
        self.instance_name = Some(name.into());
        self
    }

    /// Client IP for the client id. Java `clientIP`; default the first
    /// non-loopback local IPv4 address, else `127.0.0.1`.
    pub fn client_ip(mut self, ip: impl Into<String>) -> Self {
        self.client_ip = Some(ip.into());
        self
    }

    /// Unit name. Java `unitName`; default none.
    pub fn unit_name(mut self, unit: impl Into<String>) -> Self {
        self.unit_name = Some(unit.into());
        self
    }

    /// Timeout of miscellaneous calls. Java `mqClientApiTimeout`; default 3 s.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// Route refresh interval. Java `pollNameServerInterval`; default 30 s.
    pub fn poll_name_server_interval(mut self, interval: Duration) -> Self {
        self.poll_name_server_interval = Some(interval);
        self
    }

    /// Heartbeat interval. Java `heartbeatBrokerInterval`; default 30 s.
    pub fn heartbeat_broker_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_broker_interval = Some(interval);
        self
    }

    /// Offset persist interval. Java `persistConsumerOffsetInterval`;
    /// default 5 s.
    pub fn persist_consumer_offset_interval(mut self, interval: Duration) -> Self {
        self.persist_consumer_offset_interval = Some(interval);
        self
    }

    /// Send through the broker's VIP port. Java `vipChannelEnabled`;
    /// default `false`.
    pub fn vip_channel_enabled(mut self, enabled: bool) -> Self {
        self.vip_channel_enabled = enabled;
        self
    }

    /// Signs every request (producers, consumers, heartbeats, offsets,
    /// send-back, locks) with `access_key` / `secret_key` for a broker with
    /// ACL: 5.x ACL 2.0 (the user name and its password) or 4.9.x ACL 1.0
    /// (`plain_acl.yml`). Java `new AclClientRPCHook(new
    /// SessionCredentials(ak, sk))`. The secret never appears in `Debug`
    /// output or logs.
    ///
    /// Default: `RMQ_ACCESS_KEY` / `RMQ_SECRET_KEY` from the environment
    /// when both are set (ignored when an [`rpc_hook`](Self::rpc_hook) is
    /// installed), else unsigned.
    pub fn credentials(
        mut self,
        access_key: impl Into<String>,
        secret_key: impl Into<String>,
    ) -> Self {
        let token = self.credentials.take().and_then(|c| c.security_token);
        let mut c = Credentials::new(access_key, secret_key);
        c.security_token = token;
        self.credentials = Some(c);
        self
    }

    /// A security token sent (and signed) with the credentials (Java
    /// `SessionCredentials.securityToken`); needs
    /// [`credentials`](Self::credentials).
    pub fn security_token(mut self, token: impl Into<String>) -> Self {
        let c = self
            .credentials
            .take()
            .unwrap_or_else(|| Credentials::new("", ""));
        self.credentials = Some(c.with_security_token(token));
        self
    }

    /// Like [`credentials`](Self::credentials), from a [`Credentials`] value.
    pub fn with_credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Speaks TLS to every name server and broker (Java `useTLS`), with
    /// the trust roots, client certificate and server name of `tls`; the
    /// certificates are loaded by [`build`](Self::build). For brokers
    /// started with `-Dtls.server.mode=enforcing` (or `permissive`).
    ///
    /// Default: plaintext.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: rmq_remoting::TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Remoting options (connect timeout, serialization, RPC hook). Default:
    /// [`ClientOptions::default`].
    pub fn remoting_options(mut self, options: ClientOptions) -> Self {
        self.remoting = Some(options);
        self
    }

    /// Installs an RPC hook (Java `RPCHook`, e.g. ACL signing) on the
    /// remoting options. Default: none.
    pub fn rpc_hook(mut self, hook: Arc<dyn RpcHook>) -> Self {
        let options = self.remoting.take().unwrap_or_default();
        self.remoting = Some(options.with_rpc_hook(hook));
        self
    }

    /// Checks the settings and builds the config.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when no name server is given (neither here nor in
    /// `NAMESRV_ADDR`), an address is not `host:port`, the instance name,
    /// client IP or unit name is empty or contains `@`, or a timeout or
    /// interval is zero, credentials have an empty key (or a security token
    /// without keys), only one of `RMQ_ACCESS_KEY` / `RMQ_SECRET_KEY` is
    /// set, or credentials are combined with a custom RPC hook.
    pub fn build(self) -> Result<ClientConfig> {
        let mut remoting = self.remoting.unwrap_or_default();
        let credentials = match self.credentials {
            Some(c) => {
                c.validate()?;
                if remoting.rpc_hook().is_some() {
                    return Err(Error::Config(
                        "credentials and a custom RPC hook cannot be combined: one hook signs; \
                         sign in your hook (see rmq_client_core::AclSigner) or drop it"
                            .into(),
                    ));
                }
                Some(c)
            }
            None if remoting.rpc_hook().is_none() => Credentials::from_env()?,
            None => None,
        };
        if let Some(c) = &credentials {
            remoting = remoting.with_rpc_hook(Arc::new(AclSigner::new(c)));
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            let connector = tls.connector().map_err(|e| {
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    text.push_str(": ");
                    text.push_str(&s.to_string());
                    source = s.source();
                }
                Error::Config(text)
            })?;
            remoting = remoting.with_tls(connector);
        }
        let namesrv_addrs = match self.namesrv_addrs {
            Some(addrs) => addrs,
            None => std::env::var(NAMESRV_ADDR_ENV)
                .map(|v| split_addrs(&v))
                .unwrap_or_default(),
        };
        let config = ClientConfig {
            namesrv_addrs,
            instance_name: self
                .instance_name
                .unwrap_or_else(|| DEFAULT_INSTANCE_NAME.to_owned()),
            client_ip: self.client_ip.unwrap_or_else(default_client_ip),
            unit_name: self.unit_name,
            request_timeout: self.request_timeout.unwrap_or(Duration::from_secs(3)),
            poll_name_server_interval: self
                .poll_name_server_interval
                .unwrap_or(Duration::from_secs(30)),
            heartbeat_broker_interval: self
                .heartbeat_broker_interval
                .unwrap_or(Duration::from_secs(30)),
            persist_consumer_offset_interval: self
                .persist_consumer_offset_interval
                .unwrap_or(Duration::from_secs(5)),
            vip_channel_enabled: self.vip_channel_enabled,
            credentials,
            #[cfg(feature = "tls")]
            tls: self.tls,
            remoting,
        };
        validate(&config)?;
        Ok(config)
    }
}

/// Splits a `;`-separated address list, dropping empty entries.
fn split_addrs(addrs: &str) -> Vec<String> {
    addrs
        .split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The first non-loopback local IPv4 address, else `127.0.0.1`.
#[cfg(feature = "local-ip")]
fn default_client_ip() -> String {
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
fn default_client_ip() -> String {
    Ipv4Addr::LOCALHOST.to_string()
}

/// Checks a built config.
fn validate(config: &ClientConfig) -> Result<()> {
    if config.namesrv_addrs.is_empty() {
        return Err(Error::Config(format!(
            "no name-server address: set one with ClientConfig::builder().namesrv_addr(\"host:9876\") \
             or the {NAMESRV_ADDR_ENV} environment variable"
        )));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ClientConfigBuilder {
        ClientConfig::builder().namesrv_addr("127.0.0.1:9876")
    }

    #[test]
    fn defaults_are_javas() {
        let c = base().client_ip("10.1.2.3").build().unwrap();
        assert_eq!(c.namesrv_addrs(), ["127.0.0.1:9876"]);
        assert_eq!(c.instance_name(), "DEFAULT");
        assert_eq!(c.request_timeout(), Duration::from_secs(3));
        assert_eq!(c.poll_name_server_interval(), Duration::from_secs(30));
        assert_eq!(c.heartbeat_broker_interval(), Duration::from_secs(30));
        assert_eq!(c.persist_consumer_offset_interval(), Duration::from_secs(5));
        assert!(!c.vip_channel_enabled());
        assert_eq!(c.client_id(), "10.1.2.3@DEFAULT");
    }

    #[test]
    fn default_ip_is_ipv4() {
        let c = base().build().unwrap();
        assert!(
            c.client_ip().parse::<Ipv4Addr>().is_ok(),
            "{}",
            c.client_ip()
        );
    }

    #[test]
    fn client_id_with_unit() {
        let c = base()
            .client_ip("1.2.3.4")
            .instance_name("x")
            .unit_name("u1")
            .build()
            .unwrap();
        assert_eq!(c.client_id(), "1.2.3.4@x@u1");
    }

    #[test]
    fn addr_list_splits_on_semicolon() {
        let c = ClientConfig::builder()
            .namesrv_addr(" a:1; b:2 ;;")
            .build()
            .unwrap();
        assert_eq!(c.namesrv_addrs(), ["a:1", "b:2"]);
    }

    #[test]
    fn invalid_configs_are_rejected() {
        let cases = [
            ClientConfig::builder().namesrv_addr(";"),
            ClientConfig::builder().namesrv_addrs(Vec::<String>::new()),
            ClientConfig::builder().namesrv_addr("nohost"),
            ClientConfig::builder().namesrv_addr("h:0"),
            ClientConfig::builder().namesrv_addr(":9876"),
            base().instance_name(""),
            base().instance_name("a@b"),
            base().client_ip(""),
            base().unit_name(" "),
            base().request_timeout(Duration::ZERO),
            base().heartbeat_broker_interval(Duration::ZERO),
        ];
        for b in cases {
            let dbg = format!("{b:?}");
            assert!(matches!(b.build(), Err(Error::Config(_))), "{dbg}");
        }
    }

    #[test]
    fn instance_name_to_pid() {
        let mut c = base().build().unwrap();
        c.change_instance_name_to_pid();
        let pid = std::process::id().to_string();
        let (p, nanos) = c.instance_name().split_once('#').unwrap();
        assert_eq!(p, pid);
        assert!(nanos.parse::<u128>().is_ok());

        let mut named = base().instance_name("mine").build().unwrap();
        named.change_instance_name_to_pid();
        assert_eq!(named.instance_name(), "mine");
    }

    #[test]
    fn credentials_sign_and_stay_secret() {
        let c = base()
            .credentials("alice", "top-secret-key")
            .security_token("the-token")
            .build()
            .unwrap();
        assert_eq!(c.credentials().map(Credentials::access_key), Some("alice"));
        assert!(c.credentials().is_some_and(Credentials::has_security_token));
        let hook = c.remoting_options().rpc_hook().unwrap();
        let mut req =
            rmq_protocol::RemotingCommand::new_request(rmq_protocol::RequestCode::HEART_BEAT);
        hook.before_request("a:1", &mut req);
        assert_eq!(req.ext_field("AccessKey"), Some("alice"));
        assert_eq!(req.ext_field("SecurityToken"), Some("the-token"));
        assert!(req.ext_field("Signature").is_some());
        let text = format!("{c:?} {:?}", base().credentials("alice", "top-secret-key"));
        assert!(text.contains("alice"), "{text}");
        assert!(
            !text.contains("top-secret-key") && !text.contains("the-token"),
            "{text}"
        );
    }

    #[test]
    fn bad_credentials_are_rejected() {
        for b in [
            base().credentials("", "sk"),
            base().credentials("ak", ""),
            base().security_token("t"),
            base()
                .rpc_hook(Arc::new(AclSigner::new(&Credentials::new("a", "b"))))
                .credentials("ak", "sk"),
        ] {
            assert!(matches!(b.build(), Err(Error::Config(_))));
        }
    }

    #[test]
    fn vip_addr() {
        let c = base().vip_channel_enabled(true).build().unwrap();
        assert_eq!(c.send_addr("1.2.3.4:10911"), "1.2.3.4:10909");
        let c = base().build().unwrap();
        assert_eq!(c.send_addr("1.2.3.4:10911"), "1.2.3.4:10911");
    }
}
