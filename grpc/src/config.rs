//! [`GrpcConfig`]: where the proxy is and how calls to it behave.

use std::time::Duration;

use crate::auth::GrpcCredentials;
use crate::error::{Error, Result};

/// Settings of a gRPC session with a RocketMQ 5.x proxy. The defaults are
/// the Java gRPC client's (`ClientConfiguration`: request timeout 3 s;
/// heartbeats every 10 s).
#[derive(Clone, PartialEq, Eq)]
pub struct GrpcConfig {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) request_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) initial_backoff: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) namespace: String,
    pub(crate) credentials: Option<GrpcCredentials>,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<rmq_remoting::TlsConfig>,
}

impl std::fmt::Debug for GrpcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcConfig")
            .field("endpoint", &self.endpoint())
            .field("request_timeout", &self.request_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("namespace", &self.namespace)
            .field("credentials", &self.credentials)
            .field("tls", &self.uses_tls())
            .finish_non_exhaustive()
    }
}

impl GrpcConfig {
    /// A configuration for the proxy at `endpoint` (`host:port`, optionally
    /// prefixed with `http://`), with the default timeouts.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidEndpoint`] when it is not `host:port`.
    pub fn new(endpoint: &str) -> Result<Self> {
        let (host, port) = parse_endpoint(endpoint)?;
        Ok(GrpcConfig {
            host,
            port,
            request_timeout: Duration::from_secs(3),
            connect_timeout: Duration::from_secs(3),
            max_attempts: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            heartbeat_interval: Duration::from_secs(10),
            namespace: String::new(),
            credentials: None,
            #[cfg(feature = "tls")]
            tls: None,
        })
    }

    /// `host:port` of the proxy.
    pub fn endpoint(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Deadline of one call (Java `requestTimeout`). Default: 3 s.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The deadline of one call.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Attempts of a call that fails with a retryable error (gRPC
    /// `UNAVAILABLE`, the proxy's `TOO_MANY_REQUESTS`, ...), the first
    /// included; 1 = no retry. Default: 3.
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Backoff before the first retry, doubled for each next one up to
    /// `max`. Default: 100 ms up to 1 s.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Interval of the `Heartbeat` calls. Default: 10 s.
    pub fn with_heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval.max(Duration::from_millis(100));
        self
    }

    /// The resource namespace of topics and groups (`x-mq-namespace`).
    /// Default: none.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Signs every call with these credentials (an ACL-enabled proxy;
    /// the Java gRPC client's `SessionCredentialsProvider`). Default: none.
    pub fn with_credentials(mut self, credentials: GrpcCredentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// The credentials calls are signed with, if any.
    pub fn credentials(&self) -> Option<&GrpcCredentials> {
        self.credentials.as_ref()
    }

    /// Speaks TLS to the proxy (HTTP/2 negotiated with ALPN), with these
    /// trust anchors, client certificate and server name (the Java gRPC
    /// client's `enableSsl`). Default: plaintext.
    #[cfg(feature = "tls")]
    pub fn with_tls(mut self, tls: rmq_remoting::TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The TLS settings, when TLS is on.
    #[cfg(feature = "tls")]
    pub fn tls(&self) -> Option<&rmq_remoting::TlsConfig> {
        self.tls.as_ref()
    }

    /// Whether the session speaks TLS.
    pub fn uses_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        {
            self.tls.is_some()
        }
        #[cfg(not(feature = "tls"))]
        {
            false
        }
    }

    /// The backoff before retry `n` (1 = the first retry).
    pub(crate) fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.saturating_sub(1)).unwrap_or(u32::MAX);
        self.initial_backoff
            .checked_mul(factor)
            .map_or(self.max_backoff, |d| d.min(self.max_backoff))
    }
}

fn parse_endpoint(endpoint: &str) -> Result<(String, u16)> {
    let bad = |reason: &str| Error::InvalidEndpoint {
        endpoint: endpoint.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = endpoint.trim();
    let rest = rest.strip_prefix("http://").unwrap_or(rest);
    if rest.contains("://") {
        return Err(bad(
            "give host:port (or http://host:port); TLS is GrpcConfig::with_tls, not a scheme",
        ));
    }
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| bad("the port is not a number in 1..=65535"))?;
    if port == 0 {
        return Err(bad("port 0"));
    }
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let c = GrpcConfig::new("127.0.0.1:8081").unwrap();
        assert_eq!(c.endpoint(), "127.0.0.1:8081");
        let c = GrpcConfig::new("http://proxy.local:9000/").unwrap();
        assert_eq!(c.endpoint(), "proxy.local:9000");
        for bad in ["", "host", ":80", "h:0", "h:x", "https://h:1"] {
            assert!(GrpcConfig::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_max() {
        let c = GrpcConfig::new("h:1").unwrap();
        assert_eq!(c.backoff(1), Duration::from_millis(100));
        assert_eq!(c.backoff(2), Duration::from_millis(200));
        assert_eq!(c.backoff(4), Duration::from_millis(800));
        assert_eq!(c.backoff(5), Duration::from_secs(1));
        assert_eq!(c.backoff(40), Duration::from_secs(1));
    }
}
