//! Admin headers for tools: GET_CONSUME_STATS (208), GET_TOPIC_STATS_INFO
//! (202), DELETE_TOPIC_IN_BROKER (215), DELETE_TOPIC_IN_NAMESRV (216) and
//! DELETE_SUBSCRIPTIONGROUP (207). INVOKE_BROKER_TO_RESET_OFFSET (222)
//! uses [`ResetOffsetRequestHeader`](super::ResetOffsetRequestHeader), like
//! Java.

command_header! {
    /// GET_CONSUME_STATS (208) request header (Java
    /// `GetConsumeStatsRequestHeader`), sent to a broker.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GetConsumeStatsRequestHeader {
        /// Consumer group.
        pub consumer_group: String => "consumerGroup",
        /// One topic; `None` = every topic the group has offsets for on
        /// that broker.
        pub topic: Option<String> => "topic",
        /// 5.x: topics joined with `;` (older brokers ignore it).
        pub topic_list: Option<String> => "topicList",
    }
}

command_header! {
    /// GET_TOPIC_STATS_INFO (202) request header (Java
    /// `GetTopicStatsInfoRequestHeader`), sent to a broker.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct GetTopicStatsInfoRequestHeader {
        /// Topic.
        pub topic: String => "topic",
    }
}

command_header! {
    /// DELETE_TOPIC_IN_BROKER (215) request header (Java
    /// `DeleteTopicRequestHeader`).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct DeleteTopicRequestHeader {
        /// Topic.
        pub topic: String => "topic",
    }
}

command_header! {
    /// DELETE_TOPIC_IN_NAMESRV (216) request header (Java
    /// `DeleteTopicFromNamesrvRequestHeader`), sent to a name server.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct DeleteTopicFromNamesrvRequestHeader {
        /// Topic.
        pub topic: String => "topic",
        /// Only the route entries of this cluster; `None` = the whole topic.
        pub cluster_name: Option<String> => "clusterName",
    }
}

command_header! {
    /// DELETE_SUBSCRIPTIONGROUP (207) request header (Java
    /// `DeleteSubscriptionGroupRequestHeader`), sent to a broker.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct DeleteSubscriptionGroupRequestHeader {
        /// The consumer group.
        pub group_name: String => "groupName",
        /// 5.x: also drop the group's stored offsets (older brokers ignore
        /// it).
        pub clean_offset: Option<bool> => "cleanOffset",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn wire_names_match_java() {
        let f = GetConsumeStatsRequestHeader {
            consumer_group: "G".into(),
            topic: Some("T".into()),
            topic_list: None,
        }
        .to_ext_fields();
        assert_eq!(f["consumerGroup"], "G");
        assert_eq!(f["topic"], "T");
        assert_eq!(f.len(), 2);
        let f = DeleteTopicFromNamesrvRequestHeader {
            topic: "T".into(),
            cluster_name: Some("C".into()),
        }
        .to_ext_fields();
        assert_eq!(f["clusterName"], "C");
        let f = DeleteSubscriptionGroupRequestHeader {
            group_name: "G".into(),
            clean_offset: Some(true),
        }
        .to_ext_fields();
        assert_eq!(f["groupName"], "G");
        assert_eq!(f["cleanOffset"], "true");
        let back = GetTopicStatsInfoRequestHeader::read_from(
            &GetTopicStatsInfoRequestHeader { topic: "X".into() }.to_ext_fields(),
        )
        .unwrap();
        assert_eq!(back.topic, "X");
        assert!(DeleteTopicRequestHeader::read_from(&Default::default()).is_err());
    }
}
