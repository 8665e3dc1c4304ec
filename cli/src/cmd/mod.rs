//! The subcommands, one file each, and what they share.

pub(crate) mod bench;
pub(crate) mod cluster;
pub(crate) mod consume;
pub(crate) mod group;
pub(crate) mod msg;
pub(crate) mod produce;
pub(crate) mod topic;

use std::io::{BufRead, Write};

use crate::error::{CliError, Result};

/// How a command ended (when it did not fail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Everything asked for was done (exit 0).
    Done,
    /// Stopped by Ctrl-C before the end of its input (exit 130).
    Interrupted,
}

/// Asks `question` on stderr and reads the answer from stdin; anything but
/// `y` / `yes` refuses.
///
/// # Errors
///
/// [`CliError::Refused`] when not confirmed (also at end of input: pass
/// `--yes` in scripts).
pub(crate) fn confirm(question: &str) -> Result<()> {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let read = std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::io("cannot read the answer from stdin", e))?;
    if read == 0 {
        eprintln!();
        return Err(CliError::Refused(
            "not confirmed (stdin is closed): pass --yes to go ahead without asking".to_owned(),
        ));
    }
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(CliError::Refused(
            "not confirmed: nothing was changed".to_owned(),
        )),
    }
}
