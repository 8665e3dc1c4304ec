//! [`ErrorKind`], and the kind of each error of the layers below this crate.

use std::error::Error as StdError;
use std::fmt;

/// What went wrong, in categories an application reacts to differently
/// ([`Error::kind`](crate::Error::kind)).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A setting is invalid; the text names it. Fix the code or config.
    Config,
    /// An argument or a message is invalid (empty body, bad topic name,
    /// negative offset, ...).
    InvalidArgument,
    /// The broker does not support what was asked (e.g. a delivery time on
    /// a 4.x broker, pop consumption on a 4.x broker), or the transport
    /// does not.
    Unsupported,
    /// The broker refused the credentials or the user's permissions (ACL).
    Auth,
    /// A call, a connect or a send timed out.
    Timeout,
    /// A connection could not be made, failed the TLS handshake or closed.
    Connection,
    /// No name server answered.
    NameServerUnavailable,
    /// The name servers know no route for the topic.
    TopicNotFound,
    /// No address is known for a broker.
    BrokerNotFound,
    /// A broker (or the proxy) answered with an error code
    /// ([`Error::response_code`](crate::Error::response_code)).
    Broker,
    /// Bytes on the wire or in a file could not be decoded or encoded.
    Protocol,
    /// The producer, consumer or client was shut down.
    Shutdown,
    /// Anything else (offset files, ...); the text says what.
    Other,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Config => "invalid configuration",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Unsupported => "not supported by the broker",
            ErrorKind::Auth => "refused by ACL",
            ErrorKind::Timeout => "timed out",
            ErrorKind::Connection => "connection failed",
            ErrorKind::NameServerUnavailable => "no name server answered",
            ErrorKind::TopicNotFound => "topic not found",
            ErrorKind::BrokerNotFound => "broker not found",
            ErrorKind::Broker => "refused by the broker",
            ErrorKind::Protocol => "protocol error",
            ErrorKind::Shutdown => "shut down",
            ErrorKind::Other => "other error",
        })
    }
}

/// The kind one error of a layer below this crate says it is, or `None`
/// when it only wraps its source (or is of a type this crate does not
/// know).
pub(crate) fn lower_kind(e: &(dyn StdError + 'static)) -> Option<ErrorKind> {
    if let Some(e) = e.downcast_ref::<rmq_remoting::Error>() {
        return Some(remoting_kind(e));
    }
    if let Some(e) = e.downcast_ref::<rmq_client_core::Error>() {
        return client_kind(e);
    }
    if e.downcast_ref::<rmq_protocol::Error>().is_some() {
        return Some(ErrorKind::Protocol);
    }
    if let Some(e) = e.downcast_ref::<rmq_grpc::Error>() {
        return Some(grpc_kind(e));
    }
    if let Some(e) = e.downcast_ref::<rmq_offset_store::Error>() {
        return offset_store_kind(e);
    }
    None
}

pub(crate) fn remoting_kind(e: &rmq_remoting::Error) -> ErrorKind {
    use rmq_remoting::Error as R;
    match e {
        R::Connect { .. } | R::Tls { .. } | R::ConnectionClosed { .. } => ErrorKind::Connection,
        R::Timeout { .. } => ErrorKind::Timeout,
        R::Response { .. } => ErrorKind::Broker,
        R::Shutdown => ErrorKind::Shutdown,
        R::Protocol(_) => ErrorKind::Protocol,
        _ => ErrorKind::Other,
    }
}

pub(crate) fn client_kind(e: &rmq_client_core::Error) -> Option<ErrorKind> {
    use rmq_client_core::Error as C;
    match e {
        C::Broker { .. } => Some(ErrorKind::Broker),
        C::Auth(_) => Some(ErrorKind::Auth),
        C::Config(_) | C::DuplicateGroup { .. } => Some(ErrorKind::Config),
        C::RouteNotFound { .. } => Some(ErrorKind::TopicNotFound),
        C::BrokerNotFound { .. } => Some(ErrorKind::BrokerNotFound),
        C::NameServerUnavailable { .. } => Some(ErrorKind::NameServerUnavailable),
        C::Shutdown => Some(ErrorKind::Shutdown),
        C::Protocol(_) => Some(ErrorKind::Protocol),
        _ => None,
    }
}

pub(crate) fn grpc_kind(e: &rmq_grpc::Error) -> ErrorKind {
    use rmq_grpc::Error as G;
    use rmq_grpc::proto::Code;
    match e {
        G::InvalidEndpoint { .. } => ErrorKind::Config,
        // gRPC status codes (tonic::Code as i32).
        G::Rpc { code, .. } => match i32::from(*code) {
            14 => ErrorKind::Connection,  // UNAVAILABLE
            4 => ErrorKind::Timeout,      // DEADLINE_EXCEEDED
            7 | 16 => ErrorKind::Auth,    // PERMISSION_DENIED, UNAUTHENTICATED
            12 => ErrorKind::Unsupported, // UNIMPLEMENTED
            _ => ErrorKind::Broker,
        },
        G::Proxy { code, .. } => match Code::try_from(*code) {
            Ok(Code::TopicNotFound) => ErrorKind::TopicNotFound,
            Ok(Code::Unauthorized | Code::Forbidden) => ErrorKind::Auth,
            Ok(
                Code::NotImplemented
                | Code::Unsupported
                | Code::VersionUnsupported
                | Code::VerifyFifoMessageUnsupported,
            ) => ErrorKind::Unsupported,
            _ if matches!(*code, 40000..=40099 | 41300..=41399 | 43100..=43199) => {
                ErrorKind::InvalidArgument
            }
            _ => ErrorKind::Broker,
        },
        G::Timeout { .. } => ErrorKind::Timeout,
        G::Protocol { .. } => ErrorKind::Protocol,
        G::Shutdown => ErrorKind::Shutdown,
        _ => ErrorKind::Other,
    }
}

pub(crate) fn offset_store_kind(e: &rmq_offset_store::Error) -> Option<ErrorKind> {
    use rmq_offset_store::Error as O;
    match e {
        O::BrokerNotFound { .. } => Some(ErrorKind::BrokerNotFound),
        O::InvalidName { .. } | O::NoStoreDir => Some(ErrorKind::Config),
        O::Corrupt { .. } | O::Io { .. } => Some(ErrorKind::Other),
        _ => None,
    }
}
