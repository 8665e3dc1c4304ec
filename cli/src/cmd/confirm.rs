//! [`confirm`]: the yes / no question destructive commands ask.

use std::io::{BufRead, Write};

use crate::error::{CliError, Result};

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
