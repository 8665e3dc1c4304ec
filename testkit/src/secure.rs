//! The secured RocketMQ of the security tests: a second local instance
//! (`RMQ_INSTANCE=secure` of `scripts/rocketmq-local.sh`) beside the plaintext one, with ACL
//! (`RMQ_AUTH=acl`: ACL 2.0 on 5.x, ACL 1.0 on 4.9.x), TLS enforcing on the name server and the
//! broker, and client certificates required (`RMQ_TLS=enforcing RMQ_TLS_CLIENT_AUTH=require`).
//! Started once per test process (or reused when it runs), like [`crate::broker`].
//!
//! On 5.x it also runs the proxy, with ACL and TLS on its gRPC port (the same users and server
//! certificate).
//!
//! Ports: `RMQ_SECURE_NAMESRV_PORT` (default 19876), `RMQ_SECURE_BROKER_PORT` (default 20911;
//! the broker also uses port − 2 and port + 1) and `RMQ_SECURE_PROXY_PORT` (default 18081, gRPC;
//! its remoting port is one less). The version: `RMQ_VERSION` (what `scripts/test.sh` exports for
//! the plaintext broker), else the newest 5.x.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use rmq_client_core::{AclSigner, ClientConfig, ClientConfigBuilder, Credentials};
use rmq_remoting::{ClientOptions, RemotingClient, TlsConfig};

use crate::script::{self, ScriptOutput};

/// The instance name of the secured RocketMQ in `scripts/rocketmq-local.sh`.
pub const INSTANCE: &str = "secure";
/// Default name-server port of the secured instance (`RMQ_SECURE_NAMESRV_PORT`).
pub const DEFAULT_NAMESRV_PORT: u16 = 19876;
/// Default broker port of the secured instance (`RMQ_SECURE_BROKER_PORT`).
pub const DEFAULT_BROKER_PORT: u16 = 20911;
/// Default gRPC port of the secured instance's proxy (`RMQ_SECURE_PROXY_PORT`, 5.x).
pub const DEFAULT_PROXY_PORT: u16 = 18081;

const START_TIMEOUT: Duration = Duration::from_secs(900);

/// The running secured RocketMQ and what a client needs to talk to it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SecureBroker {
    /// Name server address (TLS), `host:port`.
    pub namesrv_addr: String,
    /// The broker's address (TLS, ACL), `host:port`.
    pub broker_addr: String,
    /// The proxy's gRPC endpoint (TLS, ACL), `host:port`; `None` on 4.9.x (no proxy).
    pub proxy_endpoint: Option<String>,
    /// Broker version, e.g. `5.5.0` or `4.9.7`.
    pub version: String,
    /// The normal user: Pub + Sub on every topic and group, but no Sub on [`deny_topic`](Self::deny_topic).
    pub user: Credentials,
    /// The super user (5.x) / admin account (4.9.x).
    pub admin: Credentials,
    /// The topic the normal user may publish to but not subscribe to.
    pub deny_topic: String,
    /// The CA that signed the server and client certificates.
    pub ca: PathBuf,
    /// A CA that signed nothing (a wrong trust anchor).
    pub other_ca: PathBuf,
    /// The client certificate (PEM) the servers accept.
    pub client_cert: PathBuf,
    /// Its private key (PKCS#8 PEM).
    pub client_key: PathBuf,
}

impl SecureBroker {
    /// The major version (4 or 5), if known.
    pub fn major_version(&self) -> Option<u32> {
        self.version.split('.').next()?.parse().ok()
    }

    /// TLS trusting the instance's CA and presenting the client certificate.
    pub fn tls(&self) -> TlsConfig {
        TlsConfig::new()
            .with_ca_file(&self.ca)
            .with_client_cert(&self.client_cert, &self.client_key)
    }

    /// A client config for this instance: its name server, [`tls`](Self::tls), and `credentials`
    /// (none: unsigned). A unique instance name, so every config gets its own client instance.
    pub fn config_builder(&self, credentials: Option<&Credentials>) -> ClientConfigBuilder {
        let mut b = ClientConfig::builder()
            .namesrv_addr(&self.namesrv_addr)
            .instance_name(crate::unique_name("sec"))
            .tls(self.tls());
        if let Some(c) = credentials {
            b = b.with_credentials(c.clone());
        }
        b
    }

    /// [`config_builder`](Self::config_builder) with the normal user, built.
    ///
    /// # Panics
    ///
    /// When the certificates cannot be loaded.
    pub fn user_config(&self) -> ClientConfig {
        self.config_builder(Some(&self.user))
            .build()
            .unwrap_or_else(|e| panic!("rmq-testkit: secure client config: {e}"))
    }

    /// A remoting client signing as the admin, over TLS with the client certificate.
    ///
    /// # Panics
    ///
    /// When the certificates cannot be loaded.
    pub fn admin_client(&self) -> RemotingClient {
        let tls = self
            .tls()
            .connector()
            .unwrap_or_else(|e| panic!("rmq-testkit: secure TLS: {e}"));
        RemotingClient::new(
            ClientOptions::default()
                .with_tls(tls)
                .with_rpc_hook(std::sync::Arc::new(AclSigner::new(&self.admin))),
        )
    }

    /// Creates `topic` (as the admin) with `queues` queues and waits until the name server
    /// routes it.
    ///
    /// # Panics
    ///
    /// When the broker refuses or the route does not appear.
    pub async fn create_topic(&self, topic: &str, queues: i32) {
        self.create(topic, queues, None).await;
    }

    /// [`create_topic`](Self::create_topic) with a 5.x message type (`NORMAL`, `FIFO`, ...),
    /// as topics served by the proxy need.
    ///
    /// # Panics
    ///
    /// As [`create_topic`](Self::create_topic).
    pub async fn create_typed_topic(&self, topic: &str, queues: i32, message_type: &str) {
        self.create(topic, queues, Some(message_type)).await;
    }

    async fn create(&self, topic: &str, queues: i32, message_type: Option<&str>) {
        let client = self.admin_client();
        let (namesrv, broker) = (&self.namesrv_addr, &self.broker_addr);
        let result = match message_type {
            Some(t) => {
                crate::admin::create_typed_topic(&client, namesrv, broker, topic, queues, t).await
            }
            None => crate::admin::create_topic(&client, namesrv, broker, topic, queues).await,
        };
        client.shutdown().await;
        if let Err(e) = result {
            panic!("rmq-testkit: creating {topic} on the secured broker: {e}");
        }
    }
}

static SECURE: OnceLock<Result<SecureBroker, String>> = OnceLock::new();

/// The secured RocketMQ, blocking: starts it (`scripts/rocketmq-local.sh start` with
/// `RMQ_INSTANCE=secure RMQ_AUTH=acl RMQ_TLS=enforcing RMQ_TLS_CLIENT_AUTH=require`) once per
/// process, or reuses the one running. Stop it with
/// `RMQ_INSTANCE=secure scripts/rocketmq-local.sh stop` (`scripts/test.sh` does).
///
/// # Panics
///
/// When it cannot be started; every later call panics the same way.
pub fn ensure_secure_broker() -> &'static SecureBroker {
    match SECURE.get_or_init(start) {
        Ok(b) => b,
        Err(msg) => panic!("rmq-testkit: no secured RocketMQ for the security tests: {msg}"),
    }
}

/// [`ensure_secure_broker`] on tokio's blocking pool.
///
/// # Panics
///
/// As [`ensure_secure_broker`].
pub async fn secure_broker() -> &'static SecureBroker {
    if SECURE.get().is_some() {
        return ensure_secure_broker();
    }
    match tokio::task::spawn_blocking(ensure_secure_broker).await {
        Ok(b) => b,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("rmq-testkit: blocking task failed: {e}"),
    }
}

fn port(var: &str, default: u16) -> String {
    std::env::var(var)
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// The environment of every script call for the secured instance.
pub fn script_env() -> Vec<(&'static str, String)> {
    let broker = port("RMQ_SECURE_BROKER_PORT", DEFAULT_BROKER_PORT);
    let broker_b = broker
        .parse::<u16>()
        .map(|p| p.saturating_add(10).to_string())
        .unwrap_or_default();
    let proxy = port("RMQ_SECURE_PROXY_PORT", DEFAULT_PROXY_PORT);
    let proxy_remoting = proxy
        .parse::<u16>()
        .map(|p| p.saturating_sub(1).to_string())
        .unwrap_or_default();
    vec![
        ("RMQ_INSTANCE", INSTANCE.to_owned()),
        (
            "RMQ_NAMESRV_PORT",
            port("RMQ_SECURE_NAMESRV_PORT", DEFAULT_NAMESRV_PORT),
        ),
        ("RMQ_BROKER_A_PORT", broker),
        ("RMQ_BROKER_B_PORT", broker_b),
        ("RMQ_AUTH", "acl".to_owned()),
        ("RMQ_TLS", "enforcing".to_owned()),
        ("RMQ_TLS_CLIENT_AUTH", "require".to_owned()),
        ("RMQ_SECOND_BROKER", "0".to_owned()),
        // 4.9.x has no proxy: the script says so and starts the rest.
        ("RMQ_PROXY", "1".to_owned()),
        ("RMQ_PROXY_PORT", proxy),
        ("RMQ_PROXY_REMOTING_PORT", proxy_remoting),
    ]
}

fn start() -> Result<SecureBroker, String> {
    let out = script::run_with_env(&["start"], &script_env(), START_TIMEOUT)?;
    if !out.success() {
        return Err(out.describe("starting the secured local RocketMQ"));
    }
    from_exports(&out)
}

fn from_exports(out: &ScriptOutput) -> Result<SecureBroker, String> {
    let env = out.exports();
    let get = |key: &str| {
        env.get(key)
            .cloned()
            .ok_or_else(|| out.describe(&format!("`start` printed no `export {key}=` line")))
    };
    Ok(SecureBroker {
        namesrv_addr: get("NAMESRV_ADDR")?,
        broker_addr: get("RMQ_BROKER_ADDR")?,
        proxy_endpoint: env.get("RMQ_PROXY_ENDPOINT").cloned(),
        version: get("RMQ_VERSION")?,
        user: Credentials::new(get("RMQ_ACCESS_KEY")?, get("RMQ_SECRET_KEY")?),
        admin: Credentials::new(get("RMQ_ADMIN_ACCESS_KEY")?, get("RMQ_ADMIN_SECRET_KEY")?),
        deny_topic: get("RMQ_AUTH_DENY_TOPIC")?,
        ca: get("RMQ_TLS_CA")?.into(),
        other_ca: get("RMQ_TLS_OTHER_CA")?.into(),
        client_cert: get("RMQ_TLS_CERT")?.into(),
        client_key: get("RMQ_TLS_KEY")?.into(),
    })
}
