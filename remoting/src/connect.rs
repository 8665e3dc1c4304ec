//! Opening a connection: TCP connect (and the TLS handshake when
//! configured), each bounded by the connect timeout, then its driver.

use std::io;
use std::sync::Arc;

use tokio::net::TcpStream;
use tracing::{debug, info, warn};

use crate::connection::Connection;
use crate::driver::spawn_connection;
use crate::error::{Error, Result};
use crate::shared::ClientShared;

/// Opens a TCP connection to `addr` and starts its driver.
///
/// Holds a tracker token while connecting, so `shutdown` waits for it, and
/// a connect racing with `shutdown` cannot leave a driver behind.
pub(crate) async fn connect_tcp(shared: &Arc<ClientShared>, addr: &str) -> Result<Connection> {
    let _token = shared.tracker.token();
    if shared.is_shutdown() {
        return Err(Error::Shutdown);
    }
    let timeout = shared.options.connect_timeout();
    let connected = tokio::select! {
        biased;
        () = shared.cancel.cancelled() => return Err(Error::Shutdown),
        r = tokio::time::timeout(timeout, TcpStream::connect(addr)) => r,
    };
    let stream = match connected {
        Ok(Ok(stream)) => stream,
        Ok(Err(source)) => {
            warn!(addr, error = %source, "connect failed");
            return Err(Error::Connect {
                addr: addr.to_owned(),
                source,
            });
        }
        Err(_elapsed) => {
            warn!(addr, ?timeout, "connect timed out");
            return Err(Error::Connect {
                addr: addr.to_owned(),
                source: io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connect timed out after {timeout:?}"),
                ),
            });
        }
    };
    if shared.options.tcp_nodelay() {
        if let Err(e) = stream.set_nodelay(true) {
            debug!(addr, error = %rmq_protocol::ErrorChain(&e), "cannot set TCP_NODELAY");
        }
    }
    #[cfg(feature = "tls")]
    if let Some(tls) = shared.options.tls() {
        let handshake = tokio::select! {
            biased;
            () = shared.cancel.cancelled() => return Err(Error::Shutdown),
            r = tokio::time::timeout(timeout, tls.handshake(addr, stream)) => r,
        };
        let stream = match handshake {
            Ok(Ok(stream)) => stream,
            Ok(Err(source)) => {
                warn!(addr, error = %source, "TLS handshake failed");
                return Err(Error::Tls {
                    addr: addr.to_owned(),
                    source,
                });
            }
            Err(_elapsed) => {
                warn!(addr, ?timeout, "TLS handshake timed out");
                return Err(Error::Tls {
                    addr: addr.to_owned(),
                    source: io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no TLS handshake within {timeout:?} (does the peer speak TLS?)"),
                    ),
                });
            }
        };
        log_connected(shared, addr, "TLS");
        return Ok(spawn_connection(shared, addr, stream));
    }
    log_connected(shared, addr, "plaintext");
    Ok(spawn_connection(shared, addr, stream))
}

fn log_connected(shared: &ClientShared, addr: &str, transport: &'static str) {
    if shared.mark_connected(addr) {
        crate::metrics::reconnected();
        warn!(addr, transport, "reconnected");
    } else {
        info!(addr, transport, "connected");
    }
}
