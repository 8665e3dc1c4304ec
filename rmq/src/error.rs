//! The facade's error type: one type over the layers' errors.

use std::fmt;

use rmq_protocol::ErrorChain;

/// Any error an rmq call can return.
///
/// Every layer's error converts into it with `?`, so a function that uses the
/// producer and the consumers returns `rmq::Result<T>`.
///
/// `Display` prints the whole cause chain on one line, each cause once
/// (`cannot send a message to topic "orders" (3 attempts): client call
/// failed: cannot connect to 127.0.0.1:9876; ...`), so `println!("{e}")`,
/// `tracing::warn!(error = %e)` and `fn main() -> rmq::Result<()>` all show
/// the words that say what to fix. [`source()`](std::error::Error::source)
/// is the layer's error (one of the variants), for downcasting. Ask
/// questions with [`Error::kind`], [`Error::is_retryable`] and
/// [`Error::is_timeout`] instead of matching variants; the texts are not a
/// stable API.
///
/// ```
/// let e = rmq::ClientConfig::builder().namesrv_addr("localhost").build().unwrap_err();
/// let e = rmq::Error::from(e);
/// assert_eq!(e.kind(), rmq::ErrorKind::Config);
/// assert!(!e.is_retryable());
/// println!("{e}"); // invalid client configuration: name-server address "localhost" is not host:port (e.g. "127.0.0.1:9876")
/// assert!(e.to_string().contains("\"localhost\" is not host:port"));
/// ```
#[non_exhaustive]
pub enum Error {
    /// Protocol encoding or decoding.
    Protocol(rmq_protocol::Error),
    /// Transport (connections, timeouts).
    Remoting(rmq_remoting::Error),
    /// Client core (configuration, routes, broker calls).
    Client(rmq_client_core::Error),
    /// The producer.
    #[cfg(feature = "producer")]
    #[cfg_attr(docsrs, doc(cfg(feature = "producer")))]
    Producer(rmq_producer::Error),
    /// The push consumer.
    #[cfg(feature = "consumer-push")]
    #[cfg_attr(docsrs, doc(cfg(feature = "consumer-push")))]
    PushConsumer(rmq_consumer_push::Error),
    /// The pull consumers.
    #[cfg(feature = "consumer-pull")]
    #[cfg_attr(docsrs, doc(cfg(feature = "consumer-pull")))]
    PullConsumer(rmq_consumer_pull::Error),
    /// An offset store (one's own [`OffsetStore`](crate::OffsetStore)
    /// implementation returns these).
    #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
    #[cfg_attr(
        docsrs,
        doc(cfg(any(feature = "consumer-push", feature = "consumer-pull")))
    )]
    OffsetStore(rmq_offset_store::Error),
}

/// What went wrong, in categories an application reacts to differently
/// ([`Error::kind`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A setting is invalid; the text names it. Fix the code or config.
    Config,
    /// An argument or a message is invalid (empty body, bad topic name,
    /// negative offset, ...).
    InvalidArgument,
    /// The broker does not support what was asked (e.g. a delivery time on
    /// a 4.x broker).
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
    /// A broker answered with an error code
    /// ([`Error::response_code`]).
    Broker,
    /// Bytes on the wire or in a file could not be decoded or encoded.
    Protocol,
    /// The producer, consumer or client was shut down.
    Shutdown,
    /// Anything else (offset files, ...); the text says what.
    Other,
}

impl ErrorKind {
    /// The kind of one error of the chain, or `None` when it only wraps its
    /// source.
    fn of(e: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
        use rmq_client_core::Error as C;
        use rmq_remoting::Error as R;
        if let Some(e) = e.downcast_ref::<R>() {
            return Some(match e {
                R::Connect { .. } | R::Tls { .. } | R::ConnectionClosed { .. } => {
                    ErrorKind::Connection
                }
                R::Timeout { .. } => ErrorKind::Timeout,
                R::Response { .. } => ErrorKind::Broker,
                R::Shutdown => ErrorKind::Shutdown,
                R::Protocol(_) => ErrorKind::Protocol,
                _ => ErrorKind::Other,
            });
        }
        if let Some(e) = e.downcast_ref::<C>() {
            return match e {
                C::Broker { .. } => Some(ErrorKind::Broker),
                C::Auth(_) => Some(ErrorKind::Auth),
                C::Config(_) => Some(ErrorKind::Config),
                C::RouteNotFound { .. } => Some(ErrorKind::TopicNotFound),
                C::BrokerNotFound { .. } => Some(ErrorKind::BrokerNotFound),
                C::NameServerUnavailable { .. } => Some(ErrorKind::NameServerUnavailable),
                C::DuplicateGroup { .. } => Some(ErrorKind::Config),
                C::Shutdown => Some(ErrorKind::Shutdown),
                C::Protocol(_) => Some(ErrorKind::Protocol),
                _ => None,
            };
        }
        if e.downcast_ref::<rmq_protocol::Error>().is_some() {
            return Some(ErrorKind::Protocol);
        }
        #[cfg(feature = "producer")]
        {
            use rmq_producer::Error as P;
            if let Some(e) = e.downcast_ref::<P>() {
                return match e {
                    P::Config(_) => Some(ErrorKind::Config),
                    P::InvalidMessage(_) | P::BadQueueIndex { .. } => {
                        Some(ErrorKind::InvalidArgument)
                    }
                    P::NoWritableQueue { .. } => Some(ErrorKind::Broker),
                    P::Timeout { .. } => Some(ErrorKind::Timeout),
                    P::Unsupported { .. } | P::TransportUnsupported(_) => {
                        Some(ErrorKind::Unsupported)
                    }
                    P::Shutdown => Some(ErrorKind::Shutdown),
                    _ => None,
                };
            }
            if e.downcast_ref::<rmq_producer::InvalidMessage>().is_some() {
                return Some(ErrorKind::InvalidArgument);
            }
        }
        #[cfg(feature = "consumer-push")]
        if let Some(e) = e.downcast_ref::<rmq_consumer_push::Error>() {
            return consumer_kind(e);
        }
        #[cfg(feature = "consumer-pull")]
        if let Some(e) = e.downcast_ref::<rmq_consumer_pull::Error>() {
            return consumer_kind(e);
        }
        #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
        if let Some(e) = e.downcast_ref::<rmq_offset_store::Error>() {
            use rmq_offset_store::Error as O;
            return match e {
                O::BrokerNotFound { .. } => Some(ErrorKind::BrokerNotFound),
                O::InvalidName { .. } | O::NoStoreDir => Some(ErrorKind::Config),
                O::Corrupt { .. } | O::Io { .. } => Some(ErrorKind::Other),
                _ => None,
            };
        }
        None
    }
}

#[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
fn consumer_kind<K: rmq_consumer_base::Kind>(e: &rmq_consumer_base::Error<K>) -> Option<ErrorKind> {
    use rmq_consumer_base::Error as B;
    match e {
        B::Config(_) | B::SubscriptionConflict { .. } => Some(ErrorKind::Config),
        B::InvalidArgument(_) | B::NotAssigned { .. } | B::OffsetOutOfRange { .. } => {
            Some(ErrorKind::InvalidArgument)
        }
        B::BrokerNotFound { .. } => Some(ErrorKind::BrokerNotFound),
        B::Shutdown => Some(ErrorKind::Shutdown),
        _ => None,
    }
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

impl Error {
    /// The layer's error this one wraps.
    pub fn layer_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        match self {
            Error::Protocol(e) => e,
            Error::Remoting(e) => e,
            Error::Client(e) => e,
            #[cfg(feature = "producer")]
            Error::Producer(e) => e,
            #[cfg(feature = "consumer-push")]
            Error::PushConsumer(e) => e,
            #[cfg(feature = "consumer-pull")]
            Error::PullConsumer(e) => e,
            #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
            Error::OffsetStore(e) => e,
        }
    }

    /// What went wrong, as a category: the first level of the cause chain
    /// that says more than "this call failed because of its cause" decides
    /// (an ACL refusal is [`ErrorKind::Auth`] and a timeout
    /// [`ErrorKind::Timeout`] wherever they are in the chain).
    ///
    /// ```
    /// # async fn send(producer: &rmq::Producer) {
    /// match producer.send(rmq::Message::new("orders", "x")).await {
    ///     Ok(sent) => println!("{}", sent.msg_id),
    ///     Err(e) => match rmq::Error::from(e).kind() {
    ///         rmq::ErrorKind::TopicNotFound => eprintln!("create the topic first"),
    ///         rmq::ErrorKind::Auth => eprintln!("check the access key"),
    ///         _ => eprintln!("send failed"),
    ///     },
    /// }
    /// # }
    /// ```
    pub fn kind(&self) -> ErrorKind {
        kind_of(self.layer_error(), self.is_auth(), self.is_timeout())
    }

    /// Whether retrying the operation may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Protocol(_) => false,
            Error::Remoting(e) => e.is_retryable(),
            Error::Client(e) => e.is_retryable(),
            #[cfg(feature = "producer")]
            Error::Producer(e) => e.is_retryable(),
            #[cfg(feature = "consumer-push")]
            Error::PushConsumer(e) => e.is_retryable(),
            #[cfg(feature = "consumer-pull")]
            Error::PullConsumer(e) => e.is_retryable(),
            #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
            Error::OffsetStore(e) => e.is_retryable(),
        }
    }

    /// Whether a broker refused the credentials or the user's permissions
    /// (ACL): not retryable until the keys or the ACL change.
    pub fn is_auth(&self) -> bool {
        match self {
            Error::Protocol(_) | Error::Remoting(_) => false,
            Error::Client(e) => e.is_auth(),
            #[cfg(feature = "producer")]
            Error::Producer(e) => e.is_auth(),
            #[cfg(feature = "consumer-push")]
            Error::PushConsumer(e) => e.is_auth(),
            #[cfg(feature = "consumer-pull")]
            Error::PullConsumer(e) => e.is_auth(),
            #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
            Error::OffsetStore(e) => e.is_auth(),
        }
    }

    /// Whether the operation timed out.
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Protocol(_) => false,
            Error::Remoting(e) => e.is_timeout(),
            Error::Client(e) => e.is_timeout(),
            #[cfg(feature = "producer")]
            Error::Producer(e) => e.is_timeout(),
            #[cfg(feature = "consumer-push")]
            Error::PushConsumer(e) => e.is_timeout(),
            #[cfg(feature = "consumer-pull")]
            Error::PullConsumer(e) => e.is_timeout(),
            #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
            Error::OffsetStore(e) => e.is_timeout(),
        }
    }

    /// Whether a TLS certificate was rejected (by this client or by the
    /// server), anywhere in the cause chain.
    pub fn is_certificate_error(&self) -> bool {
        let mut level: Option<&(dyn std::error::Error + 'static)> = Some(self.layer_error());
        while let Some(e) = level {
            if let Some(r) = e.downcast_ref::<rmq_remoting::Error>() {
                return r.is_certificate_error();
            }
            level = e.source();
        }
        false
    }

    /// The broker's response code, when a broker refused the call.
    pub fn response_code(&self) -> Option<rmq_protocol::ResponseCode> {
        let mut level: Option<&(dyn std::error::Error + 'static)> = Some(self.layer_error());
        while let Some(e) = level {
            if let Some(c) = e.downcast_ref::<rmq_client_core::Error>() {
                if let Some(code) = c.response_code() {
                    return Some(code);
                }
            } else if let Some(r) = e.downcast_ref::<rmq_remoting::Error>() {
                if let Some(code) = r.response_code() {
                    return Some(code);
                }
            }
            level = e.source();
        }
        None
    }
}

/// The kind of a layer's error: ACL refusal and timeout first, wherever
/// they are in the chain; else the first level that says more than "this
/// call failed because of its cause".
fn kind_of(layer: &(dyn std::error::Error + 'static), auth: bool, timeout: bool) -> ErrorKind {
    if auth {
        return ErrorKind::Auth;
    }
    if timeout {
        return ErrorKind::Timeout;
    }
    let mut level: Option<&(dyn std::error::Error + 'static)> = Some(layer);
    while let Some(e) = level {
        if let Some(kind) = ErrorKind::of(e) {
            return kind;
        }
        level = e.source();
    }
    ErrorKind::Other
}

/// [`Error::kind`] and the whole cause chain for the layers' own error
/// types, which the producer's and the consumers' methods return: no
/// conversion needed to classify or print one (`use rmq::prelude::*`
/// brings the trait in).
///
/// ```
/// use rmq::ErrorExt;
///
/// let e = rmq::ClientConfig::builder().namesrv_addr("localhost").build().unwrap_err();
/// assert_eq!(e.kind(), rmq::ErrorKind::Config);
/// assert!(e.chain().to_string().contains("\"localhost\" is not host:port"));
/// ```
pub trait ErrorExt: std::error::Error + Sized + 'static {
    /// What went wrong, as a category (the same as
    /// [`Error::kind`] of the converted error).
    fn kind(&self) -> ErrorKind;

    /// `Display` of the whole cause chain (`a: b: c`, each cause once), as
    /// [`Error`]'s `Display` prints it.
    fn chain(&self) -> ErrorChain<'_> {
        ErrorChain(self)
    }
}

macro_rules! error_ext {
    ($($(#[$cfg:meta])* $ty:ty => |$e:ident| ($auth:expr, $timeout:expr)),* $(,)?) => {$(
        $(#[$cfg])*
        impl ErrorExt for $ty {
            fn kind(&self) -> ErrorKind {
                let $e = self;
                kind_of(self, $auth, $timeout)
            }
        }
    )*};
}

error_ext!(
    rmq_protocol::Error => |e| (false, { let _ = e; false }),
    rmq_remoting::Error => |e| (false, e.is_timeout()),
    rmq_client_core::Error => |e| (e.is_auth(), e.is_timeout()),
    #[cfg(feature = "producer")] rmq_producer::Error => |e| (e.is_auth(), e.is_timeout()),
    #[cfg(feature = "consumer-push")]
    rmq_consumer_push::Error => |e| (e.is_auth(), e.is_timeout()),
    #[cfg(feature = "consumer-pull")]
    rmq_consumer_pull::Error => |e| (e.is_auth(), e.is_timeout()),
    #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
    rmq_offset_store::Error => |e| (e.is_auth(), e.is_timeout()),
);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&ErrorChain(self.layer_error()), f)
    }
}

impl fmt::Debug for Error {
    /// The chain (as `Display`), then the layer error's structure: what
    /// `fn main() -> rmq::Result<()>` prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return match self {
                Error::Protocol(e) => f.debug_tuple("Protocol").field(e).finish(),
                Error::Remoting(e) => f.debug_tuple("Remoting").field(e).finish(),
                Error::Client(e) => f.debug_tuple("Client").field(e).finish(),
                #[cfg(feature = "producer")]
                Error::Producer(e) => f.debug_tuple("Producer").field(e).finish(),
                #[cfg(feature = "consumer-push")]
                Error::PushConsumer(e) => f.debug_tuple("PushConsumer").field(e).finish(),
                #[cfg(feature = "consumer-pull")]
                Error::PullConsumer(e) => f.debug_tuple("PullConsumer").field(e).finish(),
                #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
                Error::OffsetStore(e) => f.debug_tuple("OffsetStore").field(e).finish(),
            };
        }
        write!(f, "{self} (kind: {:?})", self.kind())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.layer_error())
    }
}

macro_rules! from_layer {
    ($($(#[$cfg:meta])* $ty:ty => $variant:ident),* $(,)?) => {$(
        $(#[$cfg])*
        impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::$variant(e)
            }
        }
    )*};
}

from_layer!(
    rmq_protocol::Error => Protocol,
    rmq_remoting::Error => Remoting,
    rmq_client_core::Error => Client,
    #[cfg(feature = "producer")] rmq_producer::Error => Producer,
    #[cfg(feature = "consumer-push")] rmq_consumer_push::Error => PushConsumer,
    #[cfg(feature = "consumer-pull")] rmq_consumer_pull::Error => PullConsumer,
    #[cfg(any(feature = "consumer-push", feature = "consumer-pull"))]
    rmq_offset_store::Error => OffsetStore,
);

#[cfg(feature = "producer")]
impl From<rmq_producer::InvalidMessage> for Error {
    fn from(e: rmq_producer::InvalidMessage) -> Self {
        Error::Producer(e.into())
    }
}

/// `Result` with [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_prints_the_chain_once() {
        let e: Error = rmq_client_core::Error::NameServerUnavailable {
            addrs: vec!["127.0.0.1:1".into()],
            source: Some(Box::new(rmq_client_core::Error::Remoting(
                rmq_remoting::Error::Connect {
                    addr: "127.0.0.1:1".into(),
                    source: std::io::Error::other("connection refused"),
                },
            ))),
        }
        .into();
        assert_eq!(
            e.to_string(),
            "no name server answered (tried [\"127.0.0.1:1\"]): remoting call failed: cannot \
             connect to 127.0.0.1:1; check that the address is right and the peer is up: \
             connection refused"
        );
        assert_eq!(e.kind(), ErrorKind::NameServerUnavailable);
        assert!(e.is_retryable());
        assert!(format!("{e:?}").contains("connection refused"));
    }

    #[test]
    fn bad_name_server_address_names_it_and_the_form() {
        let e: Error = rmq_client_core::ClientConfig::builder()
            .namesrv_addr("localhost")
            .build()
            .unwrap_err()
            .into();
        let text = e.to_string();
        assert!(text.contains("\"localhost\""), "{text}");
        assert!(text.contains("host:port"), "{text}");
        assert_eq!(e.kind(), ErrorKind::Config);
    }

    #[cfg(feature = "producer")]
    #[test]
    fn send_errors_are_classified_by_their_cause() {
        let e: Error = rmq_producer::Error::Send {
            topic: "t".into(),
            attempts: 1,
            source: Box::new(rmq_client_core::Error::RouteNotFound { topic: "t".into() }.into()),
            unsent: rmq_producer::Unsent::Batch(vec![]),
        }
        .into();
        assert_eq!(e.kind(), ErrorKind::TopicNotFound);
        let text = e.to_string();
        assert_eq!(text.matches("no route for topic").count(), 1, "{text}");
        assert!(
            text.starts_with("cannot send a batch of 0 messages"),
            "{text}"
        );
    }
}
