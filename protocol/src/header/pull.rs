//! PULL_MESSAGE (11) / LITE_PULL_MESSAGE (361) headers.

/// Bits of [`PullMessageRequestHeader::sys_flag`] (Java `PullSysFlag`).
pub mod pull_sys_flag {
    /// The broker stores `commitOffset` as the group's offset for the queue.
    pub const COMMIT_OFFSET: i32 = 0x1;
    /// The broker may hold the request (long polling).
    pub const SUSPEND: i32 = 0x1 << 1;
    /// `subscription`/`expressionType` in the request are authoritative.
    pub const SUBSCRIPTION: i32 = 0x1 << 2;
    /// Obsolete filter-server mode; never set.
    pub const CLASS_FILTER: i32 = 0x1 << 3;
    /// Lite pull: the Java client then sends LITE_PULL_MESSAGE (361).
    pub const LITE_PULL: i32 = 0x1 << 4;

    /// Builds a sysFlag from its parts (Java `PullSysFlag.buildSysFlag`,
    /// plus the lite-pull bit).
    pub fn build(
        commit_offset: bool,
        suspend: bool,
        subscription: bool,
        class_filter: bool,
        lite_pull: bool,
    ) -> i32 {
        let mut flag = 0;
        if commit_offset {
            flag |= COMMIT_OFFSET;
        }
        if suspend {
            flag |= SUSPEND;
        }
        if subscription {
            flag |= SUBSCRIPTION;
        }
        if class_filter {
            flag |= CLASS_FILTER;
        }
        if lite_pull {
            flag |= LITE_PULL;
        }
        flag
    }

    /// `flag` without the COMMIT_OFFSET bit (used when pulling from a slave).
    pub fn clear_commit_offset(flag: i32) -> i32 {
        flag & !COMMIT_OFFSET
    }
}

command_header! {
    /// PULL_MESSAGE (11) request header (Java `PullMessageRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct PullMessageRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// Queue topic.
        pub topic: String => "topic",
        /// Queue id.
        pub queue_id: i32 => "queueId",
        /// Next offset to pull.
        pub queue_offset: i64 => "queueOffset",
        /// Maximum number of messages (Java `pullBatchSize`, default 32).
        pub max_msg_nums: i32 => "maxMsgNums",
        /// [`pull_sys_flag`] bits.
        pub sys_flag: i32 => "sysFlag",
        /// In-memory consume offset of the queue (clustering), else 0.
        pub commit_offset: i64 => "commitOffset",
        /// How long the broker may hold the request; Java sends 15000.
        pub suspend_timeout_millis: i64 => "suspendTimeoutMillis",
        /// Subscription expression (with the SUBSCRIPTION bit).
        pub subscription: Option<String> => "subscription",
        /// The subscription's version.
        pub sub_version: i64 => "subVersion",
        /// `TAG` or `SQL92`.
        pub expression_type: Option<String> => "expressionType",
        /// Java `pullBatchSizeInBytes` (262144).
        pub max_msg_bytes: Option<i32> => "maxMsgBytes",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// PULL_MESSAGE response header (Java `PullMessageResponseHeader`),
    /// valid on codes 0, 19, 20 and 21.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct PullMessageResponseHeader {
        /// Broker id to pull this queue from next time (0 = master).
        pub suggest_which_broker_id: i64 => "suggestWhichBrokerId",
        /// Offset for the next pull.
        pub next_begin_offset: i64 => "nextBeginOffset",
        /// Queue min offset.
        pub min_offset: i64 => "minOffset",
        /// Queue max offset (next offset to be written).
        pub max_offset: i64 => "maxOffset",
        /// 5.x static topics: add to every decoded message's queue offset.
        pub offset_delta: Option<i64> => "offsetDelta",
        /// 5.x topic sysFlag.
        pub topic_sys_flag: Option<i32> => "topicSysFlag",
        /// 5.x group sysFlag.
        pub group_sys_flag: Option<i32> => "groupSysFlag",
        /// 5.x, on NO_PERMISSION.
        pub forbidden_type: Option<i32> => "forbiddenType",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{CommandHeader, ExtFields};

    #[test]
    fn sys_flag_bits() {
        assert_eq!(pull_sys_flag::build(true, true, false, false, false), 3);
        assert_eq!(pull_sys_flag::build(false, true, true, false, false), 6);
        assert_eq!(pull_sys_flag::build(true, true, true, true, true), 31);
        assert_eq!(pull_sys_flag::clear_commit_offset(3), 2);
    }

    #[test]
    fn response_from_broker_fields() {
        let mut f = ExtFields::new();
        for (k, v) in [
            ("suggestWhichBrokerId", "0"),
            ("nextBeginOffset", "32"),
            ("minOffset", "0"),
            ("maxOffset", "100"),
            ("topicSysFlag", "0"),
            ("groupSysFlag", "0"),
        ] {
            f.insert(k.into(), v.into());
        }
        let h = PullMessageResponseHeader::read_from(&f).unwrap();
        assert_eq!(h.next_begin_offset, 32);
        assert_eq!(h.max_offset, 100);
        assert_eq!(h.offset_delta, None);
        assert_eq!(h.topic_sys_flag, Some(0));
    }
}
