//! The client-core error type.

use rmq_protocol::{RequestCode, ResponseCode};

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
            } => Error::Broker {
                addr,
                request,
                code,
                remark,
            },
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

    /// The peer's response code, for [`Error::Broker`].
    pub fn response_code(&self) -> Option<ResponseCode> {
        match self {
            Error::Broker { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Builds [`Error::Broker`] from a response that was not accepted.
    pub(crate) fn broker(
        addr: &str,
        request: RequestCode,
        response: &rmq_protocol::RemotingCommand,
    ) -> Self {
        Error::Broker {
            addr: addr.to_owned(),
            request,
            code: response.response_code(),
            remark: response.remark.clone(),
        }
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
