//! Admin header: UPDATE_AND_CREATE_TOPIC (17), used by tests and tools.

command_header! {
    /// UPDATE_AND_CREATE_TOPIC (17) request header (Java
    /// `CreateTopicRequestHeader`), sent to a broker.
    ///
    /// The required fields are the ones 4.9.x and 5.x brokers both insist on;
    /// `attributes` and `force` exist only in 5.x (older brokers ignore
    /// them).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct CreateTopicRequestHeader {
        /// Topic to create or update.
        pub topic: String => "topic",
        /// Template topic; tools send `TBW102`.
        pub default_topic: String => "defaultTopic",
        /// Readable queue count.
        pub read_queue_nums: i32 => "readQueueNums",
        /// Writable queue count.
        pub write_queue_nums: i32 => "writeQueueNums",
        /// Permission bits (6 = read + write).
        pub perm: i32 => "perm",
        /// `SINGLE_TAG` or `MULTI_TAG`; the broker rejects anything else.
        pub topic_filter_type: String => "topicFilterType",
        /// Topic sysFlag.
        pub topic_sys_flag: Option<i32> => "topicSysFlag",
        /// Ordered topic.
        pub order: bool => "order",
        /// 5.x topic attributes, `+key=value` pairs joined with `,`.
        pub attributes: Option<String> => "attributes",
        /// 5.x: force the update.
        pub force: Option<bool> => "force",
    }
}

impl CreateTopicRequestHeader {
    /// A normal topic with `queue_nums` read and write queues: default
    /// topic `TBW102`, perm 6, `SINGLE_TAG`, sysFlag 0, not ordered.
    pub fn new(topic: impl Into<String>, queue_nums: i32) -> Self {
        CreateTopicRequestHeader {
            topic: topic.into(),
            default_topic: "TBW102".to_owned(),
            read_queue_nums: queue_nums,
            write_queue_nums: queue_nums,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".to_owned(),
            topic_sys_flag: Some(0),
            order: false,
            attributes: None,
            force: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn new_sends_every_required_field() {
        let f = CreateTopicRequestHeader::new("T1", 8).to_ext_fields();
        assert_eq!(f["topic"], "T1");
        assert_eq!(f["defaultTopic"], "TBW102");
        assert_eq!(f["readQueueNums"], "8");
        assert_eq!(f["writeQueueNums"], "8");
        assert_eq!(f["perm"], "6");
        assert_eq!(f["topicFilterType"], "SINGLE_TAG");
        assert_eq!(f["topicSysFlag"], "0");
        assert_eq!(f["order"], "false");
        assert_eq!(f.len(), 8);
    }
}
