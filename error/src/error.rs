//! [`Error`]: a layer's error, boxed, with its classification.

use std::error::Error as StdError;
use std::fmt;

use rmq_protocol::{ErrorChain, ResponseCode};

use crate::classify::{Class, Classify};
use crate::kind::ErrorKind;

/// Any error an rmq call can return.
///
/// It holds the error of the layer that failed (the producer's, a
/// consumer's, the client core's, ...) and what it says about itself.
/// Every layer's error converts into it with `?`, so a function that uses
/// the producer and the consumers returns `rmq::Result<T>`.
///
/// `Display` prints the whole cause chain on one line, each cause once
/// (`cannot send a message to topic "orders" (3 attempts): client call
/// failed: cannot connect to 127.0.0.1:9876; ...`), so `println!("{e}")`,
/// `tracing::warn!(error = %e)` and `fn main() -> rmq::Result<()>` all show
/// the words that say what to fix. Ask questions with [`Error::kind`],
/// [`Error::is_retryable`] and [`Error::is_timeout`]; the texts are not a
/// stable API. The layer's own error (with every detail: the queue of a
/// consumer error, the messages a failed send hands back) comes back with
/// [`downcast_ref`](Error::downcast_ref) / [`downcast`](Error::downcast);
/// it is also [`source()`](std::error::Error::source).
///
/// ```
/// let e = rmq_client_core::ClientConfig::builder().namesrv_addr("localhost").build().unwrap_err();
/// let e = rmq_error::Error::from(e);
/// assert_eq!(e.kind(), rmq_error::ErrorKind::Config);
/// assert!(!e.is_retryable());
/// println!("{e}"); // invalid client configuration: name-server address "localhost" is not host:port (e.g. "127.0.0.1:9876")
/// assert!(e.to_string().contains("\"localhost\" is not host:port"));
/// let layer: rmq_client_core::Error = e.downcast().unwrap();
/// assert!(matches!(layer, rmq_client_core::Error::Config(_)));
/// ```
#[non_exhaustive]
pub struct Error {
    layer: Box<dyn StdError + Send + Sync + 'static>,
    class: Class,
}

impl Error {
    /// Wraps a layer's error (what `?` and `From` do).
    pub fn new<E: Classify>(e: E) -> Self {
        let class = Class::of(&e);
        Error {
            layer: Box::new(e),
            class,
        }
    }

    /// What went wrong, as a category: an ACL refusal is
    /// [`ErrorKind::Auth`] and a timeout [`ErrorKind::Timeout`] wherever
    /// they are in the cause chain; otherwise the first level of the chain
    /// that says more than "this call failed because of its cause" decides.
    ///
    /// ```
    /// # async fn send(send: impl std::future::Future<Output = rmq_error::Result<()>>) {
    /// match send.await {
    ///     Ok(()) => {}
    ///     Err(e) => match e.kind() {
    ///         rmq_error::ErrorKind::TopicNotFound => eprintln!("create the topic first"),
    ///         rmq_error::ErrorKind::Auth => eprintln!("check the access key"),
    ///         _ => eprintln!("send failed: {e}"),
    ///     },
    /// }
    /// # }
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.class.kind
    }

    /// Whether retrying the operation may succeed.
    pub fn is_retryable(&self) -> bool {
        self.class.retryable
    }

    /// Whether the operation timed out.
    pub fn is_timeout(&self) -> bool {
        self.class.timeout
    }

    /// Whether a broker refused the credentials or the user's permissions
    /// (ACL): not retryable until the keys or the ACL change.
    pub fn is_auth(&self) -> bool {
        self.class.auth
    }

    /// Whether the producer, the consumer or the client was shut down
    /// (`kind()` is [`ErrorKind::Shutdown`]): nothing more will come, a
    /// reading loop ends.
    pub fn is_shutdown(&self) -> bool {
        self.class.kind == ErrorKind::Shutdown
    }

    /// Whether no name server answered (a start with `fail_fast`, or a call
    /// that needed a route), anywhere in the cause chain: check the
    /// name-server address and that the name server runs. `kind()` says
    /// [`ErrorKind::NameServerUnavailable`], or [`ErrorKind::Timeout`] when
    /// the name servers were silent.
    pub fn is_name_server_unavailable(&self) -> bool {
        matches!(
            self.find_cause::<rmq_client_core::Error>(),
            Some(rmq_client_core::Error::NameServerUnavailable { .. })
        )
    }

    /// Whether a TLS certificate was rejected (by this client or by the
    /// server), anywhere in the cause chain.
    pub fn is_certificate_error(&self) -> bool {
        self.find_cause::<rmq_remoting::Error>()
            .is_some_and(rmq_remoting::Error::is_certificate_error)
    }

    /// The broker's response code, when a broker refused the call.
    pub fn response_code(&self) -> Option<ResponseCode> {
        self.causes().find_map(|e| {
            if let Some(c) = e.downcast_ref::<rmq_client_core::Error>() {
                c.response_code()
            } else {
                e.downcast_ref::<rmq_remoting::Error>()
                    .and_then(rmq_remoting::Error::response_code)
            }
        })
    }

    /// The layer's error this one wraps.
    pub fn layer_error(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.layer
    }

    /// Whether the layer's error is a `T`.
    pub fn is<T: StdError + 'static>(&self) -> bool {
        self.layer.is::<T>()
    }

    /// The layer's error, if it is a `T` (`rmq_producer::Error`,
    /// `rmq_consumer_push::Error`, `rmq_client_core::Error`, ...).
    pub fn downcast_ref<T: StdError + 'static>(&self) -> Option<&T> {
        self.layer.downcast_ref::<T>()
    }

    /// The layer's error, mutably, if it is a `T`.
    pub fn downcast_mut<T: StdError + 'static>(&mut self) -> Option<&mut T> {
        self.layer.downcast_mut::<T>()
    }

    /// Takes the layer's error out, if it is a `T`; gives `self` back
    /// otherwise.
    pub fn downcast<T: StdError + 'static>(self) -> Result<T, Error> {
        let class = self.class;
        match self.layer.downcast::<T>() {
            Ok(e) => Ok(*e),
            Err(layer) => Err(Error { layer, class }),
        }
    }

    /// The first error of type `T` in the cause chain, from the layer's
    /// error down (e.g. the `rmq_client_core::Error` under a failed send).
    pub fn find_cause<T: StdError + 'static>(&self) -> Option<&T> {
        self.causes().find_map(|e| e.downcast_ref::<T>())
    }

    /// The layer's error, boxed.
    pub fn into_layer_error(self) -> Box<dyn StdError + Send + Sync + 'static> {
        self.layer
    }

    /// The layer's error and every cause under it.
    fn causes(&self) -> impl Iterator<Item = &(dyn StdError + 'static)> {
        let top: &(dyn StdError + 'static) = &*self.layer;
        std::iter::successors(Some(top), |&e| e.source())
    }
}

impl<E: Classify> From<E> for Error {
    fn from(e: E) -> Self {
        Error::new(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&ErrorChain(&*self.layer), f)
    }
}

impl fmt::Debug for Error {
    /// The chain (as `Display`) and the kind: what `fn main() ->
    /// rmq::Result<()>` prints. `{:#?}` shows the layer error's structure.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return f
                .debug_struct("Error")
                .field("kind", &self.class.kind)
                .field("layer_error", &self.layer)
                .finish();
        }
        write!(f, "{self} (kind: {:?})", self.class.kind)
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.layer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unreachable_name_server() -> Error {
        rmq_client_core::Error::NameServerUnavailable {
            addrs: vec!["127.0.0.1:1".into()],
            source: Some(Box::new(rmq_client_core::Error::Remoting(
                rmq_remoting::Error::Connect {
                    addr: "127.0.0.1:1".into(),
                    source: std::io::Error::other("connection refused"),
                },
            ))),
        }
        .into()
    }

    #[test]
    fn display_prints_the_chain_once() {
        let e = unreachable_name_server();
        assert_eq!(
            e.to_string(),
            "no name server answered (tried [\"127.0.0.1:1\"]): remoting call failed: cannot \
             connect to 127.0.0.1:1; check that the address is right and the peer is up: \
             connection refused"
        );
        assert_eq!(e.kind(), ErrorKind::NameServerUnavailable);
        assert!(e.is_retryable());
        assert!(!e.is_timeout());
        assert!(!e.is_shutdown());
        assert!(e.is_name_server_unavailable());
        assert!(Error::from(rmq_client_core::Error::Shutdown).is_shutdown());
        assert!(format!("{e:?}").contains("connection refused"));
        assert!(format!("{e:?}").ends_with("(kind: NameServerUnavailable)"));
        assert!(format!("{e:#?}").contains("NameServerUnavailable {"));
    }

    #[test]
    fn bad_name_server_address_names_it_and_the_form() {
        let e: Error = match rmq_client_core::ClientConfig::builder()
            .namesrv_addr("localhost")
            .build()
        {
            Ok(_) => panic!("\"localhost\" has no port"),
            Err(e) => e.into(),
        };
        let text = e.to_string();
        assert!(text.contains("\"localhost\""), "{text}");
        assert!(text.contains("host:port"), "{text}");
        assert_eq!(e.kind(), ErrorKind::Config);
    }

    #[test]
    fn the_layer_error_comes_back() {
        let mut e = unreachable_name_server();
        assert!(e.is::<rmq_client_core::Error>());
        assert!(e.downcast_ref::<rmq_remoting::Error>().is_none());
        assert!(e.downcast_mut::<rmq_client_core::Error>().is_some());
        let connect = e.find_cause::<rmq_remoting::Error>();
        assert!(matches!(connect, Some(rmq_remoting::Error::Connect { .. })));
        assert!(e.source().is_some_and(|s| s.is::<rmq_client_core::Error>()));
        // A failed downcast keeps the error and its classification.
        let e = match e.downcast::<rmq_grpc::Error>() {
            Ok(_) => panic!("not a gRPC error"),
            Err(e) => e,
        };
        assert_eq!(e.kind(), ErrorKind::NameServerUnavailable);
        assert!(e.is_retryable());
        let layer = e.into_layer_error();
        assert!(layer.is::<rmq_client_core::Error>());
    }

    #[test]
    fn auth_and_timeout_win_wherever_they_are() {
        let refused: Error = rmq_client_core::Error::from(rmq_remoting::Error::Response {
            addr: "a:1".into(),
            request: rmq_protocol::RequestCode::SEND_MESSAGE_V2,
            code: ResponseCode::NO_PERMISSION,
            remark: Some("check signature failed.".into()),
        })
        .into();
        assert!(refused.is_auth());
        assert_eq!(refused.kind(), ErrorKind::Auth);
        assert_eq!(refused.response_code(), Some(ResponseCode::NO_PERMISSION));

        let timed_out: Error = rmq_client_core::Error::NameServerUnavailable {
            addrs: vec!["a:1".into()],
            source: Some(Box::new(
                rmq_remoting::Error::Timeout {
                    addr: "a:1".into(),
                    code: rmq_protocol::RequestCode::GET_ROUTEINFO_BY_TOPIC,
                    after: std::time::Duration::from_secs(3),
                    written: true,
                }
                .into(),
            )),
        }
        .into();
        assert!(timed_out.is_timeout());
        assert_eq!(timed_out.kind(), ErrorKind::Timeout);
        assert!(timed_out.is_name_server_unavailable());
        assert!(!refused.is_name_server_unavailable());
        assert_eq!(timed_out.response_code(), None);
        assert!(!timed_out.is_certificate_error());
    }

    #[test]
    fn offset_store_and_proxy_errors() {
        let e: Error = rmq_offset_store::Error::Persist {
            failed: vec![],
            total: 2,
            source: Box::new(rmq_offset_store::Error::BrokerNotFound {
                broker_name: "b".into(),
                topic: "t".into(),
                source: None,
            }),
        }
        .into();
        assert_eq!(e.kind(), ErrorKind::BrokerNotFound);
        assert!(e.is_retryable());

        let proxy = |code: rmq_grpc::proto::Code| -> Error {
            rmq_grpc::Error::Proxy {
                rpc: "SendMessage",
                code: code as i32,
                message: String::new(),
            }
            .into()
        };
        use rmq_grpc::proto::Code;
        assert_eq!(proxy(Code::TopicNotFound).kind(), ErrorKind::TopicNotFound);
        assert_eq!(proxy(Code::Forbidden).kind(), ErrorKind::Auth);
        assert_eq!(proxy(Code::IllegalTopic).kind(), ErrorKind::InvalidArgument);
        assert_eq!(proxy(Code::TooManyRequests).kind(), ErrorKind::Broker);
        assert!(proxy(Code::TooManyRequests).is_retryable());
        let endpoint: Error = rmq_grpc::Error::InvalidEndpoint {
            endpoint: "x".into(),
            reason: "no port".into(),
        }
        .into();
        assert_eq!(endpoint.kind(), ErrorKind::Config);
    }

    #[test]
    fn error_is_send_sync_static() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
        let boxed: Box<dyn StdError + Send + Sync> = unreachable_name_server().into();
        assert!(boxed.to_string().starts_with("no name server answered"));
    }
}
