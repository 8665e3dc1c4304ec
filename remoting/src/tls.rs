//! TLS for the remoting connections (feature `tls`): [`TlsConfig`] and the
//! connector built from it, on rustls with the `ring` provider.
//!
//! A RocketMQ server (name server or broker, Java `NettyRemotingServer`)
//! speaks TLS on its ordinary port: it peeks at the first byte and starts a
//! TLS handshake when it is `0x16`. With `-Dtls.server.mode=enforcing` it
//! refuses plaintext, with `permissive` (the default) it accepts both. The
//! Java client's `useTLS` / `-Dtls.enable=true` is
//! [`ClientOptions::with_tls`](crate::ClientOptions::with_tls) here.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector as RustlsConnector;
use tokio_rustls::client::TlsStream;
use tracing::warn;

/// How a client speaks TLS to name servers and brokers.
///
/// [`TlsConfig::new`] trusts the operating system's root certificates and
/// verifies the server's certificate against the host of the address it
/// connects to (an IP address must then be in the certificate's subject
/// alternative names); the `with_*` methods change that.
///
/// ```
/// use rmq_remoting::TlsConfig;
///
/// let tls = TlsConfig::new()
///     .with_ca_file("/etc/rocketmq/ca.pem")           // a private CA instead of the system roots
///     .with_client_cert("/etc/rocketmq/client.pem", "/etc/rocketmq/client.key") // mTLS
///     .with_server_name("broker.internal");           // the name in the brokers' certificates
/// assert!(!tls.accepts_invalid_certs());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct TlsConfig {
    ca_files: Vec<PathBuf>,
    system_roots: bool,
    client_cert: Option<(PathBuf, PathBuf)>,
    server_name: Option<String>,
    danger_accept_invalid_certs: bool,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig::new()
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("ca_files", &self.ca_files)
            .field("system_roots", &self.system_roots)
            .field(
                "client_cert",
                &self.client_cert.as_ref().map(|(cert, _key)| cert),
            )
            .field("server_name", &self.server_name)
            .field(
                "danger_accept_invalid_certs",
                &self.danger_accept_invalid_certs,
            )
            .finish()
    }
}

impl TlsConfig {
    /// TLS trusting the system's root certificates, no client certificate,
    /// the server name taken from each address.
    pub fn new() -> Self {
        TlsConfig {
            ca_files: Vec::new(),
            system_roots: true,
            client_cert: None,
            server_name: None,
            danger_accept_invalid_certs: false,
        }
    }

    /// Trusts the CA certificate(s) in the PEM file at `path` (Java
    /// `tls.client.trustCertPath`). The system roots are then no longer
    /// trusted, unless [`with_system_roots(true)`](TlsConfig::with_system_roots)
    /// follows. May be called more than once.
    pub fn with_ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_files.push(path.into());
        self.system_roots = false;
        self
    }

    /// Whether the operating system's root certificates are trusted.
    /// Default: `true`, `false` after [`with_ca_file`](TlsConfig::with_ca_file).
    pub fn with_system_roots(mut self, trust: bool) -> Self {
        self.system_roots = trust;
        self
    }

    /// Presents the client certificate chain in the PEM file `cert` with
    /// the private key (PKCS#8, SEC1 or PKCS#1 PEM) in `key`, for servers
    /// that require client authentication
    /// (`tls.server.need.client.auth=require`; Java `tls.client.certPath`,
    /// `tls.client.keyPath`).
    pub fn with_client_cert(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.client_cert = Some((cert.into(), key.into()));
        self
    }

    /// Verifies every server's certificate against `name` instead of the
    /// host of the address connected to (the name servers hand out broker
    /// addresses as IPs; their certificates often name a DNS name).
    pub fn with_server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// Accepts any server certificate, unverified: for a broker in TLS test
    /// mode (`tls.test.mode.enable=true`, a self-signed certificate made at
    /// startup), never for production. The traffic is encrypted but the
    /// server is not authenticated. Off by default; a warning is logged
    /// when a client is built with it.
    pub fn danger_accept_invalid_certs(mut self, accept: bool) -> Self {
        self.danger_accept_invalid_certs = accept;
        self
    }

    /// Whether [`danger_accept_invalid_certs`](TlsConfig::danger_accept_invalid_certs) is on.
    pub fn accepts_invalid_certs(&self) -> bool {
        self.danger_accept_invalid_certs
    }

    /// The CA files trusted.
    pub fn ca_files(&self) -> &[PathBuf] {
        &self.ca_files
    }

    /// The server name override, if any.
    pub fn server_name(&self) -> Option<&str> {
        self.server_name.as_deref()
    }

    /// Whether a client certificate is configured.
    pub fn has_client_cert(&self) -> bool {
        self.client_cert.is_some()
    }

    /// Loads the certificates and keys and builds the connector.
    ///
    /// # Errors
    ///
    /// [`TlsSetupError`] when a file cannot be read or parsed, no trusted
    /// root is left, or the key does not match the certificate.
    pub fn connector(&self) -> Result<TlsConnector, TlsSetupError> {
        self.connector_with_alpn(Vec::new())
    }

    /// [`connector`](Self::connector) that offers `protocols` in the
    /// handshake's ALPN extension (e.g. `h2` for a gRPC server, which
    /// refuses a TLS connection without it).
    ///
    /// # Errors
    ///
    /// As [`connector`](Self::connector).
    pub fn connector_with_alpn(
        &self,
        protocols: Vec<Vec<u8>>,
    ) -> Result<TlsConnector, TlsSetupError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsSetupError::new("the TLS protocol versions", e))?;
        let builder = if self.danger_accept_invalid_certs {
            warn!(
                "TLS: danger_accept_invalid_certs is on: server certificates are NOT verified \
                 (for brokers in TLS test mode only)"
            );
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCert {
                    algorithms: provider.signature_verification_algorithms,
                }))
        } else {
            builder.with_root_certificates(self.roots()?)
        };
        let mut config = match &self.client_cert {
            Some((cert, key)) => {
                let chain = read_certs(cert)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    TlsSetupError::new(format!("the private key {}", key.display()), e)
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    TlsSetupError::new(format!("the client certificate {}", cert.display()), e)
                })?
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = protocols;
        let server_name = match &self.server_name {
            Some(name) => Some(
                ServerName::try_from(name.clone())
                    .map_err(|e| TlsSetupError::new(format!("the server name {name:?}"), e))?,
            ),
            None => None,
        };
        Ok(TlsConnector {
            connector: RustlsConnector::from(Arc::new(config)),
            server_name,
        })
    }

    fn roots(&self) -> Result<RootCertStore, TlsSetupError> {
        let mut roots = RootCertStore::empty();
        if self.system_roots {
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                warn!(error = %rmq_protocol::ErrorChain(e), "TLS: a system root certificate could not be loaded");
            }
            let (_added, _ignored) = roots.add_parsable_certificates(found.certs);
        }
        for path in &self.ca_files {
            for cert in read_certs(path)? {
                roots.add(cert).map_err(|e| {
                    TlsSetupError::new(format!("a CA certificate in {}", path.display()), e)
                })?;
            }
        }
        if roots.is_empty() {
            return Err(TlsSetupError {
                what: "the trusted roots".into(),
                source: Box::new(io::Error::new(
                    io::ErrorKind::NotFound,
                    "no trusted root certificate: give a CA file (with_ca_file) or install the \
                     system's CA certificates",
                )),
            });
        }
        Ok(roots)
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let what = || format!("the certificate file {}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| TlsSetupError::new(what(), e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsSetupError::new(what(), e))?;
    if certs.is_empty() {
        return Err(TlsSetupError::new(
            what(),
            io::Error::new(io::ErrorKind::InvalidData, "no PEM certificate in it"),
        ));
    }
    Ok(certs)
}

/// A TLS setting could not be applied: the text names the file or setting.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up TLS: {what} is not usable")]
pub struct TlsSetupError {
    what: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl TlsSetupError {
    fn new(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        TlsSetupError {
            what: what.into(),
            source: Box::new(source),
        }
    }
}

/// A built TLS connector (certificates loaded, see
/// [`TlsConfig::connector`]), shared by every connection of a client; give
/// it to [`ClientOptions::with_tls`](crate::ClientOptions::with_tls).
#[derive(Clone)]
pub struct TlsConnector {
    connector: RustlsConnector,
    server_name: Option<ServerName<'static>>,
}

impl fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConnector")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl TlsConnector {
    /// Runs the client handshake on `tcp`, connected to `addr`
    /// (`host:port`): the server's certificate is checked against the
    /// configured server name, else the host of `addr`.
    ///
    /// # Errors
    ///
    /// The handshake's I/O error (a rejected certificate is an
    /// `InvalidData` error whose inner error is rustls's).
    pub async fn handshake(&self, addr: &str, tcp: TcpStream) -> io::Result<TlsStream<TcpStream>> {
        let name = match &self.server_name {
            Some(name) => name.clone(),
            None => server_name_of(addr)?,
        };
        self.connector.connect(name, tcp).await
    }
}

/// The host part of `host:port` (`[v6]:port` too) as a server name.
fn server_name_of(addr: &str) -> io::Result<ServerName<'static>> {
    let host = match addr.rsplit_once(':') {
        Some((host, _port)) => host,
        None => addr,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{host:?} is not a valid TLS server name ({e}); set TlsConfig::with_server_name"
            ),
        )
    })
}

/// Whether `e` (a handshake or read error) is a rejected certificate: the
/// server's not trusted (unknown issuer, wrong name, expired), or ours
/// refused by the server (bad / missing certificate alert).
pub(crate) fn is_certificate_error(e: &io::Error) -> bool {
    use rustls::AlertDescription as A;
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented) => true,
        Some(rustls::Error::AlertReceived(alert)) => matches!(
            alert,
            A::BadCertificate
                | A::CertificateRequired
                | A::UnknownCA
                | A::CertificateUnknown
                | A::CertificateExpired
                | A::CertificateRevoked
                | A::UnsupportedCertificate
                | A::AccessDenied
        ),
        _ => false,
    }
}

/// The verifier of `danger_accept_invalid_certs`: any certificate is
/// accepted, but the handshake signatures are still checked (so the peer
/// holds the key of the certificate it sent).
#[derive(Debug)]
struct AcceptAnyCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_from_addresses() {
        assert!(matches!(
            server_name_of("127.0.0.1:10911").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name_of("broker.local:10911").unwrap(),
            ServerName::DnsName(_)
        ));
        assert!(matches!(
            server_name_of("[::1]:10911").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(server_name_of("bad name:1").is_err());
    }

    #[test]
    fn bad_files_are_named() {
        let e = TlsConfig::new()
            .with_ca_file("/nonexistent/ca.pem")
            .connector()
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
        let e = TlsConfig::new()
            .danger_accept_invalid_certs(true)
            .with_client_cert("/nonexistent/c.pem", "/nonexistent/c.key")
            .connector()
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/c.pem"), "{e}");
    }

    #[test]
    fn debug_shows_no_key_path() {
        let t = TlsConfig::new().with_client_cert("/c.pem", "/secret/c.key");
        let text = format!("{t:?}");
        assert!(text.contains("/c.pem") && !text.contains("c.key"), "{text}");
    }
}
