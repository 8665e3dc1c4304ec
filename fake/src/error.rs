//! [`FakeError`]: what can go wrong when starting or controlling a fake cluster.

use std::io;
use std::time::Duration;

/// Errors of the fake cluster's control API.
///
/// Requests the fake answers on the wire never produce one of these: a bad
/// request gets an error *response*, a bad frame closes that connection.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum FakeError {
    /// A listener could not be opened.
    #[error(
        "the fake RocketMQ cannot listen on {addr}: {source}; pick another port (0 = any free port)"
    )]
    Bind {
        /// The address asked for.
        addr: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },

    /// The builder was given a value it cannot use.
    #[error("invalid fake cluster configuration: {0}")]
    Config(String),

    /// The broker named does not exist in this cluster.
    #[error("the fake cluster has no broker named `{0}`")]
    NoSuchBroker(String),

    /// The broker is stopped (killed or crashed and not restarted).
    #[error("the fake broker `{0}` is not running; restart it first")]
    BrokerStopped(String),

    /// The broker is already running.
    #[error("the fake broker `{0}` is already running")]
    BrokerRunning(String),

    /// A topic name the fake (like the real broker) refuses.
    #[error("invalid topic name `{topic}`: {reason}")]
    InvalidTopic {
        /// The topic.
        topic: String,
        /// Why it is refused.
        reason: String,
    },

    /// A wait on the cluster timed out.
    #[error("{what}: not reached within {after:?}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// The timeout.
        after: Duration,
    },

    /// The cluster has been shut down.
    #[error("the fake cluster has been shut down; start a new one")]
    Shutdown,
}

/// `Result` with [`FakeError`].
pub type Result<T, E = FakeError> = std::result::Result<T, E>;
