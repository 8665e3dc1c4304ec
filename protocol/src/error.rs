//! The protocol crate's error type.

use std::io;

/// Errors produced while encoding or decoding RocketMQ protocol data.
///
/// Every decoding error means the peer sent bytes this client cannot use; a
/// frame decoder that returns one of them has lost sync with the stream, and
/// the connection it read from must be closed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The underlying stream failed (only produced through the codec).
    #[error("I/O error on the remoting stream")]
    Io(#[from] io::Error),

    /// A frame announced more bytes than the configured maximum.
    #[error("frame of {len} bytes exceeds the maximum frame length of {max} bytes")]
    FrameTooLarge {
        /// Length announced by the frame (or computed for an outgoing frame).
        len: u64,
        /// The configured maximum.
        max: usize,
    },

    /// The frame's length fields contradict each other or are negative.
    #[error("invalid frame: {0}")]
    InvalidFrame(String),

    /// The header's serialize-type byte is neither JSON (0) nor ROCKETMQ (1).
    #[error("unknown header serialize type {0}; expected 0 (JSON) or 1 (ROCKETMQ)")]
    UnknownSerializeType(u8),

    /// The JSON header could not be parsed or written.
    #[error("invalid JSON command header")]
    JsonHeader(#[source] serde_json::Error),

    /// The ROCKETMQ binary header is truncated or inconsistent.
    #[error("invalid ROCKETMQ binary header: {0}")]
    BinaryHeader(String),

    /// A required header (ext) field is absent.
    #[error("required header field `{field}` is missing")]
    MissingField {
        /// The wire name of the field.
        field: &'static str,
    },

    /// A header (ext) field holds a value that does not parse.
    #[error("header field `{field}` has an invalid value `{value}`")]
    InvalidField {
        /// The wire name of the field.
        field: &'static str,
        /// The offending value.
        value: String,
    },

    /// A stored or batch message could not be decoded or encoded.
    #[error("invalid message data: {0}")]
    InvalidMessage(String),

    /// A compressed message body could not be decompressed.
    #[error("cannot decompress a {codec} message body")]
    Decompress {
        /// The codec named by the message's sysFlag.
        codec: &'static str,
        /// What the decompressor reported.
        #[source]
        source: io::Error,
    },

    /// A JSON body (route data, heartbeat, lock sets, ...) is not valid.
    #[error("invalid {what} body: {reason}")]
    InvalidBody {
        /// Which body was being decoded.
        what: &'static str,
        /// What was wrong with it.
        reason: String,
    },

    /// A value cannot be represented on the wire (e.g. a header over 16 MiB).
    #[error("cannot encode: {0}")]
    Encode(String),
}

/// `Result` with this crate's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
