//! The client-core error type.

use rmq_protocol::{RequestCode, ResponseCode};

use crate::auth::AuthRefusal;

/// Errors of [`ClientInstance`](crate::ClientInstance) calls and
/// [`ClientConfig`](crate::ClientConfig) building.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The broker (or name server) answered with a response code the call
    /// does not accept.
    #[error(
        "{addr} answered {request:?} with {code:?}{}",
        remark.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
    )]
    Broker {
        /// The peer's address.
        addr: String,
        /// The request code that was sent.
        request: RequestCode,
        /// The peer's response code.
        code: ResponseCode,
        /// The peer's remark (its error text), if any.
        remark: Option<String>,
    },

    /// The broker refused the request's credentials (authentication: no or
    /// unknown access key, wrong secret key) or the user's permissions
    /// (authorization: no Pub/Sub on the topic or group). Not retryable:
    /// fix the access key, secret key or the user's ACL. Both broker lines
    /// map here: 5.x (ACL 2.0) answers NO_PERMISSION, 4.9.x (ACL 1.0)
    /// SYSTEM_ERROR with an `AclException` remark.
    #[error("{0}")]
    Auth(Box<AuthRefusal>),

    /// The request could not be delivered or answered (connect failure,
    /// timeout, closed connection, shut-down remoting client).
    #[error("remoting call failed")]
    Remoting(#[source] rmq_remoting::Error),

    /// A response header or body could not be decoded, or a request could
    /// not be encoded.
    #[error("invalid protocol data")]
    Protocol(#[from] rmq_protocol::Error),

    /// The configuration is invalid; the text says which setting and why.
    #[error("invalid client configuration: {0}")]
    Config(String),

    /// The name servers know no route for the topic (it does not exist, or
    /// no broker serves it).
    #[error("no route for topic {topic:?}: create the topic or check the name-server address")]
    RouteNotFound {
        /// The topic.
        topic: String,
    },

    /// No address is known for the broker (it is in no route, or has no
    /// master for a publish).
    #[error(
        "no address known for broker {broker_name:?}; its route may be stale or the broker down"
    )]
    BrokerNotFound {
        /// The broker name.
        broker_name: String,
    },

    /// No name server answered.
    #[error("no name server answered (tried {addrs:?})")]
    NameServerUnavailable {
        /// The addresses tried.
        addrs: Vec<String>,
        /// The last failure.
        #[source]
        source: Option<Box<Error>>,
    },

    /// A producer or consumer group is already registered in this client
    /// instance; use another group, or another instance name.
    #[error("{kind} group {group:?} is already registered in this client instance")]
    DuplicateGroup {
        /// `"producer"` or `"consumer"`.
        kind: &'static str,
        /// The group.
        group: String,
    },

    /// The client instance has been shut down.
    #[error("the client instance has been shut down")]
    Shutdown,
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<rmq_remoting::Error> for Error {
    fn from(e: rmq_remoting::Error) -> Self {
        match e {
            rmq_remoting::Error::Response {
                addr,
                request,
                code,
                remark,
            } => Error::refused(addr, request, code, remark),
            other => Error::Remoting(other),
        }
    }
}

impl Error {
    /// Whether trying again (later, or against another broker) may succeed:
    /// retryable remoting failures (connect, timeout, closed connection),
    /// broker codes the Java producer retries (SYSTEM_ERROR, SYSTEM_BUSY,
    /// SERVICE_NOT_AVAILABLE, NO_PERMISSION, TOPIC_NOT_EXIST, ...), unknown
    /// brokers and unavailable name servers.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Broker { code, .. } => code.is_retryable(),
            Error::Remoting(e) => e.is_retryable(),
            Error::BrokerNotFound { .. } | Error::NameServerUnavailable { .. } => true,
            _ => false,
        }
    }

    /// Whether the broker could not be reached or dropped the connection (a
    /// refused or failed connect, a closed connection): the route may name
    /// another address for it by now, e.g. a master elected in its place.
    pub fn is_broker_unreachable(&self) -> bool {
        match self {
            Error::Remoting(e) => {
                matches!(e, rmq_remoting::Error::Connect { .. }) || e.is_connection_closed()
            }
            _ => false,
        }
    }

    /// Whether this is a timeout (of the call or of the TCP connect).
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Remoting(e) => e.is_timeout(),
            Error::NameServerUnavailable {
                source: Some(e), ..
            } => e.is_timeout(),
            _ => false,
        }
    }

    /// Whether a TLS certificate was rejected, by this client (the
    /// server's is not trusted) or by the server (ours is missing or not
    /// trusted); see [`rmq_remoting::Error::is_certificate_error`].
    pub fn is_certificate_error(&self) -> bool {
        match self {
            Error::Remoting(e) => e.is_certificate_error(),
            Error::NameServerUnavailable {
                source: Some(e), ..
            } => e.is_certificate_error(),
            _ => false,
        }
    }

    /// The peer's response code, for [`Error::Broker`].
    pub fn response_code(&self) -> Option<ResponseCode> {
        match self {
            Error::Broker { code, .. } => Some(*code),
            Error::Auth(r) => Some(r.code),
            _ => None,
        }
    }

    /// Whether the broker refused the credentials or the user's
    /// permissions ([`Error::Auth`]), also when the refusal ended a
    /// name-server failover.
    pub fn is_auth(&self) -> bool {
        match self {
            Error::Auth(_) => true,
            Error::NameServerUnavailable {
                source: Some(e), ..
            } => e.is_auth(),
            _ => false,
        }
    }

    /// The refusal, for [`Error::Auth`].
    pub fn auth_refusal(&self) -> Option<&AuthRefusal> {
        match self {
            Error::Auth(r) => Some(r),
            Error::NameServerUnavailable {
                source: Some(e), ..
            } => e.auth_refusal(),
            _ => None,
        }
    }

    /// [`Error::Auth`] for an authentication or authorization refusal
    /// ([`is_auth_refusal`](crate::auth::is_auth_refusal)), else
    /// [`Error::Broker`].
    pub(crate) fn refused(
        addr: String,
        request: RequestCode,
        code: ResponseCode,
        remark: Option<String>,
    ) -> Self {
        if crate::auth::is_auth_refusal(code, remark.as_deref()) {
            Error::Auth(Box::new(AuthRefusal {
                addr,
                request,
                access_key: None,
                topic: None,
                group: None,
                code,
                remark,
            }))
        } else {
            Error::Broker {
                addr,
                request,
                code,
                remark,
            }
        }
    }

    /// Fills in what an [`Error::Auth`] names: the access key the client
    /// signs with, and the request's topic and group when the caller knows
    /// them. Other errors are returned unchanged.
    pub(crate) fn in_context(
        mut self,
        signer: Option<&str>,
        request_topic: Option<&str>,
        request_group: Option<&str>,
    ) -> Self {
        if let Error::Auth(r) = &mut self {
            if r.access_key.is_none() {
                r.access_key = signer.map(str::to_owned);
            }
            if r.topic.is_none() {
                r.topic = request_topic.map(str::to_owned);
            }
            if r.group.is_none() {
                r.group = request_group.map(str::to_owned);
            }
        }
        self
    }

    /// Builds [`Error::Broker`] from a response that was not accepted.
    pub(crate) fn broker(
        addr: &str,
        request: RequestCode,
        response: &rmq_protocol::RemotingCommand,
    ) -> Self {
        Error::refused(
            addr.to_owned(),
            request,
            response.response_code(),
            response.remark.clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remoting_response_becomes_broker() {
        let e: Error = rmq_remoting::Error::Response {
            addr: "a:1".into(),
            request: RequestCode::PULL_MESSAGE,
            code: ResponseCode::SYSTEM_BUSY,
            remark: Some("busy".into()),
        }
        .into();
        assert_eq!(e.response_code(), Some(ResponseCode::SYSTEM_BUSY));
        assert!(e.is_retryable());
        assert!(e.to_string().contains("busy"));
        assert!(!Error::Shutdown.is_retryable());
    }

    #[test]
    fn auth_refusals_are_typed_and_not_retried() {
        let e: Error = rmq_remoting::Error::Response {
            addr: "127.0.0.1:10911".into(),
            request: RequestCode::SEND_MESSAGE_V2,
            code: ResponseCode::NO_PERMISSION,
            remark: Some("check signature failed.".into()),
        }
        .into();
        assert!(e.is_auth());
        assert!(!e.is_retryable());
        assert_eq!(e.response_code(), Some(ResponseCode::NO_PERMISSION));
        let e = e.in_context(Some("alice"), Some("orders"), Some("g1"));
        let text = e.to_string();
        for part in [
            "127.0.0.1:10911",
            "alice",
            "orders",
            "g1",
            "check signature failed.",
        ] {
            assert!(text.contains(part), "{part} missing in {text}");
        }
        // 4.9.x: SYSTEM_ERROR with an AclException remark.
        let old = Error::refused(
            "a:1".into(),
            RequestCode::PULL_MESSAGE,
            ResponseCode::SYSTEM_ERROR,
            Some("No acl config for bob".into()),
        );
        assert!(old.is_auth() && !old.is_retryable());
        assert!(old.to_string().contains("no credentials configured"));
        // A topic that forbids writes stays an ordinary, retryable refusal.
        let perm = Error::refused(
            "a:1".into(),
            RequestCode::SEND_MESSAGE_V2,
            ResponseCode::NO_PERMISSION,
            Some("the topic[T] sending message is forbidden".into()),
        );
        assert!(!perm.is_auth() && perm.is_retryable());
    }

    #[test]
    fn timeouts_are_seen_through() {
        let e: Error = rmq_remoting::Error::Timeout {
            addr: "a:1".into(),
            code: RequestCode::HEART_BEAT,
            after: std::time::Duration::from_secs(1),
            written: true,
        }
        .into();
        assert!(e.is_timeout());
        assert!(e.is_retryable());
    }
}
