//! The command's error type: what went wrong, with the cause chain kept for
//! [`report`].

use std::fmt::Write as _;
use std::path::PathBuf;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// A client call failed (the layers' errors, through the facade's type).
    #[error(transparent)]
    Rmq(Box<rmq::Error>),

    /// The arguments or the input do not make sense; the text says how to
    /// fix them.
    #[error("{0}")]
    Usage(String),

    /// The command refused to act (e.g. a reset while consumers are online).
    #[error("{0}")]
    Refused(String),

    /// The config file could not be read.
    #[error("cannot read the config file {}", path.display())]
    ConfigRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The config file is not valid.
    #[error("invalid config file {}", path.display())]
    ConfigParse {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },

    /// Local input or output failed.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },

    /// A line of `--json` input is not a message.
    #[error(
        "line {line}: not a JSON message (expected {{\"body\": ..., \"tags\": ..., \"keys\": ..., \"properties\": {{...}}}})"
    )]
    BadJson {
        line: u64,
        #[source]
        source: serde_json::Error,
    },

    /// Some sends failed.
    #[error("{failed} of {total} messages were not sent; the first failure")]
    SendFailed {
        failed: u64,
        total: u64,
        #[source]
        first: Box<rmq::Error>,
    },
}

impl CliError {
    /// The process exit code: 2 for usage errors (as clap), 1 otherwise.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::BadJson { .. } => 2,
            _ => 1,
        }
    }

    /// Wraps an I/O error with what was being done.
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        CliError::Io {
            what: what.into(),
            source,
        }
    }
}

impl From<rmq::Error> for CliError {
    fn from(e: rmq::Error) -> Self {
        CliError::Rmq(Box::new(e))
    }
}

macro_rules! from_layer {
    ($($ty:ty),*) => {$(
        impl From<$ty> for CliError {
            fn from(e: $ty) -> Self {
                CliError::Rmq(Box::new(rmq::Error::from(e)))
            }
        }
    )*};
}

from_layer!(rmq::client_core::Error);

/// `Result` with [`CliError`].
pub(crate) type Result<T, E = CliError> = std::result::Result<T, E>;

/// The text of one level: `rmq::Error` prints its whole chain on one line,
/// the report prints one level a line.
fn level_text(err: &(dyn std::error::Error + 'static)) -> String {
    match err.downcast_ref::<CliError>() {
        Some(CliError::Rmq(e)) => e.layer_error().to_string(),
        _ => match err.downcast_ref::<rmq::Error>() {
            Some(e) => e.layer_error().to_string(),
            None => err.to_string(),
        },
    }
}

/// The error and every cause under it, one per line:
/// `error: ...` then `  caused by: ...`.
pub(crate) fn report(err: &(dyn std::error::Error + 'static)) -> String {
    let mut last = level_text(err);
    let mut out = format!("error: {last}");
    let mut source = err.source();
    while let Some(cause) = source {
        let text = level_text(cause);
        // Transparent wrappers repeat their inner text: show it once.
        if text != last {
            let _ = write!(out, "\n  caused by: {text}");
        }
        last = text;
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_prints_the_whole_chain() {
        let inner = std::io::Error::other("disk on fire");
        let err = CliError::io("cannot read messages.txt", inner);
        assert_eq!(
            report(&err),
            "error: cannot read messages.txt\n  caused by: disk on fire"
        );
        assert_eq!(err.exit_code(), 1);
        assert_eq!(CliError::Usage("x".into()).exit_code(), 2);
    }
}
