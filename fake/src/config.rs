//! The cluster's configuration: [`BrokerFlavor`], [`FlushPolicy`], delay
//! levels, and the internal [`ClusterConfig`] the builder fills.

use std::time::Duration;

use crate::error::{FakeError, Result};

/// Which line of the real broker the fake imitates where 4.9.x and 5.x
/// answer differently (see the crate's list of known differences).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum BrokerFlavor {
    /// Apache RocketMQ 5.x (5.5.0 was the reference). The default.
    #[default]
    V5,
    /// Apache RocketMQ 4.9.x (4.9.7 was the reference).
    V4_9,
}

impl BrokerFlavor {
    /// The `version` (Java `MQVersion` ordinal) the servers put in their
    /// responses: 513 (`V5_5_0`) or 407 (`V4_9_7`), as the reference brokers do.
    pub fn version_ordinal(self) -> i32 {
        match self {
            BrokerFlavor::V5 => 513,
            BrokerFlavor::V4_9 => 407,
        }
    }

    /// The version text the brokers report (`GET_BROKER_RUNTIME_INFO`).
    pub fn version_desc(self) -> &'static str {
        match self {
            BrokerFlavor::V5 => "V5_5_0",
            BrokerFlavor::V4_9 => "V4_9_7",
        }
    }

    pub(crate) fn is_v5(self) -> bool {
        self == BrokerFlavor::V5
    }
}

/// When stored messages (and committed consumer offsets) count as flushed,
/// which decides what [`FakeBroker::crash`](crate::FakeBroker::crash) with
/// `lose_unflushed` loses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FlushPolicy {
    /// Everything is flushed as soon as it is stored (a crash loses nothing).
    #[default]
    Always,
    /// Flushed every interval, like the real broker's asynchronous flush
    /// (Java `flushIntervalCommitLog`, 500 ms).
    Interval(Duration),
    /// Only [`FakeBroker::flush`](crate::FakeBroker::flush) flushes.
    Manual,
}

/// The broker's default delay levels (Java `messageDelayLevel`).
pub const DEFAULT_DELAY_LEVELS: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

/// Parses delay levels the way the broker reads `messageDelayLevel`: levels
/// separated by spaces, each a whole number followed by `s`, `m`, `h` or `d`.
///
/// # Errors
///
/// [`FakeError::Config`] for an empty list or a level that does not parse.
pub fn parse_delay_levels(text: &str) -> Result<Vec<Duration>> {
    let mut out = Vec::new();
    for level in text.split_whitespace() {
        let bad = || {
            FakeError::Config(format!(
                "delay level `{level}` is not a whole number followed by s, m, h or d"
            ))
        };
        let unit = level.chars().last().ok_or_else(bad)?;
        let secs: u64 = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let number = level.get(..level.len().saturating_sub(1)).ok_or_else(bad)?;
        let n: u64 = number.parse().map_err(|_| bad())?;
        out.push(Duration::from_secs(n.saturating_mul(secs)));
    }
    if out.is_empty() {
        return Err(FakeError::Config(
            "at least one delay level is needed".to_owned(),
        ));
    }
    Ok(out)
}

/// Everything the builder configures.
#[derive(Debug, Clone)]
pub(crate) struct ClusterConfig {
    pub(crate) cluster_name: String,
    pub(crate) broker_names: Vec<String>,
    pub(crate) namesrv_port: u16,
    pub(crate) broker_ports: Vec<u16>,
    pub(crate) host: std::net::IpAddr,
    pub(crate) default_queues: i32,
    pub(crate) flavor: BrokerFlavor,
    pub(crate) delay_levels: Vec<Duration>,
    pub(crate) auto_create_topic: bool,
    pub(crate) auto_create_group: bool,
    pub(crate) property_filter: bool,
    pub(crate) long_polling: bool,
    pub(crate) short_polling: Duration,
    pub(crate) lock_lease: Duration,
    pub(crate) channel_expiry: Duration,
    pub(crate) max_message_size: usize,
    pub(crate) flush: FlushPolicy,
    pub(crate) retry_max_times: i32,
    pub(crate) retry_queue_nums: i32,
    pub(crate) seed_topics: Vec<(String, Option<i32>)>,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            cluster_name: "DefaultCluster".to_owned(),
            broker_names: vec!["broker-a".to_owned()],
            namesrv_port: 0,
            broker_ports: Vec::new(),
            host: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            default_queues: 8,
            flavor: BrokerFlavor::V5,
            delay_levels: parse_delay_levels(DEFAULT_DELAY_LEVELS).unwrap_or_default(),
            auto_create_topic: true,
            auto_create_group: true,
            property_filter: true,
            long_polling: true,
            short_polling: Duration::from_secs(1),
            lock_lease: Duration::from_secs(60),
            channel_expiry: Duration::from_secs(120),
            max_message_size: 4 * 1024 * 1024,
            flush: FlushPolicy::Always,
            retry_max_times: 16,
            retry_queue_nums: 1,
            seed_topics: Vec::new(),
        }
    }
}

impl ClusterConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.broker_names.is_empty() {
            return Err(FakeError::Config(
                "a cluster needs at least one broker".to_owned(),
            ));
        }
        let mut names = self.broker_names.clone();
        names.sort();
        names.dedup();
        if names.len() != self.broker_names.len() {
            return Err(FakeError::Config(
                "broker names must be distinct".to_owned(),
            ));
        }
        if !(1..=1024).contains(&self.default_queues) {
            return Err(FakeError::Config(format!(
                "queues must be between 1 and 1024, not {}",
                self.default_queues
            )));
        }
        if !self.broker_ports.is_empty() && self.broker_ports.len() != self.broker_names.len() {
            return Err(FakeError::Config(format!(
                "{} broker ports for {} brokers",
                self.broker_ports.len(),
                self.broker_names.len()
            )));
        }
        if self.delay_levels.is_empty() {
            return Err(FakeError::Config(
                "at least one delay level is needed".to_owned(),
            ));
        }
        if self.retry_queue_nums < 0 {
            return Err(FakeError::Config(
                "retry queue count must not be negative".to_owned(),
            ));
        }
        Ok(())
    }

    /// The highest delay level.
    pub(crate) fn max_delay_level(&self) -> i32 {
        i32::try_from(self.delay_levels.len()).unwrap_or(i32::MAX)
    }

    /// The delay of `level` (1-based, clamped to the last level), or `None`
    /// for level ≤ 0.
    pub(crate) fn delay_of(&self, level: i32) -> Option<Duration> {
        if level <= 0 {
            return None;
        }
        let index = usize::try_from(level.min(self.max_delay_level()))
            .ok()?
            .checked_sub(1)?;
        self.delay_levels.get(index).copied()
    }
}

/// The names brokers get by default: `broker-a`, `broker-b`, ...
pub(crate) fn default_broker_names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let letter = u8::try_from(i % 26).map_or('x', |i| char::from(b'a' + i));
            if i < 26 {
                format!("broker-{letter}")
            } else {
                format!("broker-{letter}{}", i / 26)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_levels_parse() {
        let levels = parse_delay_levels(DEFAULT_DELAY_LEVELS).unwrap();
        assert_eq!(levels.len(), 18);
        assert_eq!(levels[2], Duration::from_secs(10));
        assert_eq!(levels[17], Duration::from_secs(7200));
        assert!(parse_delay_levels("").is_err());
        assert!(parse_delay_levels("1x").is_err());
        assert!(parse_delay_levels("s").is_err());
        assert_eq!(
            parse_delay_levels("2d").unwrap(),
            [Duration::from_secs(172_800)]
        );
    }

    #[test]
    fn delay_of_clamps() {
        let c = ClusterConfig::default();
        assert_eq!(c.delay_of(0), None);
        assert_eq!(c.delay_of(-1), None);
        assert_eq!(c.delay_of(3), Some(Duration::from_secs(10)));
        assert_eq!(c.delay_of(99), Some(Duration::from_secs(7200)));
    }

    #[test]
    fn broker_names() {
        assert_eq!(
            default_broker_names(3),
            ["broker-a", "broker-b", "broker-c"]
        );
        assert_eq!(default_broker_names(28)[27], "broker-b1");
    }
}
