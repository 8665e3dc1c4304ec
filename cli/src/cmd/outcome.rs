//! [`Outcome`]: how a command ended.

/// How a command ended (when it did not fail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Everything asked for was done (exit 0).
    Done,
    /// Stopped by Ctrl-C before the end of its input (exit 130).
    Interrupted,
}
