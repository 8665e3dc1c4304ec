//! Message lookup headers: QUERY_MESSAGE (12) by key or unique key, and
//! VIEW_MESSAGE_BY_ID (33) by commit-log offset.

/// Ext field that marks a QUERY_MESSAGE as a unique-key (`UNIQ_KEY`)
/// lookup (Java `MixAll.UNIQUE_MSG_QUERY_FLAG`); value `"true"` or
/// `"false"`.
pub const UNIQUE_KEY_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

command_header! {
    /// QUERY_MESSAGE (12) request header (Java
    /// `QueryMessageRequestHeader`): messages of `topic` indexed under
    /// `key` and stored between the two timestamps (ms since the epoch).
    /// For a unique-key query the broker replaces `max_num` with its own
    /// `defaultQueryMaxNum`.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct QueryMessageRequestHeader {
        /// Topic.
        pub topic: String => "topic",
        /// The key (a `KEYS` entry, or a `UNIQ_KEY`).
        pub key: String => "key",
        /// Most messages to return.
        pub max_num: i32 => "maxNum",
        /// Earliest store time, ms.
        pub begin_timestamp: i64 => "beginTimestamp",
        /// Latest store time, ms.
        pub end_timestamp: i64 => "endTimestamp",
    }
}

command_header! {
    /// QUERY_MESSAGE response header (Java `QueryMessageResponseHeader`);
    /// the stored messages are the body.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct QueryMessageResponseHeader {
        /// When the index was last updated, ms.
        pub index_last_update_timestamp: i64 => "indexLastUpdateTimestamp",
        /// Commit-log offset the index covers.
        pub index_last_update_phyoffset: i64 => "indexLastUpdatePhyoffset",
    }
}

command_header! {
    /// VIEW_MESSAGE_BY_ID (33) request header (Java
    /// `ViewMessageRequestHeader`), sent to the broker that stored the
    /// message; the answer's body is that one stored message.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ViewMessageRequestHeader {
        /// Commit-log offset (from the offset message id).
        pub offset: i64 => "offset",
        /// 5.x: the topic, checked by the broker (older brokers ignore it).
        pub topic: Option<String> => "topic",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn wire_names_match_java() {
        let f = QueryMessageRequestHeader {
            topic: "T".into(),
            key: "k".into(),
            max_num: 32,
            begin_timestamp: 1,
            end_timestamp: i64::MAX,
        }
        .to_ext_fields();
        assert_eq!(f["maxNum"], "32");
        assert_eq!(f["beginTimestamp"], "1");
        assert_eq!(f["endTimestamp"], i64::MAX.to_string());
        let mut answer = crate::header::ExtFields::new();
        answer.insert("indexLastUpdateTimestamp".into(), "5".into());
        answer.insert("indexLastUpdatePhyoffset".into(), "9".into());
        let h = QueryMessageResponseHeader::read_from(&answer).unwrap();
        assert_eq!(h.index_last_update_phyoffset, 9);
        let f = ViewMessageRequestHeader {
            offset: 77,
            topic: None,
        }
        .to_ext_fields();
        assert_eq!(f["offset"], "77");
        assert_eq!(f.len(), 1);
    }
}
