//! The driver's error type.

use thiserror::Error;

/// What went wrong in a benchmark run.
#[derive(Debug, Error)]
pub(crate) enum BenchError {
    /// Bad command line.
    #[error("bad arguments: {0} (see bench/README.md for the modes and flags)")]
    Args(String),
    /// A client-core call failed.
    #[error("{what}: {source}")]
    Client {
        /// What was being done.
        what: String,
        /// The client error.
        #[source]
        source: rmq_client_core::Error,
    },
    /// A producer call failed.
    #[error("{what}: {source}")]
    Producer {
        /// What was being done.
        what: String,
        /// The producer error.
        #[source]
        source: rmq_error::Error,
    },
    /// The push consumer failed.
    #[error("{what}: {source}")]
    Consumer {
        /// What was being done.
        what: String,
        /// The consumer error.
        #[source]
        source: Box<rmq_error::Error>,
    },
    /// The pull consumer failed.
    #[error("{what}: {source}")]
    PullConsumer {
        /// What was being done.
        what: String,
        /// The consumer error.
        #[source]
        source: Box<rmq_error::Error>,
    },
    /// A raw remoting call failed.
    #[error("{what}: {source}")]
    Remoting {
        /// What was being done.
        what: String,
        /// The remoting error.
        #[source]
        source: rmq_remoting::Error,
    },
    /// A protocol value could not be decoded.
    #[error("{what}: {source}")]
    Protocol {
        /// What was being done.
        what: String,
        /// The protocol error.
        #[source]
        source: rmq_protocol::Error,
    },
    /// Anything else (broker answers the driver cannot use, missing routes).
    #[error("{0}")]
    Other(String),
}

/// `Result` with [`BenchError`].
pub(crate) type Result<T, E = BenchError> = std::result::Result<T, E>;
