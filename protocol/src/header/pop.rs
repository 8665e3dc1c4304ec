//! POP_MESSAGE (200050), ACK_MESSAGE (200051) and
//! CHANGE_MESSAGE_INVISIBLETIME (200053) headers (5.x brokers).

command_header! {
    /// POP_MESSAGE request header (Java `PopMessageRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct PopMessageRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// Topic.
        pub topic: String => "topic",
        /// Queue id; -1 lets the broker pick among all queues.
        pub queue_id: i32 => "queueId",
        /// Maximum number of messages (the broker caps it at 32).
        pub max_msg_nums: i32 => "maxMsgNums",
        /// How long (ms) the popped messages stay hidden from other pops.
        pub invisible_time: i64 => "invisibleTime",
        /// How long (ms) the broker may hold the request when nothing is
        /// ready (long polling); Java sends 15000.
        pub poll_time: i64 => "pollTime",
        /// When the request was made (ms since the epoch); the broker
        /// drops requests older than `pollTime` + 0.5 s.
        pub born_time: i64 => "bornTime",
        /// Where a group without an offset starts: 0 the queue's min offset,
        /// 1 its max (Java `ConsumeInitMode`).
        pub init_mode: i32 => "initMode",
        /// `TAG` or `SQL92`.
        pub exp_type: Option<String> => "expType",
        /// The filter expression.
        pub exp: Option<String> => "exp",
        /// Orderly pop: one batch per queue in flight at a time.
        pub order: Option<bool> => "order",
        /// A retry of a pop that got no answer (orderly pop).
        pub attempt_id: Option<String> => "attemptId",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// POP_MESSAGE response header (Java `PopMessageResponseHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct PopMessageResponseHeader {
        /// When the broker popped the batch (ms since the epoch).
        pub pop_time: i64 => "popTime",
        /// The invisible time granted (ms).
        pub invisible_time: i64 => "invisibleTime",
        /// The revive queue holding the batch's checkpoint.
        pub revive_qid: i32 => "reviveQid",
        /// Messages left to pop.
        pub rest_num: i64 => "restNum",
        /// `;`-separated `retryFlag queueId startOffset` entries.
        pub start_offset_info: Option<String> => "startOffsetInfo",
        /// `;`-separated `retryFlag queueId offset,offset,...` entries.
        pub msg_offset_info: Option<String> => "msgOffsetInfo",
        /// Orderly pop: `;`-separated `retryFlag queueId count` (or
        /// `retryFlag queueId offset count`) entries.
        pub order_count_info: Option<String> => "orderCountInfo",
    }
}

command_header! {
    /// ACK_MESSAGE request header (Java `AckMessageRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct AckMessageRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// The topic the message was popped from (a retry topic for a
        /// redelivered message).
        pub topic: String => "topic",
        /// Queue id the message was popped from.
        pub queue_id: i32 => "queueId",
        /// The message's `POP_CK` extra info.
        pub extra_info: String => "extraInfo",
        /// The message's queue offset.
        pub offset: i64 => "offset",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME request header (Java
    /// `ChangeInvisibleTimeRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ChangeInvisibleTimeRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// The topic the message was popped from.
        pub topic: String => "topic",
        /// Queue id the message was popped from.
        pub queue_id: i32 => "queueId",
        /// The message's current `POP_CK` extra info.
        pub extra_info: String => "extraInfo",
        /// The message's queue offset.
        pub offset: i64 => "offset",
        /// The new invisible time (ms), counted from now.
        pub invisible_time: i64 => "invisibleTime",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME response header (Java
    /// `ChangeInvisibleTimeResponseHeader`): the message's new checkpoint.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ChangeInvisibleTimeResponseHeader {
        /// The new pop time (ms since the epoch).
        pub pop_time: i64 => "popTime",
        /// The new invisible time (ms).
        pub invisible_time: i64 => "invisibleTime",
        /// The revive queue of the new checkpoint.
        pub revive_qid: i32 => "reviveQid",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{CommandHeader, ExtFields};
    use crate::{RemotingCommand, RequestCode};

    #[test]
    fn pop_request_wire_keys() {
        let h = PopMessageRequestHeader {
            consumer_group: "G".into(),
            topic: "T".into(),
            queue_id: -1,
            max_msg_nums: 32,
            invisible_time: 30_000,
            poll_time: 15_000,
            born_time: 1_700_000_000_000,
            init_mode: 1,
            exp_type: Some("TAG".into()),
            exp: Some("*".into()),
            order: Some(false),
            attempt_id: None,
            broker_name: Some("broker-a".into()),
        };
        let cmd = RemotingCommand::request(RequestCode::POP_MESSAGE, &h);
        assert_eq!(cmd.code, 200_050);
        for (k, v) in [
            ("consumerGroup", "G"),
            ("topic", "T"),
            ("queueId", "-1"),
            ("maxMsgNums", "32"),
            ("invisibleTime", "30000"),
            ("pollTime", "15000"),
            ("bornTime", "1700000000000"),
            ("initMode", "1"),
            ("expType", "TAG"),
            ("exp", "*"),
            ("order", "false"),
            ("bname", "broker-a"),
        ] {
            assert_eq!(cmd.ext_field(k), Some(v), "{k}");
        }
        assert_eq!(cmd.ext_field("attemptId"), None);
        assert_eq!(cmd.decode_header::<PopMessageRequestHeader>().unwrap(), h);
    }

    #[test]
    fn pop_response_from_broker_fields() {
        let mut f = ExtFields::new();
        for (k, v) in [
            ("popTime", "1700000000123"),
            ("invisibleTime", "60000"),
            ("reviveQid", "3"),
            ("restNum", "0"),
            ("startOffsetInfo", "0 1 5;1 0 2"),
            ("msgOffsetInfo", "0 1 5,6;1 0 2"),
        ] {
            f.insert(k.into(), v.into());
        }
        let h = PopMessageResponseHeader::read_from(&f).unwrap();
        assert_eq!(h.pop_time, 1_700_000_000_123);
        assert_eq!(h.revive_qid, 3);
        assert_eq!(h.start_offset_info.as_deref(), Some("0 1 5;1 0 2"));
        assert_eq!(h.order_count_info, None);
        f.remove("reviveQid");
        assert!(PopMessageResponseHeader::read_from(&f).is_err());
    }

    #[test]
    fn ack_and_change_invisible_wire_keys() {
        let ack = AckMessageRequestHeader {
            consumer_group: "G".into(),
            topic: "%RETRY%G_T".into(),
            queue_id: 0,
            extra_info: "5 1 2 3 1 broker-a 0 5".into(),
            offset: 5,
            broker_name: None,
        };
        let f = ack.to_ext_fields();
        assert_eq!(f["extraInfo"], "5 1 2 3 1 broker-a 0 5");
        assert_eq!(f["offset"], "5");
        assert_eq!(f["topic"], "%RETRY%G_T");
        assert_eq!(AckMessageRequestHeader::read_from(&f).unwrap(), ack);
        let change = ChangeInvisibleTimeRequestHeader {
            consumer_group: "G".into(),
            topic: "T".into(),
            queue_id: 2,
            extra_info: "x".into(),
            offset: 9,
            invisible_time: 10_000,
            broker_name: Some("b".into()),
        };
        let f = change.to_ext_fields();
        assert_eq!(f["invisibleTime"], "10000");
        assert_eq!(f["queueId"], "2");
        let mut r = ExtFields::new();
        r.insert("popTime".into(), "10".into());
        r.insert("invisibleTime".into(), "20".into());
        r.insert("reviveQid".into(), "1".into());
        let h = ChangeInvisibleTimeResponseHeader::read_from(&r).unwrap();
        assert_eq!((h.pop_time, h.invisible_time, h.revive_qid), (10, 20, 1));
    }
}
