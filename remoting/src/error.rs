//! The remoting crate's error type.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::{RequestCode, ResponseCode};

/// Errors returned by [`RemotingClient`](crate::RemotingClient) calls.
///
/// A broker's answer with a non-success response code is *not* an error at
/// this layer: [`invoke`](crate::RemotingClient::invoke) returns the response
/// command and the caller interprets its code.
///
/// For the errors that concern delivery, [`Error::is_retry_safe`] says
/// whether the request certainly never left this client (so a retry cannot
/// duplicate it), and [`Error::is_retryable`] whether a retry may succeed at
/// all.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The TCP connection to `addr` could not be opened (refused, unresolvable
    /// address, or the connect timeout elapsed). The request was never sent.
    #[error("cannot connect to {addr}; check that the address is right and the peer is up")]
    Connect {
        /// The address, as passed to the call.
        addr: String,
        /// What the OS reported (kind `TimedOut` when the connect timeout elapsed).
        #[source]
        source: io::Error,
    },

    /// The TLS handshake with `addr` failed: its certificate is not trusted
    /// (unknown CA, another name, expired), the server refused ours (or
    /// wants one), or the peer does not speak TLS. The request was never
    /// sent; retrying will not help until the TLS settings or certificates
    /// change.
    #[error(
        "TLS handshake with {addr} failed; check the CA, the server name and the client certificate"
    )]
    Tls {
        /// The address, as passed to the call.
        addr: String,
        /// What rustls reported (e.g. `invalid peer certificate: UnknownIssuer`).
        #[source]
        source: io::Error,
    },

    /// No response arrived within the call's timeout.
    ///
    /// The timeout covers connecting, waiting for room in the write queue and
    /// the round trip.
    #[error(
        "request {code:?} to {addr} timed out after {after:?} {}",
        if *written { "after it was handed to the connection (it may have reached the peer)" }
        else { "before it was sent (retrying is safe)" }
    )]
    Timeout {
        /// The address, as passed to the call.
        addr: String,
        /// The request code.
        code: RequestCode,
        /// The timeout that elapsed.
        after: Duration,
        /// `true` when the request had been handed to the connection's write
        /// queue, so it may have reached the peer (outcome unknown); `false`
        /// when it certainly never left this client.
        written: bool,
    },

    /// The connection closed while the request was queued or in flight.
    #[error(
        "connection to {addr} closed {}",
        if *written { "after the request was written; its outcome is unknown" }
        else { "before the request was sent (retrying is safe)" }
    )]
    ConnectionClosed {
        /// The address of the connection.
        addr: String,
        /// `true` when the request may have reached the peer (outcome
        /// unknown, a retry may duplicate it); `false` when it was never
        /// written to the socket.
        written: bool,
        /// Why the connection closed.
        #[source]
        reason: CloseReason,
    },

    /// A frame could not be encoded (e.g. a request larger than the maximum
    /// frame length). Only this request failed; the connection is intact.
    #[error("cannot encode the request frame")]
    Protocol(#[from] rmq_protocol::Error),

    /// The peer answered with a response code the caller did not accept
    /// (see [`RemotingClient::invoke_expect`](crate::RemotingClient::invoke_expect)).
    #[error(
        "{addr} answered {request:?} with {code:?}{}",
        remark.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
    )]
    Response {
        /// The address of the peer.
        addr: String,
        /// The request code that was sent.
        request: RequestCode,
        /// The peer's response code.
        code: ResponseCode,
        /// The peer's remark (its error text), if any.
        remark: Option<String>,
    },

    /// The client has been shut down; create a new one to send more requests.
    #[error("the remoting client has been shut down")]
    Shutdown,
}

impl Error {
    /// Whether this is a timeout: of the call, or of the TCP connect.
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Timeout { .. } => true,
            Error::Connect { source, .. } => source.kind() == io::ErrorKind::TimedOut,
            _ => false,
        }
    }

    /// The peer's response code, for [`Error::Response`].
    pub fn response_code(&self) -> Option<ResponseCode> {
        match self {
            Error::Response { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether a certificate was rejected: the server's by this client (a
    /// TLS handshake error), or this client's by the server (a TLS alert
    /// such as "certificate required" that closed the connection after the
    /// handshake, as TLS 1.3 servers do). Always `false` without the `tls`
    /// feature.
    pub fn is_certificate_error(&self) -> bool {
        match self {
            Error::Tls { source, .. } => is_certificate_io_error(source),
            Error::ConnectionClosed {
                reason: CloseReason::Read(e),
                ..
            } => is_certificate_io_error(e),
            _ => false,
        }
    }

    /// Whether the connection closed under the request.
    pub fn is_connection_closed(&self) -> bool {
        matches!(self, Error::ConnectionClosed { .. })
    }

    /// Whether the request certainly never reached the peer, so sending it
    /// again cannot duplicate it.
    pub fn is_retry_safe(&self) -> bool {
        match self {
            Error::Connect { .. } | Error::Tls { .. } => true,
            Error::Timeout { written, .. } | Error::ConnectionClosed { written, .. } => !written,
            _ => false,
        }
    }

    /// Whether a retry (on a new connection, or to another broker) may
    /// succeed: connect failures, timeouts and closed connections.
    ///
    /// A retryable error is not necessarily [retry-safe](Error::is_retry_safe):
    /// a request that was written may be executed twice.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Connect { .. } | Error::Timeout { .. } | Error::ConnectionClosed { .. }
        )
    }
}

#[cfg(feature = "tls")]
fn is_certificate_io_error(e: &io::Error) -> bool {
    crate::tls::is_certificate_error(e)
}

#[cfg(not(feature = "tls"))]
fn is_certificate_io_error(_e: &io::Error) -> bool {
    false
}

/// Why a connection closed (the source of [`Error::ConnectionClosed`]).
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum CloseReason {
    /// The peer closed the connection (end of stream).
    #[error("the peer closed the connection")]
    PeerClosed,

    /// Reading from the socket failed.
    #[error("reading from the connection failed")]
    Read(#[source] Arc<io::Error>),

    /// Writing to the socket failed.
    #[error("writing to the connection failed")]
    Write(#[source] Arc<io::Error>),

    /// The peer sent bytes that are not a valid frame; the stream cannot be
    /// resynchronised, so the connection was closed.
    #[error("the peer sent an invalid frame")]
    BadFrame(#[source] Arc<rmq_protocol::Error>),

    /// This client closed the connection
    /// ([`close_connection`](crate::RemotingClient::close_connection)).
    #[error("the connection was closed by this client")]
    ClosedLocally,
}

impl CloseReason {
    /// Classifies an error returned by the frame decoder.
    pub(crate) fn from_decode(err: rmq_protocol::Error) -> Self {
        match err {
            rmq_protocol::Error::Io(e) => CloseReason::Read(Arc::new(e)),
            other => CloseReason::BadFrame(Arc::new(other)),
        }
    }
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(written: bool) -> Error {
        Error::ConnectionClosed {
            addr: "127.0.0.1:1".into(),
            written,
            reason: CloseReason::PeerClosed,
        }
    }

    #[test]
    fn predicates() {
        assert!(closed(false).is_retry_safe());
        assert!(!closed(true).is_retry_safe());
        assert!(closed(true).is_retryable());
        assert!(closed(true).is_connection_closed());
        let timeout = Error::Timeout {
            addr: "a:1".into(),
            code: RequestCode::HEART_BEAT,
            after: Duration::from_secs(3),
            written: true,
        };
        assert!(timeout.is_timeout() && timeout.is_retryable() && !timeout.is_retry_safe());
        let connect = Error::Connect {
            addr: "a:1".into(),
            source: io::Error::new(io::ErrorKind::TimedOut, "connect timed out"),
        };
        assert!(connect.is_timeout() && connect.is_retry_safe());
        assert!(!Error::Shutdown.is_retryable());
    }

    #[test]
    fn display_says_what_to_do() {
        let msg = closed(false).to_string();
        assert!(msg.contains("retrying is safe"), "{msg}");
        let msg = closed(true).to_string();
        assert!(msg.contains("outcome is unknown"), "{msg}");
        let src = std::error::Error::source(&closed(true)).map(ToString::to_string);
        assert_eq!(src.as_deref(), Some("the peer closed the connection"));
    }

    #[test]
    fn decode_errors_are_classified() {
        let io = rmq_protocol::Error::Io(io::Error::other("x"));
        assert!(matches!(CloseReason::from_decode(io), CloseReason::Read(_)));
        let bad = rmq_protocol::Error::InvalidFrame("x".into());
        assert!(matches!(
            CloseReason::from_decode(bad),
            CloseReason::BadFrame(_)
        ));
    }
}
