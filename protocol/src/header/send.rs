//! Producer headers: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310),
//! SEND_BATCH_MESSAGE (320) and END_TRANSACTION (37).

command_header! {
    /// SEND_MESSAGE (10) request header with the long (V1) key names (Java
    /// `SendMessageRequestHeader`).
    ///
    /// SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE carry the same fields under
    /// one-letter keys: convert with [`SendMessageRequestHeaderV2::from`].
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct SendMessageRequestHeader {
        /// Producer group.
        pub producer_group: String => "producerGroup",
        /// Topic the message is sent to.
        pub topic: String => "topic",
        /// Template topic for auto-creation; the Java client sends `TBW102`.
        pub default_topic: String => "defaultTopic",
        /// Queue count for an auto-created topic; the Java client sends 4.
        pub default_topic_queue_nums: i32 => "defaultTopicQueueNums",
        /// Queue the message is written to.
        pub queue_id: i32 => "queueId",
        /// Message sysFlag bits (compression, transaction type).
        pub sys_flag: i32 => "sysFlag",
        /// Born time, ms since the Unix epoch.
        pub born_timestamp: i64 => "bornTimestamp",
        /// The user's message flag (`Message.flag`).
        pub flag: i32 => "flag",
        /// The encoded properties string.
        pub properties: Option<String> => "properties",
        /// Reconsume count (retry topics); the Java client sends 0.
        pub reconsume_times: Option<i32> => "reconsumeTimes",
        /// Unit mode; the Java client sends `false`.
        pub unit_mode: Option<bool> => "unitMode",
        /// Maximum reconsume count (retry topics).
        pub max_reconsume_times: Option<i32> => "maxReconsumeTimes",
        /// `true` for a batch.
        pub batch: Option<bool> => "batch",
        /// Broker name of the queue (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

command_header! {
    /// SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320) request header:
    /// the fields of [`SendMessageRequestHeader`] under one-letter keys
    /// `a`..`n` (Java `SendMessageRequestHeaderV2`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct SendMessageRequestHeaderV2 {
        /// Producer group.
        pub producer_group: String => "a",
        /// Topic the message is sent to.
        pub topic: String => "b",
        /// Template topic for auto-creation; the Java client sends `TBW102`.
        pub default_topic: String => "c",
        /// Queue count for an auto-created topic; the Java client sends 4.
        pub default_topic_queue_nums: i32 => "d",
        /// Queue the message is written to.
        pub queue_id: i32 => "e",
        /// Message sysFlag bits (compression, transaction type).
        pub sys_flag: i32 => "f",
        /// Born time, ms since the Unix epoch.
        pub born_timestamp: i64 => "g",
        /// The user's message flag (`Message.flag`).
        pub flag: i32 => "h",
        /// The encoded properties string.
        pub properties: Option<String> => "i",
        /// Reconsume count (retry topics).
        pub reconsume_times: Option<i32> => "j",
        /// Unit mode.
        pub unit_mode: Option<bool> => "k",
        /// Maximum reconsume count (retry topics).
        pub max_reconsume_times: Option<i32> => "l",
        /// `true` for a batch (SEND_BATCH_MESSAGE).
        pub batch: Option<bool> => "m",
        /// Broker name of the queue (5.x).
        pub broker_name: Option<String> => "n",
    }
}

macro_rules! convert_send_headers {
    ($from:ident => $to:ident) => {
        impl From<$from> for $to {
            fn from(h: $from) -> Self {
                $to {
                    producer_group: h.producer_group,
                    topic: h.topic,
                    default_topic: h.default_topic,
                    default_topic_queue_nums: h.default_topic_queue_nums,
                    queue_id: h.queue_id,
                    sys_flag: h.sys_flag,
                    born_timestamp: h.born_timestamp,
                    flag: h.flag,
                    properties: h.properties,
                    reconsume_times: h.reconsume_times,
                    unit_mode: h.unit_mode,
                    max_reconsume_times: h.max_reconsume_times,
                    batch: h.batch,
                    broker_name: h.broker_name,
                }
            }
        }
    };
}

convert_send_headers!(SendMessageRequestHeader => SendMessageRequestHeaderV2);
convert_send_headers!(SendMessageRequestHeaderV2 => SendMessageRequestHeader);

command_header! {
    /// Response header of the send requests (Java
    /// `SendMessageResponseHeader`), present on SUCCESS and on the "stored
    /// but" codes 10, 11 and 12.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct SendMessageResponseHeader {
        /// Offset message id of the stored message; for a batch the offset
        /// ids joined with `,`. Not the id the application sees (that is the
        /// `UNIQ_KEY` property).
        pub msg_id: String => "msgId",
        /// Queue actually written.
        pub queue_id: i32 => "queueId",
        /// Consume-queue offset of the (first) message.
        pub queue_offset: i64 => "queueOffset",
        /// Transaction id (transactional sends).
        pub transaction_id: Option<String> => "transactionId",
        /// Batch unique id (5.x auto-batch only).
        pub batch_uniq_id: Option<String> => "batchUniqId",
        /// Recall handle (5.3+).
        pub recall_handle: Option<String> => "recallHandle",
        /// Region id added by the broker (default `DefaultRegion`).
        pub msg_region: Option<String> => "MSG_REGION",
        /// Whether tracing is on, added by the broker.
        pub trace_on: Option<bool> => "TRACE_ON",
    }
}

command_header! {
    /// END_TRANSACTION (37) request header, sent oneway (Java
    /// `EndTransactionRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct EndTransactionRequestHeader {
        /// Producer group.
        pub producer_group: String => "producerGroup",
        /// The send response's `queueOffset`.
        pub tran_state_table_offset: i64 => "tranStateTableOffset",
        /// Commit-log offset, from the send response's offset message id.
        pub commit_log_offset: i64 => "commitLogOffset",
        /// [`Self::NOT_TYPE`], [`Self::COMMIT`] or [`Self::ROLLBACK`].
        pub commit_or_rollback: i32 => "commitOrRollback",
        /// `true` when answering a CHECK_TRANSACTION_STATE.
        pub from_transaction_check: Option<bool> => "fromTransactionCheck",
        /// The message id.
        pub msg_id: String => "msgId",
        /// Transaction id.
        pub transaction_id: Option<String> => "transactionId",
        /// Topic.
        pub topic: Option<String> => "topic",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

impl EndTransactionRequestHeader {
    /// `commitOrRollback`: state unknown (Java `TRANSACTION_NOT_TYPE`).
    pub const NOT_TYPE: i32 = 0;
    /// `commitOrRollback`: commit (Java `TRANSACTION_COMMIT_TYPE`).
    pub const COMMIT: i32 = 0x2 << 2;
    /// `commitOrRollback`: roll back (Java `TRANSACTION_ROLLBACK_TYPE`).
    pub const ROLLBACK: i32 = 0x3 << 2;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    fn sample() -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: "PG".into(),
            topic: "T1".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: 3,
            sys_flag: 0,
            born_timestamp: 1_727_000_000_000,
            flag: 0,
            properties: Some("TAGS\u{1}a\u{2}".into()),
            reconsume_times: Some(0),
            unit_mode: Some(false),
            max_reconsume_times: None,
            batch: Some(false),
            broker_name: Some("broker-a".into()),
        }
    }

    #[test]
    fn v1_uses_java_names() {
        let f = sample().to_ext_fields();
        assert_eq!(f["producerGroup"], "PG");
        assert_eq!(f["defaultTopicQueueNums"], "4");
        assert_eq!(f["bornTimestamp"], "1727000000000");
        assert_eq!(f["unitMode"], "false");
        assert_eq!(f["bname"], "broker-a");
        assert!(!f.contains_key("maxReconsumeTimes"));
        assert_eq!(f.len(), 13);
    }

    #[test]
    fn v2_uses_one_letter_names() {
        let v2 = SendMessageRequestHeaderV2::from(sample());
        let f = v2.to_ext_fields();
        assert_eq!(f["a"], "PG");
        assert_eq!(f["b"], "T1");
        assert_eq!(f["c"], "TBW102");
        assert_eq!(f["d"], "4");
        assert_eq!(f["e"], "3");
        assert_eq!(f["g"], "1727000000000");
        assert_eq!(f["n"], "broker-a");
        assert!(!f.contains_key("l"));
        assert_eq!(SendMessageRequestHeader::from(v2), sample());
    }

    #[test]
    fn missing_required_field_is_an_error() {
        let mut f = sample().to_ext_fields();
        f.remove("queueId");
        let err = SendMessageRequestHeader::read_from(&f).unwrap_err();
        assert!(matches!(
            err,
            crate::Error::MissingField { field: "queueId" }
        ));
    }

    #[test]
    fn bad_number_is_an_error() {
        let mut f = sample().to_ext_fields();
        f.insert("queueId".into(), "x1".into());
        let err = SendMessageRequestHeader::read_from(&f).unwrap_err();
        assert!(matches!(
            err,
            crate::Error::InvalidField {
                field: "queueId",
                ..
            }
        ));
    }

    #[test]
    fn booleans_parse_like_java() {
        let mut f = sample().to_ext_fields();
        f.insert("batch".into(), "TRUE".into());
        f.insert("unitMode".into(), "yes".into());
        let h = SendMessageRequestHeader::read_from(&f).unwrap();
        assert_eq!(h.batch, Some(true));
        assert_eq!(h.unit_mode, Some(false));
    }

    #[test]
    fn transaction_constants() {
        assert_eq!(EndTransactionRequestHeader::COMMIT, 8);
        assert_eq!(EndTransactionRequestHeader::ROLLBACK, 12);
    }
}
