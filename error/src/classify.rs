//! [`Classify`]: what a layer's error type answers so that [`Error`](crate::Error)
//! can; its implementations for the layers below this crate; [`ErrorExt`].

use std::error::Error as StdError;

use rmq_protocol::ErrorChain;

use crate::kind::{
    ErrorKind, client_kind, grpc_kind, lower_kind, offset_store_kind, remoting_kind,
};

/// What a layer's error type says about itself, so that it converts into
/// [`Error`](crate::Error) (with `?`) and answers [`ErrorExt::kind`].
///
/// The layers below this crate (protocol, remoting, client core, gRPC,
/// offset store) are classified here; the crates above (the producer, the
/// consumers) implement it for their own errors. Each method looks at this
/// error and, where it only wraps another error of its own crate, at that
/// one; causes of the layers below are looked at by this crate.
///
/// ```
/// use rmq_error::{Classify, ErrorKind};
///
/// #[derive(Debug)]
/// struct Closed;
/// impl std::fmt::Display for Closed {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("the store is closed")
///     }
/// }
/// impl std::error::Error for Closed {}
/// impl Classify for Closed {
///     fn level_kind(&self) -> Option<ErrorKind> {
///         Some(ErrorKind::Shutdown)
///     }
///     fn is_retryable(&self) -> bool {
///         false
///     }
///     fn is_timeout(&self) -> bool {
///         false
///     }
///     fn is_auth(&self) -> bool {
///         false
///     }
/// }
///
/// let e = rmq_error::Error::from(Closed);
/// assert_eq!(e.kind(), ErrorKind::Shutdown);
/// assert!(e.downcast_ref::<Closed>().is_some());
/// ```
pub trait Classify: StdError + Send + Sync + 'static {
    /// The kind this error (and the errors of its own crate it wraps) says
    /// it is; `None` when it only wraps a cause, whose kind then decides
    /// (the first level of the cause chain that says more than "this call
    /// failed because of its cause"). [`is_auth`](Classify::is_auth) and
    /// [`is_timeout`](Classify::is_timeout) come first: such an error is
    /// [`ErrorKind::Auth`] or [`ErrorKind::Timeout`] whatever this says.
    fn level_kind(&self) -> Option<ErrorKind>;

    /// Whether retrying the operation may succeed.
    fn is_retryable(&self) -> bool;

    /// Whether the operation timed out, anywhere in the chain.
    fn is_timeout(&self) -> bool;

    /// Whether a broker refused the credentials or the user's permissions
    /// (ACL), anywhere in the chain.
    fn is_auth(&self) -> bool;
}

/// What [`Error`](crate::Error) keeps of a classified error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Class {
    pub(crate) kind: ErrorKind,
    pub(crate) retryable: bool,
    pub(crate) timeout: bool,
    pub(crate) auth: bool,
}

impl Class {
    pub(crate) fn of<E: Classify + ?Sized>(e: &E) -> Class {
        Class {
            kind: kind_of(e),
            retryable: e.is_retryable(),
            timeout: e.is_timeout(),
            auth: e.is_auth(),
        }
    }
}

/// The kind of a classified error: ACL refusal and timeout first,
/// wherever they are in the chain; else what the error says of itself;
/// else the first cause of a lower layer that says more than "this call
/// failed because of its cause".
fn kind_of<E: Classify + ?Sized>(e: &E) -> ErrorKind {
    if e.is_auth() {
        return ErrorKind::Auth;
    }
    if e.is_timeout() {
        return ErrorKind::Timeout;
    }
    if let Some(kind) = e.level_kind() {
        return kind;
    }
    let mut level = e.source();
    while let Some(cause) = level {
        if let Some(kind) = lower_kind(cause) {
            return kind;
        }
        level = cause.source();
    }
    ErrorKind::Other
}

impl Classify for rmq_protocol::Error {
    fn level_kind(&self) -> Option<ErrorKind> {
        Some(ErrorKind::Protocol)
    }
    fn is_retryable(&self) -> bool {
        false
    }
    fn is_timeout(&self) -> bool {
        false
    }
    fn is_auth(&self) -> bool {
        false
    }
}

impl Classify for rmq_remoting::Error {
    fn level_kind(&self) -> Option<ErrorKind> {
        Some(remoting_kind(self))
    }
    fn is_retryable(&self) -> bool {
        rmq_remoting::Error::is_retryable(self)
    }
    fn is_timeout(&self) -> bool {
        rmq_remoting::Error::is_timeout(self)
    }
    fn is_auth(&self) -> bool {
        false
    }
}

impl Classify for rmq_client_core::Error {
    fn level_kind(&self) -> Option<ErrorKind> {
        client_kind(self)
    }
    fn is_retryable(&self) -> bool {
        rmq_client_core::Error::is_retryable(self)
    }
    fn is_timeout(&self) -> bool {
        rmq_client_core::Error::is_timeout(self)
    }
    fn is_auth(&self) -> bool {
        rmq_client_core::Error::is_auth(self)
    }
}

impl Classify for rmq_grpc::Error {
    fn level_kind(&self) -> Option<ErrorKind> {
        Some(grpc_kind(self))
    }
    fn is_retryable(&self) -> bool {
        rmq_grpc::Error::is_retryable(self)
    }
    fn is_timeout(&self) -> bool {
        matches!(self, rmq_grpc::Error::Timeout { .. })
    }
    fn is_auth(&self) -> bool {
        rmq_grpc::Error::is_auth(self)
    }
}

impl Classify for rmq_offset_store::Error {
    fn level_kind(&self) -> Option<ErrorKind> {
        match self {
            rmq_offset_store::Error::Persist { source, .. } => source.level_kind(),
            e => offset_store_kind(e),
        }
    }
    fn is_retryable(&self) -> bool {
        rmq_offset_store::Error::is_retryable(self)
    }
    fn is_timeout(&self) -> bool {
        rmq_offset_store::Error::is_timeout(self)
    }
    fn is_auth(&self) -> bool {
        rmq_offset_store::Error::is_auth(self)
    }
}

/// [`Error::kind`](crate::Error::kind) and the whole cause chain for the
/// layers' own error types (every [`Classify`] type): classify or print a
/// detailed error (one a setting's check returns, or one taken out of an
/// [`Error`](crate::Error) with [`downcast`](crate::Error::downcast))
/// without converting it.
///
/// ```
/// use rmq_error::{ErrorExt, ErrorKind};
///
/// let e = rmq_client_core::ClientConfig::builder().namesrv_addr("localhost").build().unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::Config);
/// assert!(e.chain().to_string().contains("\"localhost\" is not host:port"));
/// ```
pub trait ErrorExt: StdError + Sized + 'static {
    /// What went wrong, as a category (the same as
    /// [`Error::kind`](crate::Error::kind) of the converted error).
    fn kind(&self) -> ErrorKind;

    /// `Display` of the whole cause chain (`a: b: c`, each cause once), as
    /// [`Error`](crate::Error)'s `Display` prints it.
    fn chain(&self) -> ErrorChain<'_> {
        ErrorChain(self)
    }
}

impl<E: Classify> ErrorExt for E {
    fn kind(&self) -> ErrorKind {
        kind_of(self)
    }
}
