//! Client membership and consumer headers: UNREGISTER_CLIENT (35),
//! CONSUMER_SEND_MSG_BACK (36), GET_CONSUMER_LIST_BY_GROUP (38).

command_header! {
    /// UNREGISTER_CLIENT (35) request header (Java
    /// `UnregisterClientRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct UnregisterClientRequestHeader {
        /// Client id (note the capital `ID` on the wire).
        pub client_id: String => "clientID",
        /// Producer group being shut down.
        pub producer_group: Option<String> => "producerGroup",
        /// Consumer group being shut down.
        pub consumer_group: Option<String> => "consumerGroup",
    }
}

command_header! {
    /// GET_CONSUMER_LIST_BY_GROUP (38) request header (Java
    /// `GetConsumerListByGroupRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GetConsumerListByGroupRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
    }
}

command_header! {
    /// CONSUMER_SEND_MSG_BACK (36) request header (Java
    /// `ConsumerSendMsgBackRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct ConsumerSendMsgBackRequestHeader {
        /// The message's commit-log offset.
        pub offset: i64 => "offset",
        /// Consumer group.
        pub group: String => "group",
        /// Delay level; 0 lets the broker pick 3 + reconsumeTimes, < 0 sends
        /// the message to the DLQ.
        pub delay_level: i32 => "delayLevel",
        /// Message id as the application sees it.
        pub origin_msg_id: Option<String> => "originMsgId",
        /// The message's original topic.
        pub origin_topic: Option<String> => "originTopic",
        /// Unit mode; the Java client always sends `false`.
        pub unit_mode: Option<bool> => "unitMode",
        /// Resolved maximum reconsume count (never -1).
        pub max_reconsume_times: Option<i32> => "maxReconsumeTimes",
        /// Broker name (5.x).
        pub broker_name: Option<String> => "bname",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn unregister_uses_capital_id() {
        let h = UnregisterClientRequestHeader {
            client_id: "10.0.0.5@1#2".into(),
            producer_group: None,
            consumer_group: Some("G".into()),
        };
        let f = h.to_ext_fields();
        assert_eq!(f["clientID"], "10.0.0.5@1#2");
        assert_eq!(f["consumerGroup"], "G");
        assert_eq!(f.len(), 2);
    }
}
