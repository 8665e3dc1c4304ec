//! RECALL_MESSAGE (370, 5.3.2+) and the broker's PUSH_REPLY_MESSAGE_TO_CLIENT
//! (326) of request-reply.

command_header! {
    /// RECALL_MESSAGE (370) request header (Java `RecallMessageRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct RecallMessageRequestHeader {
        /// Producer group (the broker writes it into the recall record).
        pub producer_group: String => "producerGroup",
        /// The topic the message was sent to; must be the handle's.
        pub topic: String => "topic",
        /// The recall handle of the send result.
        pub recall_handle: String => "recallHandle",
        /// The broker of the handle.
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// RECALL_MESSAGE response header (Java `RecallMessageResponseHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct RecallMessageResponseHeader {
        /// The recalled message's id (its `UNIQ_KEY`).
        pub msg_id: Option<String> => "msgId",
    }
}

command_header! {
    /// PUSH_REPLY_MESSAGE_TO_CLIENT (326) request header, broker → client
    /// (Java `ReplyMessageRequestHeader`): the reply a replier sent, pushed
    /// to the requester; the body is the reply's body (compressed when the
    /// sysFlag says so).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ReplyMessageRequestHeader {
        /// The replier's producer group.
        pub producer_group: Option<String> => "producerGroup",
        /// The reply topic (`<cluster>_REPLY_TOPIC`).
        pub topic: String => "topic",
        /// The replier's `defaultTopic`.
        pub default_topic: Option<String> => "defaultTopic",
        /// The replier's `defaultTopicQueueNums`.
        pub default_topic_queue_nums: Option<i32> => "defaultTopicQueueNums",
        /// The queue of the reply topic.
        pub queue_id: i32 => "queueId",
        /// The reply's sysFlag (compression bits).
        pub sys_flag: i32 => "sysFlag",
        /// When the replier made the reply, ms since the epoch.
        pub born_timestamp: i64 => "bornTimestamp",
        /// The reply's user flag.
        pub flag: i32 => "flag",
        /// The reply's properties string (with `PUSH_REPLY_TIME`).
        pub properties: Option<String> => "properties",
        /// Reconsume times.
        pub reconsume_times: Option<i32> => "reconsumeTimes",
        /// Unit mode.
        pub unit_mode: Option<bool> => "unitMode",
        /// The replier's address as the broker saw it (`ip:port`).
        pub born_host: Option<String> => "bornHost",
        /// The broker's address (`ip:port`).
        pub store_host: Option<String> => "storeHost",
        /// When the broker pushed it, ms since the epoch.
        pub store_timestamp: Option<i64> => "storeTimestamp",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn recall_uses_java_names() {
        let h = RecallMessageRequestHeader {
            producer_group: "PG".into(),
            topic: "T".into(),
            recall_handle: "aGFuZGxl".into(),
            broker_name: Some("broker-a".into()),
        };
        let f = h.to_ext_fields();
        assert_eq!(f["producerGroup"], "PG");
        assert_eq!(f["recallHandle"], "aGFuZGxl");
        assert_eq!(f["bname"], "broker-a");
        assert_eq!(RecallMessageRequestHeader::read_from(&f).unwrap(), h);
    }

    #[test]
    fn push_reply_header_reads_what_the_broker_sends() {
        // The fields of a 5.5.0 broker's PUSH_REPLY_MESSAGE_TO_CLIENT.
        let mut f = crate::header::ExtFields::default();
        for (k, v) in [
            ("producerGroup", "PG"),
            ("topic", "DefaultCluster_REPLY_TOPIC"),
            ("defaultTopic", "TBW102"),
            ("defaultTopicQueueNums", "4"),
            ("queueId", "1"),
            ("sysFlag", "0"),
            ("bornTimestamp", "1700000000000"),
            ("flag", "0"),
            ("properties", "CORRELATION_ID\u{1}c\u{2}"),
            ("reconsumeTimes", "0"),
            ("unitMode", "false"),
            ("bornHost", "127.0.0.1:50000"),
            ("storeHost", "127.0.0.1:10911"),
            ("storeTimestamp", "1700000000005"),
        ] {
            f.insert(k.into(), v.into());
        }
        let h = ReplyMessageRequestHeader::read_from(&f).unwrap();
        assert_eq!(h.topic, "DefaultCluster_REPLY_TOPIC");
        assert_eq!(h.queue_id, 1);
        assert_eq!(h.store_timestamp, Some(1_700_000_000_005));
        assert_eq!(h.born_host.as_deref(), Some("127.0.0.1:50000"));
    }
}
