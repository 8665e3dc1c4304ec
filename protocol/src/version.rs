//! [`BrokerVersion`]: the version code a broker reports.

use std::fmt;

/// The version code a broker puts in every response
/// ([`RemotingCommand::version`](crate::RemotingCommand::version)): the
/// ordinal of Java's `MQVersion.Version` (`V4_9_7` = 407, `V5_0_0` = 413,
/// `V5_5_0` = 513).
///
/// ```
/// use rmq_protocol::BrokerVersion;
///
/// assert!(BrokerVersion(513) >= BrokerVersion::V5_0_0);
/// assert_eq!(BrokerVersion(407).to_string(), "V4_9_7");
/// assert_eq!(BrokerVersion(513).to_string(), "V5_5_0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BrokerVersion(pub i32);

impl BrokerVersion {
    /// `V4_9_4`, the oldest version this code names (older ones print as
    /// their code).
    pub const V4_9_4: BrokerVersion = BrokerVersion(401);
    /// `V5_0_0`: timer (delivery-time) messages, pop consumption.
    pub const V5_0_0: BrokerVersion = BrokerVersion(413);

    /// `(major, minor, patch, snapshot)` for codes from `V4_9_4_SNAPSHOT`
    /// (400) through `V5_9_9` (each version has a `_SNAPSHOT` code before
    /// it).
    fn parts(self) -> Option<(i32, i32, i32, bool)> {
        let code = self.0;
        if (400..=411).contains(&code) {
            let step = code - 400;
            return Some((4, 9, 4 + step / 2, step % 2 == 0));
        }
        if (412..=611).contains(&code) {
            let step = code - 412;
            let n = step / 2;
            return Some((5, n / 10, n % 10, step % 2 == 0));
        }
        None
    }
}

impl fmt::Display for BrokerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parts() {
            Some((major, minor, patch, snapshot)) => write!(
                f,
                "V{major}_{minor}_{patch}{}",
                if snapshot { "_SNAPSHOT" } else { "" }
            ),
            None => write!(f, "version code {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(BrokerVersion(401).to_string(), "V4_9_4");
        assert_eq!(BrokerVersion(412).to_string(), "V5_0_0_SNAPSHOT");
        assert_eq!(BrokerVersion(413).to_string(), "V5_0_0");
        assert_eq!(BrokerVersion(433).to_string(), "V5_1_0");
        assert_eq!(BrokerVersion(12).to_string(), "version code 12");
    }
}
