//! [`ClientConfig`]: what every producer and consumer shares (Java
//! `ClientConfig`), with a validating [`ClientConfigBuilder`].
//!
//! The builder is in `builder`, the checks of a built config in `validate`.

mod builder;
mod validate;

pub use builder::ClientConfigBuilder;
pub(crate) use validate::no_namesrv;

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmq_protocol::namespace::Namespace;
use rmq_remoting::ClientOptions;

use crate::auth::Credentials;

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
    namespace: Namespace,
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
            .field("namespace", &self.namespace)
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

    /// The namespace topic and group names are wrapped into
    /// ([`ClientConfigBuilder::namespace`]); [`Namespace::none`] by default.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
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

    /// Whether TLS is on (whatever the crate's features: a crate built
    /// without `tls` uses it to refuse rather than fall back to plaintext).
    pub fn has_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        {
            self.tls.is_some()
        }
        #[cfg(not(feature = "tls"))]
        {
            false
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AclSigner;
    use crate::error::Error;
    use std::net::Ipv4Addr;
    use std::sync::Arc;

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
    fn namespace_is_checked_and_kept() {
        assert!(base().build().unwrap().namespace().is_none());
        let c = base().namespace("prod").build().unwrap();
        assert_eq!(c.namespace().as_str(), "prod");
        assert_eq!(c.namespace().wrap("orders"), "prod%orders");
        // Not part of the client id: clients of two namespaces may share
        // an instance, as in Java.
        assert!(!c.client_id().contains("prod"));
        for bad in ["", "a%b", "a b"] {
            assert!(matches!(
                base().namespace(bad).build(),
                Err(Error::Config(_))
            ));
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
