//! The one error type of rmq's user-facing calls.
//!
//! Every public call of the producer and the consumers returns [`Error`]
//! ([`Result<T>`]): the error of the layer that failed (the producer's, a
//! consumer's, the client core's, the transport's, the offset store's, ...),
//! boxed, with what an application asks of it:
//!
//! * [`Error::kind`]: what went wrong, as an [`ErrorKind`] to match on;
//! * [`Error::is_retryable`], [`Error::is_timeout`], [`Error::is_auth`],
//!   [`Error::is_certificate_error`], [`Error::response_code`];
//! * `Display`: the whole cause chain on one line, each cause once
//!   (`a: b: c`), so `println!("{e}")` and `tracing::warn!(error = %e)`
//!   show the words that say what to fix;
//! * [`Error::downcast_ref`], [`Error::downcast`] and
//!   [`Error::find_cause`]: the layer's detailed error, for what the
//!   questions above do not answer (e.g. the messages a failed send hands
//!   back, `rmq_producer::Error::into_unsent`).
//!
//! Every layer error converts into it with `?` (each implements
//! [`Classify`]). [`ErrorExt`] gives the layers' own error types the same
//! [`kind`](ErrorExt::kind) and the printed [`chain`](ErrorExt::chain).
//!
//! ```
//! let e = rmq_client_core::ClientConfig::builder().namesrv_addr("localhost").build().unwrap_err();
//! let e = rmq_error::Error::from(e);
//! assert_eq!(e.kind(), rmq_error::ErrorKind::Config);
//! assert!(!e.is_retryable());
//! println!("{e}"); // invalid client configuration: name-server address "localhost" is not host:port (e.g. "127.0.0.1:9876")
//! assert!(e.to_string().contains("\"localhost\" is not host:port"));
//! assert!(e.downcast_ref::<rmq_client_core::Error>().is_some());
//! ```
//!
//! Applications use it as `rmq::Error`; see `DESIGN.md` in the crate for
//! how the layers classify their errors.
#![warn(missing_docs)]

mod classify;
mod error;
mod kind;

pub use classify::{Classify, ErrorExt};
pub use error::Error;
pub use kind::ErrorKind;
pub use rmq_protocol::ErrorChain;

/// `Result` with [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
