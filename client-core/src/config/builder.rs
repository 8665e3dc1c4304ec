//! [`ClientConfigBuilder`]: the setters and [`build`](ClientConfigBuilder::build)
//! (credentials, TLS, defaults, validation).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::namespace::Namespace;
use rmq_remoting::{ClientOptions, RpcHook};

use super::validate::{default_client_ip, no_namesrv, split_addrs, validate};
use super::{ClientConfig, DEFAULT_INSTANCE_NAME, NAMESRV_ADDR_ENV};
use crate::auth::{AclSigner, Credentials};
use crate::error::{Error, Result};

/// Builder of [`ClientConfig`]; [`build`](ClientConfigBuilder::build)
/// validates.
#[derive(Clone, Default)]
pub struct ClientConfigBuilder {
    namesrv_addrs: Option<Vec<String>>,
    instance_name: Option<String>,
    client_ip: Option<String>,
    unit_name: Option<String>,
    namespace: Option<String>,
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
            .field("namespace", &self.namespace)
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

    /// The namespace of every topic and group name of the producers and
    /// consumers built with this config (Java `ClientConfig.setNamespace`):
    /// over the brokers, `orders` becomes `<namespace>%orders`, the group
    /// `billing` `<namespace>%billing`, its retry and dead-letter topics
    /// `%RETRY%<namespace>%billing` and `%DLQ%<namespace>%billing` (see
    /// [`rmq_protocol::namespace`]); what the application sees (message
    /// topics, queues, send results) is unwrapped again. Through a 5.x
    /// proxy (`endpoint(..)`) the namespace is sent as the gRPC resource
    /// namespace, as the Java gRPC client sends it. Letters, digits, `_`,
    /// `-` and `|`; default: none.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
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
    /// [`Error::Config`] when an address is not `host:port`, the instance name,
    /// client IP or unit name is empty or contains `@`, or a timeout or
    /// interval is zero, credentials have an empty key (or a security token
    /// without keys), only one of `RMQ_ACCESS_KEY` / `RMQ_SECRET_KEY` is
    /// set, credentials are combined with a custom RPC hook, or the
    /// name-server list given is empty. No name server at all (none given,
    /// no `NAMESRV_ADDR`) is not an error here (a client of a 5.x proxy
    /// needs none): a producer or consumer of the brokers then refuses to
    /// start.
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
            Some(addrs) if addrs.is_empty() => return Err(no_namesrv()),
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
            namespace: self
                .namespace
                .as_deref()
                .map(Namespace::new)
                .unwrap_or_default(),
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
        if let Some(ns) = &self.namespace {
            rmq_protocol::namespace::check(ns).map_err(Error::Config)?;
        }
        validate(&config)?;
        Ok(config)
    }
}
