//! [`Error`]: what a call to the proxy can end with.

use std::time::Duration;

use crate::proto;

/// Errors of the gRPC transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The endpoint is not `host:port` (or `http://host:port`).
    #[error(
        "invalid proxy endpoint {endpoint:?}: {reason}; give host:port of the RocketMQ proxy's gRPC port"
    )]
    InvalidEndpoint {
        /// The endpoint given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The call failed at the gRPC level (connection refused, reset,
    /// deadline passed at the server, ...).
    #[error("{rpc} to the proxy failed: gRPC {code:?}: {message}")]
    Rpc {
        /// The RPC (`SendMessage`, ...).
        rpc: &'static str,
        /// The gRPC status code.
        code: tonic::Code,
        /// The status message.
        message: String,
    },
    /// The proxy answered with a status other than `OK`.
    #[error("{rpc}: the proxy answered {} ({}): {message}", code_name(*.code), .code)]
    Proxy {
        /// The RPC.
        rpc: &'static str,
        /// The `apache.rocketmq.v2.Code` number (e.g. 40402 `TOPIC_NOT_FOUND`).
        code: i32,
        /// The status message.
        message: String,
    },
    /// No answer within the call's deadline.
    #[error("{rpc} got no answer from the proxy within {after:?}")]
    Timeout {
        /// The RPC.
        rpc: &'static str,
        /// The deadline it had.
        after: Duration,
    },
    /// The proxy's answer lacks something the protocol requires.
    #[error("{rpc}: unexpected answer from the proxy: {reason}")]
    Protocol {
        /// The RPC.
        rpc: &'static str,
        /// What was missing or wrong.
        reason: String,
    },
    /// Credentials that cannot sign a request (an empty key, a key that
    /// is not printable ASCII).
    #[error("invalid proxy credentials: {0}")]
    InvalidCredentials(String),
    /// The TLS settings cannot be used (a certificate or key file).
    #[cfg(feature = "tls")]
    #[error("cannot set up TLS towards the proxy")]
    Tls(#[source] rmq_remoting::TlsSetupError),
    /// The session was shut down.
    #[error("the gRPC session is shut down")]
    Shutdown,
}

impl Error {
    /// Whether trying again later may succeed: gRPC `UNAVAILABLE` /
    /// `RESOURCE_EXHAUSTED`, a timeout, or the proxy's `TOO_MANY_REQUESTS`
    /// and timeouts towards the broker.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Rpc { code, .. } => matches!(
                code,
                tonic::Code::Unavailable | tonic::Code::ResourceExhausted | tonic::Code::Unknown
            ),
            Error::Timeout { .. } => true,
            Error::Proxy { code, .. } => {
                let c = proto::Code::try_from(*code).unwrap_or(proto::Code::Unspecified);
                matches!(
                    c,
                    proto::Code::TooManyRequests
                        | proto::Code::ProxyTimeout
                        | proto::Code::MasterPersistenceTimeout
                        | proto::Code::SlavePersistenceTimeout
                        | proto::Code::HaNotAvailable
                        | proto::Code::InternalServerError
                )
            }
            _ => false,
        }
    }

    /// Whether the proxy refused the credentials or the permissions
    /// (`UNAUTHORIZED`, `FORBIDDEN`, gRPC `UNAUTHENTICATED` /
    /// `PERMISSION_DENIED`): check the access key and secret and the ACL.
    pub fn is_auth(&self) -> bool {
        match self {
            Error::Rpc { code, .. } => matches!(
                code,
                tonic::Code::Unauthenticated | tonic::Code::PermissionDenied
            ),
            Error::Proxy { .. } => matches!(
                self.proxy_code(),
                Some(proto::Code::Unauthorized | proto::Code::Forbidden)
            ),
            _ => false,
        }
    }

    /// The proxy's status code, for [`Error::Proxy`].
    pub fn proxy_code(&self) -> Option<proto::Code> {
        match self {
            Error::Proxy { code, .. } => proto::Code::try_from(*code).ok(),
            _ => None,
        }
    }

    pub(crate) fn rpc(rpc: &'static str, status: &tonic::Status) -> Self {
        // A transport failure (refused connection, TLS handshake) says only
        // "transport error"; its causes say what happened.
        let mut message = status.message().to_owned();
        let mut source = std::error::Error::source(status);
        while let Some(s) = source {
            let text = s.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = s.source();
        }
        Error::Rpc {
            rpc,
            code: status.code(),
            message,
        }
    }
}

fn code_name(code: i32) -> &'static str {
    proto::Code::try_from(code).map_or("unknown code", |c| c.as_str_name())
}

/// Checks a response status: `OK` (or none) passes, anything else is an
/// [`Error::Proxy`].
pub(crate) fn check_status(rpc: &'static str, status: Option<&proto::Status>) -> Result<(), Error> {
    match status {
        Some(s) if s.code != proto::Code::Ok as i32 => Err(Error::Proxy {
            rpc,
            code: s.code,
            message: s.message.clone(),
        }),
        _ => Ok(()),
    }
}

/// The transport's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_codes() {
        let proxy = |code: proto::Code| Error::Proxy {
            rpc: "SendMessage",
            code: code as i32,
            message: String::new(),
        };
        assert!(proxy(proto::Code::TooManyRequests).is_retryable());
        assert!(!proxy(proto::Code::TopicNotFound).is_retryable());
        assert!(!proxy(proto::Code::Unauthorized).is_retryable());
        let rpc = |code| Error::Rpc {
            rpc: "QueryRoute",
            code,
            message: String::new(),
        };
        assert!(rpc(tonic::Code::Unavailable).is_retryable());
        assert!(!rpc(tonic::Code::PermissionDenied).is_retryable());
        let e = proxy(proto::Code::TopicNotFound);
        assert_eq!(e.proxy_code(), Some(proto::Code::TopicNotFound));
        assert!(e.to_string().contains("TOPIC_NOT_FOUND (40402)"), "{e}");
    }

    #[test]
    fn status_check() {
        assert!(check_status("X", None).is_ok());
        let ok = proto::Status {
            code: proto::Code::Ok as i32,
            message: "OK".into(),
        };
        assert!(check_status("X", Some(&ok)).is_ok());
        let bad = proto::Status {
            code: proto::Code::BadRequest as i32,
            message: "no".into(),
        };
        assert!(matches!(
            check_status("X", Some(&bad)),
            Err(Error::Proxy { code: 40000, .. })
        ));
    }
}
