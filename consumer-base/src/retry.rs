//! [`MaxReconsume`] and [`Retry`]: the Java sentinels of redelivery as enums.

/// How often a failed message is redelivered before it goes to
/// `%DLQ%<group>` (Java `maxReconsumeTimes`, whose −1 and `i32::MAX` are
/// the first two variants).
///
/// ```
/// use rmq_consumer_base::MaxReconsume;
///
/// assert_eq!(MaxReconsume::Default.to_java(), -1);
/// assert_eq!(MaxReconsume::Unlimited.to_java(), i32::MAX);
/// assert_eq!(MaxReconsume::Times(3).to_java(), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum MaxReconsume {
    /// Java's default (−1): 16 times for concurrent consumption, unlimited
    /// for orderly consumption.
    #[default]
    Default,
    /// Never to the DLQ (Java `Integer.MAX_VALUE`).
    Unlimited,
    /// This many redeliveries (Java: 0–16384; more is unlimited).
    Times(u32),
}

impl MaxReconsume {
    /// The Java `maxReconsumeTimes` value.
    pub fn to_java(self) -> i32 {
        match self {
            MaxReconsume::Default => -1,
            MaxReconsume::Unlimited => i32::MAX,
            MaxReconsume::Times(n) => i32::try_from(n).unwrap_or(i32::MAX),
        }
    }

    /// From a Java `maxReconsumeTimes` value: negative is
    /// [`Default`](MaxReconsume::Default), `i32::MAX` is
    /// [`Unlimited`](MaxReconsume::Unlimited).
    pub fn from_java(times: i32) -> Self {
        match times {
            i32::MAX => MaxReconsume::Unlimited,
            n => u32::try_from(n).map_or(MaxReconsume::Default, MaxReconsume::Times),
        }
    }
}

/// How a message that failed comes back (Java's delay level of a send-back:
/// 0, 1–18 or negative).
///
/// ```
/// use rmq_consumer_base::Retry;
///
/// assert_eq!(Retry::Broker.delay_level(), 0);
/// assert_eq!(Retry::Level(3).delay_level(), 3);
/// assert_eq!(Retry::Dlq.delay_level(), -1);
/// assert_eq!(Retry::from_delay_level(-5), Retry::Dlq);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Retry {
    /// The broker chooses: level 3 + the message's reconsume count (10 s,
    /// 30 s, 1 min, ... with the default `messageDelayLevel`); delay level 0.
    #[default]
    Broker,
    /// After this level of the broker's `messageDelayLevel` table (1–18).
    Level(u8),
    /// Straight to `%DLQ%<group>`, no redelivery (a negative delay level).
    Dlq,
}

impl Retry {
    /// The Java delay level: 0, the level, or −1.
    pub fn delay_level(self) -> i32 {
        match self {
            Retry::Broker => 0,
            Retry::Level(n) => i32::from(n),
            Retry::Dlq => -1,
        }
    }

    /// From a Java delay level: negative is [`Dlq`](Retry::Dlq), 0 is
    /// [`Broker`](Retry::Broker), above 255 is level 255 (the broker caps
    /// levels at its table's size).
    pub fn from_delay_level(level: i32) -> Self {
        match level {
            l if l < 0 => Retry::Dlq,
            0 => Retry::Broker,
            l => Retry::Level(u8::try_from(l).unwrap_or(u8::MAX)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for m in [
            MaxReconsume::Default,
            MaxReconsume::Unlimited,
            MaxReconsume::Times(0),
            MaxReconsume::Times(16),
        ] {
            assert_eq!(MaxReconsume::from_java(m.to_java()), m);
        }
        for r in [Retry::Broker, Retry::Dlq, Retry::Level(1), Retry::Level(18)] {
            assert_eq!(Retry::from_delay_level(r.delay_level()), r);
        }
    }
}
