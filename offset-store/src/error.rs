//! The offset-store error type.

use std::io;
use std::path::PathBuf;

use rmq_protocol::MessageQueue;

/// Errors of the [`OffsetStore`](crate::OffsetStore) implementations.
///
/// `Display` describes this level only; the cause is in
/// [`source`](std::error::Error::source).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A broker or name-server call failed (see the source for which and
    /// why).
    #[error("offset call to the broker failed")]
    Client(#[from] rmq_client_core::Error),

    /// Reading or writing the local offset file (or its directory) failed.
    #[error("{op} {path:?} failed: check that the directory exists and is writable")]
    Io {
        /// What was being done (`"write"`, `"rename"`, ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },

    /// The local offset file exists but does not hold a valid offset table.
    /// The stores only log this (they fall back to the backup file); it is
    /// public for callers that read offset files themselves.
    #[error("offset file {path:?} is corrupt: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// No address is known for the queue's broker, even after refreshing the
    /// topic's route.
    #[error(
        "no address known for broker {broker_name:?} (topic {topic:?}) even after a route \
         refresh; the broker may be down or no longer serve the topic"
    )]
    BrokerNotFound {
        /// The broker name of the queue.
        broker_name: String,
        /// The queue's topic.
        topic: String,
        /// Why the route refresh failed, if it did.
        #[source]
        source: Option<Box<rmq_client_core::Error>>,
    },

    /// Some offsets of a `persist_all` could not be stored; the others were.
    /// The store keeps them in memory, the next persist tries again.
    #[error("{} of {total} offsets could not be persisted", failed.len())]
    Persist {
        /// The queues whose offsets were not stored.
        failed: Vec<MessageQueue>,
        /// How many queues were persisted in all.
        total: usize,
        /// The first failure.
        #[source]
        source: Box<Error>,
    },

    /// A client id or group cannot be used as a directory name of the local
    /// store (empty, `.`/`..`, or containing a path separator or NUL).
    #[error("{what} {value:?} cannot name a directory of the local offset store: {reason}")]
    InvalidName {
        /// `"client id"` or `"group"`.
        what: &'static str,
        /// The rejected value.
        value: String,
        /// Why.
        reason: &'static str,
    },

    /// Neither the store root was given nor `RMQ_OFFSET_STORE_DIR` / the home
    /// directory (`HOME`, `USERPROFILE`) is set.
    #[error(
        "no directory for the local offset store: set RMQ_OFFSET_STORE_DIR or HOME, or pass a \
         root directory"
    )]
    NoStoreDir,

    /// A blocking file task ended without a result (it panicked, or the
    /// runtime is shutting down).
    #[error("the offset file task did not complete")]
    TaskFailed(#[source] tokio::task::JoinError),
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether trying again later may succeed: retryable client errors
    /// (timeouts, closed connections, busy brokers, unknown brokers) and
    /// partial persists whose first failure is retryable.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Client(e) => e.is_retryable(),
            Error::BrokerNotFound { .. } => true,
            Error::Persist { source, .. } => source.is_retryable(),
            _ => false,
        }
    }

    /// Whether a broker refused the credentials or the user's permissions
    /// ([`rmq_client_core::Error::is_auth`]).
    pub fn is_auth(&self) -> bool {
        match self {
            Error::Client(e) => e.is_auth(),
            Error::Persist { source, .. } => source.is_auth(),
            _ => false,
        }
    }

    /// Whether the broker could not be reached or dropped the connection
    /// (see [`rmq_client_core::Error::is_broker_unreachable`]).
    pub fn is_broker_unreachable(&self) -> bool {
        match self {
            Error::Client(e) => e.is_broker_unreachable(),
            _ => false,
        }
    }

    /// Whether this is (or, for [`Error::Persist`], starts with) a timeout.
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Client(e) => e.is_timeout(),
            Error::Persist { source, .. } => source.is_timeout(),
            _ => false,
        }
    }

    /// Whether this is a local file error ([`Error::Io`] or
    /// [`Error::Corrupt`]).
    pub fn is_file_error(&self) -> bool {
        matches!(self, Error::Io { .. } | Error::Corrupt { .. })
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
