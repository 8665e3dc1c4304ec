//! [`HeartbeatData`]: the HEART_BEAT (34) body.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::subscription::SubscriptionData;

/// How a consumer obtains messages (Java `ConsumeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsumeType {
    /// `CONSUME_ACTIVELY`: pull / lite-pull consumers.
    ConsumeActively,
    /// `CONSUME_PASSIVELY`: push consumers.
    #[default]
    ConsumePassively,
    /// `CONSUME_POP`: pop consumers (5.x).
    ConsumePop,
}

/// Clustering or broadcasting (Java `MessageModel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageModel {
    /// `BROADCASTING`: every consumer gets every message.
    Broadcasting,
    /// `CLUSTERING`: the group shares the queues.
    #[default]
    Clustering,
}

/// Where a group without a stored offset starts (Java `ConsumeFromWhere`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsumeFromWhere {
    /// `CONSUME_FROM_LAST_OFFSET`.
    #[default]
    ConsumeFromLastOffset,
    /// `CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST` (deprecated).
    ConsumeFromLastOffsetAndFromMinWhenBootFirst,
    /// `CONSUME_FROM_MIN_OFFSET` (deprecated).
    ConsumeFromMinOffset,
    /// `CONSUME_FROM_MAX_OFFSET` (deprecated).
    ConsumeFromMaxOffset,
    /// `CONSUME_FROM_FIRST_OFFSET`.
    ConsumeFromFirstOffset,
    /// `CONSUME_FROM_TIMESTAMP`.
    ConsumeFromTimestamp,
}

macro_rules! java_enum_name {
    ($ty:ident { $($variant:ident => $name:literal,)* }) => {
        impl $ty {
            /// The Java enum name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $ty::$variant => $name, )*
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

java_enum_name!(ConsumeType {
    ConsumeActively => "CONSUME_ACTIVELY",
    ConsumePassively => "CONSUME_PASSIVELY",
    ConsumePop => "CONSUME_POP",
});

java_enum_name!(MessageModel {
    Broadcasting => "BROADCASTING",
    Clustering => "CLUSTERING",
});

java_enum_name!(ConsumeFromWhere {
    ConsumeFromLastOffset => "CONSUME_FROM_LAST_OFFSET",
    ConsumeFromLastOffsetAndFromMinWhenBootFirst => "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    ConsumeFromMinOffset => "CONSUME_FROM_MIN_OFFSET",
    ConsumeFromMaxOffset => "CONSUME_FROM_MAX_OFFSET",
    ConsumeFromFirstOffset => "CONSUME_FROM_FIRST_OFFSET",
    ConsumeFromTimestamp => "CONSUME_FROM_TIMESTAMP",
});

/// One producer group of the client (Java `ProducerData`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerData {
    /// Producer group.
    pub group_name: String,
}

/// One consumer group of the client (Java `ConsumerData`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerData {
    /// Where a group without a stored offset starts.
    pub consume_from_where: ConsumeFromWhere,
    /// Push, pull or pop.
    pub consume_type: ConsumeType,
    /// Consumer group.
    pub group_name: String,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// The subscriptions, including `%RETRY%<group>` in clustering mode.
    pub subscription_data_set: Vec<SubscriptionData>,
    /// Unit mode; `false`.
    pub unit_mode: bool,
}

/// The HEART_BEAT body (Java `HeartbeatData`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HeartbeatData {
    /// Client id (capital `ID` on the wire).
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// Consumer groups.
    pub consumer_data_set: Vec<ConsumerData>,
    /// 5.x heartbeat-v2 fingerprint; 0 when unused.
    pub heartbeat_fingerprint: i32,
    /// Producer groups.
    pub producer_data_set: Vec<ProducerData>,
    /// 5.x heartbeat v2: subscriptions omitted; `false` when unused.
    pub without_sub: bool,
}

json_body!(HeartbeatData, "HeartbeatData");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_names() {
        assert_eq!(
            serde_json::to_string(&ConsumeFromWhere::ConsumeFromLastOffsetAndFromMinWhenBootFirst)
                .unwrap(),
            r#""CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST""#
        );
        for v in [
            ConsumeFromWhere::ConsumeFromLastOffset,
            ConsumeFromWhere::ConsumeFromLastOffsetAndFromMinWhenBootFirst,
            ConsumeFromWhere::ConsumeFromMinOffset,
            ConsumeFromWhere::ConsumeFromMaxOffset,
            ConsumeFromWhere::ConsumeFromFirstOffset,
            ConsumeFromWhere::ConsumeFromTimestamp,
        ] {
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                format!("\"{}\"", v.as_str())
            );
        }
        for v in [
            ConsumeType::ConsumeActively,
            ConsumeType::ConsumePassively,
            ConsumeType::ConsumePop,
        ] {
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        }
        for v in [MessageModel::Broadcasting, MessageModel::Clustering] {
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        }
    }
}
