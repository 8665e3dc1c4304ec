//! The TLS connector of a session's channel: TCP to the proxy, then a
//! rustls handshake offering `h2` (the proxy's gRPC server refuses TLS
//! without it), built from the remoting stack's [`TlsConfig`] so that the
//! brokers and the proxy take the same certificate settings.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use rmq_remoting::{TlsConfig, TlsConnector};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tonic::transport::Uri;

use crate::config::GrpcConfig;
use crate::error::{Error, Result};

/// Connects to the proxy over TLS; a `tower` service of `Uri`s, as tonic's
/// `Endpoint::connect_with_connector_lazy` takes.
#[derive(Clone)]
pub(super) struct TlsConnect {
    connector: TlsConnector,
    /// `host:port` of the proxy (the certificate's name is its host unless
    /// the TLS settings name another).
    addr: String,
    timeout: Duration,
}

impl TlsConnect {
    pub(super) fn new(tls: &TlsConfig, config: &GrpcConfig) -> Result<Self> {
        let connector = tls
            .connector_with_alpn(vec![b"h2".to_vec()])
            .map_err(Error::Tls)?;
        Ok(TlsConnect {
            connector,
            addr: config.endpoint(),
            timeout: config.connect_timeout,
        })
    }
}

type Connecting = Pin<Box<dyn Future<Output = io::Result<TokioIo<TlsStream<TcpStream>>>> + Send>>;

impl tower_service::Service<Uri> for TlsConnect {
    type Response = TokioIo<TlsStream<TcpStream>>;
    type Error = io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let connect = async {
                let tcp = TcpStream::connect(&this.addr).await?;
                tcp.set_nodelay(true)?;
                this.connector.handshake(&this.addr, tcp).await
            };
            match tokio::time::timeout(this.timeout, connect).await {
                Ok(Ok(stream)) => Ok(TokioIo::new(stream)),
                Ok(Err(e)) => {
                    tracing::warn!(addr = %this.addr, error = %rmq_protocol::ErrorChain(&e), "TLS connection to the proxy failed");
                    Err(e)
                }
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no TLS connection to {} within {:?} (does the proxy speak TLS there?)",
                        this.addr, this.timeout
                    ),
                )),
            }
        })
    }
}
