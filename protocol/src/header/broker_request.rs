//! Headers of requests the broker sends to the client: codes 39, 40, 220,
//! 221, 307 and 309.

command_header! {
    /// NOTIFY_CONSUMER_IDS_CHANGED (40, oneway) header (Java
    /// `NotifyConsumerIdsChangedRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct NotifyConsumerIdsChangedRequestHeader {
        /// The group whose membership changed.
        pub consumer_group: String => "consumerGroup",
    }
}

command_header! {
    /// RESET_CONSUMER_CLIENT_OFFSET (220, oneway) header (Java
    /// `ResetOffsetRequestHeader`); the offsets are in the body.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ResetOffsetRequestHeader {
        /// Topic.
        pub topic: String => "topic",
        /// Consumer group.
        pub group: String => "group",
        /// Reset timestamp, ms (-1 = max offset).
        pub timestamp: i64 => "timestamp",
        /// Force the reset even when the current offset is smaller.
        pub is_force: bool => "isForce",
        /// Queue id (5.x sends -1 = all queues).
        pub queue_id: Option<i32> => "queueId",
        /// Explicit offset (5.x, normally absent).
        pub offset: Option<i64> => "offset",
    }
}

command_header! {
    /// GET_CONSUMER_RUNNING_INFO (307) header (Java
    /// `GetConsumerRunningInfoRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GetConsumerRunningInfoRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// The client asked.
        pub client_id: String => "clientId",
        /// Whether a thread dump is wanted.
        pub jstack_enable: Option<bool> => "jstackEnable",
    }
}

command_header! {
    /// CONSUME_MESSAGE_DIRECTLY (309) header (Java
    /// `ConsumeMessageDirectlyResultRequestHeader`); the message is in the
    /// body.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ConsumeMessageDirectlyResultRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// The client asked.
        pub client_id: Option<String> => "clientId",
        /// Message id.
        pub msg_id: Option<String> => "msgId",
        /// Broker name.
        pub broker_name: Option<String> => "brokerName",
        /// Topic.
        pub topic: Option<String> => "topic",
        /// Topic sysFlag.
        pub topic_sys_flag: Option<i32> => "topicSysFlag",
        /// Group sysFlag.
        pub group_sys_flag: Option<i32> => "groupSysFlag",
    }
}

command_header! {
    /// CHECK_TRANSACTION_STATE (39, oneway) header (Java
    /// `CheckTransactionStateRequestHeader`); the half message is in the
    /// body.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct CheckTransactionStateRequestHeader {
        /// Topic.
        pub topic: Option<String> => "topic",
        /// Queue offset of the half message.
        pub tran_state_table_offset: i64 => "tranStateTableOffset",
        /// Commit-log offset of the half message.
        pub commit_log_offset: i64 => "commitLogOffset",
        /// Message id.
        pub msg_id: Option<String> => "msgId",
        /// Transaction id.
        pub transaction_id: Option<String> => "transactionId",
        /// Offset message id.
        pub offset_msg_id: Option<String> => "offsetMsgId",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// GET_CONSUMER_STATUS_FROM_CLIENT (221, deprecated) header (Java
    /// `GetConsumerStatusRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GetConsumerStatusRequestHeader {
        /// Topic.
        pub topic: String => "topic",
        /// Consumer group.
        pub group: String => "group",
        /// Client address filter.
        pub client_addr: Option<String> => "clientAddr",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{CommandHeader, ExtFields};

    #[test]
    fn reset_offset_as_a_4_9_broker_sends_it() {
        let mut f = ExtFields::new();
        for (k, v) in [
            ("topic", "T"),
            ("group", "G"),
            ("timestamp", "1727000000000"),
            ("isForce", "false"),
        ] {
            f.insert(k.into(), v.into());
        }
        let h = ResetOffsetRequestHeader::read_from(&f).unwrap();
        assert_eq!(h.timestamp, 1_727_000_000_000);
        assert!(!h.is_force);
        assert_eq!(h.queue_id, None);
    }
}
