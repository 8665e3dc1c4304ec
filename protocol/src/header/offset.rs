//! Offset headers: QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15),
//! SEARCH_OFFSET_BY_TIMESTAMP (29), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31).

use std::fmt;

use super::HeaderValue;
use crate::error::Result;

command_header! {
    /// QUERY_CONSUMER_OFFSET (14) request header (Java
    /// `QueryConsumerOffsetRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct QueryConsumerOffsetRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// Topic.
        pub topic: String => "topic",
        /// Queue id.
        pub queue_id: i32 => "queueId",
        /// 5.x: whether the broker may answer 0 for a group without an
        /// offset; the Java client leaves it unset.
        pub set_zero_if_not_found: Option<bool> => "setZeroIfNotFound",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// Response header with one `offset`: the answer of
    /// QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET and
    /// SEARCH_OFFSET_BY_TIMESTAMP (Java `QueryConsumerOffsetResponseHeader`,
    /// `GetMaxOffsetResponseHeader`, `GetMinOffsetResponseHeader`,
    /// `SearchOffsetResponseHeader`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct OffsetResponseHeader {
        /// The offset.
        pub offset: i64 => "offset",
    }
}

/// QUERY_CONSUMER_OFFSET response header (same shape as the others).
pub type QueryConsumerOffsetResponseHeader = OffsetResponseHeader;

command_header! {
    /// UPDATE_CONSUMER_OFFSET (15) request header (Java
    /// `UpdateConsumerOffsetRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct UpdateConsumerOffsetRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// Topic.
        pub topic: String => "topic",
        /// Queue id.
        pub queue_id: i32 => "queueId",
        /// Offset to store.
        pub commit_offset: i64 => "commitOffset",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// GET_MAX_OFFSET (30) request header (Java `GetMaxOffsetRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GetMaxOffsetRequestHeader {
        /// Topic.
        pub topic: String => "topic",
        /// Queue id.
        pub queue_id: i32 => "queueId",
        /// Committed max offset; the Java client always sends `true`.
        pub committed: Option<bool> => "committed",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// GET_MIN_OFFSET (31) request header (Java `GetMinOffsetRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GetMinOffsetRequestHeader {
        /// Topic.
        pub topic: String => "topic",
        /// Queue id.
        pub queue_id: i32 => "queueId",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

/// Which offset SEARCH_OFFSET_BY_TIMESTAMP returns when several messages
/// share the timestamp (Java `BoundaryType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BoundaryType {
    /// The first matching offset (`LOWER`, the broker's default).
    #[default]
    Lower,
    /// The last matching offset (`UPPER`).
    Upper,
}

impl BoundaryType {
    /// The Java enum name.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundaryType::Lower => "LOWER",
            BoundaryType::Upper => "UPPER",
        }
    }

    /// Parses like the broker: `UPPER` in any case is [`BoundaryType::Upper`],
    /// anything else [`BoundaryType::Lower`].
    pub fn parse_lenient(text: &str) -> Self {
        if text.trim().eq_ignore_ascii_case("UPPER") {
            BoundaryType::Upper
        } else {
            BoundaryType::Lower
        }
    }
}

impl fmt::Display for BoundaryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl HeaderValue for BoundaryType {
    fn to_wire(&self) -> String {
        self.as_str().to_owned()
    }

    fn write_json(&self, dst: &mut bytes::BytesMut) {
        crate::codec::put_json_str(dst, self.as_str());
    }

    fn from_wire(_key: &'static str, text: &str) -> Result<Self> {
        Ok(BoundaryType::parse_lenient(text))
    }
}

command_header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP (29) request header (Java
    /// `SearchOffsetRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct SearchOffsetRequestHeader {
        /// Topic.
        pub topic: String => "topic",
        /// Queue id.
        pub queue_id: i32 => "queueId",
        /// Timestamp, ms since the Unix epoch.
        pub timestamp: i64 => "timestamp",
        /// Boundary; absent means [`BoundaryType::Lower`].
        pub boundary_type: Option<BoundaryType> => "boundaryType",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{CommandHeader, ExtFields};

    #[test]
    fn boundary_type_parses_like_the_broker() {
        assert_eq!(BoundaryType::parse_lenient("upper"), BoundaryType::Upper);
        assert_eq!(BoundaryType::parse_lenient("UPPER"), BoundaryType::Upper);
        assert_eq!(BoundaryType::parse_lenient("lower"), BoundaryType::Lower);
        assert_eq!(BoundaryType::parse_lenient("middle"), BoundaryType::Lower);
    }

    #[test]
    fn search_offset_wire_form() {
        let h = SearchOffsetRequestHeader {
            topic: "T".into(),
            queue_id: 1,
            timestamp: 5,
            boundary_type: Some(BoundaryType::Upper),
            broker_name: None,
        };
        let f = h.to_ext_fields();
        assert_eq!(f["boundaryType"], "UPPER");
        assert_eq!(f.len(), 4);
    }

    #[test]
    fn offset_response() {
        let mut f = ExtFields::new();
        f.insert("offset".into(), "-1".into());
        assert_eq!(OffsetResponseHeader::read_from(&f).unwrap().offset, -1);
        assert!(OffsetResponseHeader::read_from(&ExtFields::new()).is_err());
    }
}
