//! [`ErrorChain`]: an error and its causes on one line.

use std::error::Error as StdError;
use std::fmt;

/// Displays an error and every [`source()`](StdError::source) under it as
/// `outer: cause: root cause`, each text once: a cause whose text the level
/// above already printed (a transparent wrapper, or a `Display` that includes
/// its source) is skipped.
///
/// Log lines use it so that they carry the whole chain:
///
/// ```
/// use rmq_protocol::ErrorChain;
///
/// #[derive(Debug)]
/// struct Outer(std::io::Error);
/// impl std::fmt::Display for Outer {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("cannot read the offsets file")
///     }
/// }
/// impl std::error::Error for Outer {
///     fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
///         Some(&self.0)
///     }
/// }
///
/// let e = Outer(std::io::Error::other("disk full"));
/// assert_eq!(
///     ErrorChain(&e).to_string(),
///     "cannot read the offsets file: disk full"
/// );
/// ```
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn StdError + 'static));

impl fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut printed = self.0.to_string();
        f.write_str(&printed)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !text.is_empty() && !printed.contains(&text) {
                f.write_str(": ")?;
                f.write_str(&text)?;
                printed.push_str(": ");
                printed.push_str(&text);
            }
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Level(&'static str, Option<Box<Level>>);
    impl fmt::Display for Level {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }
    impl StdError for Level {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn prints_each_level_once() {
        let e = Level(
            "a",
            Some(Box::new(Level(
                "b: c",
                Some(Box::new(Level("c", Some(Box::new(Level("d", None)))))),
            ))),
        );
        assert_eq!(ErrorChain(&e).to_string(), "a: b: c: d");
        assert_eq!(ErrorChain(&Level("x", None)).to_string(), "x");
    }
}
