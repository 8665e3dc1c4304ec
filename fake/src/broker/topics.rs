//! Topic configurations of one broker (Java `TopicConfigManager`) and the
//! topic-name rules (Java `TopicValidator`).

use std::collections::BTreeMap;

use rmq_protocol::body::{QueueData, perm};

/// The template topic producers use to auto-create topics (Java
/// `TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub(crate) const AUTO_CREATE_TOPIC: &str = "TBW102";
/// Where delayed messages wait (Java `RMQ_SYS_SCHEDULE_TOPIC`).
pub(crate) const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// Retry topic prefix (Java `MixAll.RETRY_GROUP_TOPIC_PREFIX`).
pub(crate) const RETRY_PREFIX: &str = "%RETRY%";
/// Dead-letter topic prefix (Java `MixAll.DLQ_GROUP_TOPIC_PREFIX`).
pub(crate) const DLQ_PREFIX: &str = "%DLQ%";
/// Longest topic name (Java `TopicValidator.TOPIC_MAX_LENGTH`).
pub(crate) const TOPIC_MAX_LENGTH: usize = 127;

/// One topic's configuration (Java `TopicConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopicConfig {
    pub(crate) read_queue_nums: i32,
    pub(crate) write_queue_nums: i32,
    pub(crate) perm: i32,
    pub(crate) topic_sys_flag: i32,
    pub(crate) order: bool,
}

impl TopicConfig {
    pub(crate) fn new(queues: i32, perm: i32) -> Self {
        TopicConfig {
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm,
            topic_sys_flag: 0,
            order: false,
        }
    }

    /// What the name server lists for this topic on `broker`.
    pub(crate) fn queue_data(&self, broker: &str) -> QueueData {
        QueueData {
            broker_name: broker.to_owned(),
            perm: self.perm,
            read_queue_nums: self.read_queue_nums,
            topic_sys_flag: self.topic_sys_flag,
            write_queue_nums: self.write_queue_nums,
        }
    }
}

/// The topics of one broker.
#[derive(Debug, Default)]
pub(crate) struct Topics {
    table: BTreeMap<String, TopicConfig>,
}

impl Topics {
    pub(crate) fn get(&self, topic: &str) -> Option<&TopicConfig> {
        self.table.get(topic)
    }

    pub(crate) fn contains(&self, topic: &str) -> bool {
        self.table.contains_key(topic)
    }

    /// Creates or replaces `topic`.
    pub(crate) fn put(&mut self, topic: &str, config: TopicConfig) {
        self.table.insert(topic.to_owned(), config);
    }

    /// Every topic, by name.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &TopicConfig)> {
        self.table.iter()
    }

    /// Java `createTopicInSendMessageMethod`: a topic created by the first
    /// send to it, from the template topic the producer named. `None` when
    /// the template does not exist or does not allow inheritance.
    pub(crate) fn create_from_template(
        &mut self,
        topic: &str,
        template: &str,
        client_queue_nums: i32,
    ) -> Option<TopicConfig> {
        if let Some(existing) = self.table.get(topic) {
            return Some(existing.clone());
        }
        let default = self.table.get(template)?;
        if template == AUTO_CREATE_TOPIC && default.perm & perm::INHERIT == 0 {
            return None;
        }
        let queues = client_queue_nums.min(default.write_queue_nums).max(0);
        let config = TopicConfig::new(queues, default.perm & !perm::INHERIT);
        self.table.insert(topic.to_owned(), config.clone());
        Some(config)
    }

    /// Java `createTopicInSendMessageBackMethod`: retry and dead-letter
    /// topics, created on first use with `queues` queues and `perm`.
    pub(crate) fn create_if_absent(
        &mut self,
        topic: &str,
        queues: i32,
        perm: i32,
    ) -> (TopicConfig, bool) {
        if let Some(existing) = self.table.get(topic) {
            return (existing.clone(), false);
        }
        let config = TopicConfig::new(queues, perm);
        self.table.insert(topic.to_owned(), config.clone());
        (config, true)
    }
}

/// Java `TopicValidator.validateTopic`: `Err(remark)` for a blank name, one
/// longer than 127 characters or with characters outside `[%|a-zA-Z0-9_-]`.
pub(crate) fn validate_topic(topic: &str) -> Result<(), String> {
    if topic.trim().is_empty() {
        return Err("The specified topic is blank.".to_owned());
    }
    if topic.len() > TOPIC_MAX_LENGTH {
        return Err("The specified topic is longer than topic max length.".to_owned());
    }
    if !topic
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-'))
    {
        return Err(format!(
            "The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    Ok(())
}

/// Java `TopicValidator.isNotAllowedSendTopic`: system topics producers may
/// not write to.
pub(crate) fn is_not_allowed_send_topic(topic: &str) -> bool {
    matches!(
        topic,
        SCHEDULE_TOPIC
            | "RMQ_SYS_TRANS_HALF_TOPIC"
            | "RMQ_SYS_TRANS_OP_HALF_TOPIC"
            | "TRANS_CHECK_MAX_TIME_TOPIC"
            | "SELF_TEST_TOPIC"
            | "OFFSET_MOVED_EVENT"
    )
}

/// `%RETRY%<group>`.
pub(crate) fn retry_topic(group: &str) -> String {
    format!("{RETRY_PREFIX}{group}")
}

/// `%DLQ%<group>`.
pub(crate) fn dlq_topic(group: &str) -> String {
    format!("{DLQ_PREFIX}{group}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_topic("orders_1-a|%b").is_ok());
        assert!(validate_topic(" ").is_err());
        assert!(validate_topic("a b").is_err());
        assert!(validate_topic(&"x".repeat(128)).is_err());
        assert!(is_not_allowed_send_topic("SCHEDULE_TOPIC_XXXX"));
        assert!(!is_not_allowed_send_topic("orders"));
    }

    #[test]
    fn template_creation_takes_the_smaller_queue_count() {
        let mut t = Topics::default();
        t.put(AUTO_CREATE_TOPIC, TopicConfig::new(8, 7));
        let c = t.create_from_template("new", AUTO_CREATE_TOPIC, 4).unwrap();
        assert_eq!((c.read_queue_nums, c.write_queue_nums, c.perm), (4, 4, 6));
        assert!(t.create_from_template("other", "missing", 4).is_none());
        t.put(AUTO_CREATE_TOPIC, TopicConfig::new(8, 6));
        assert!(
            t.create_from_template("third", AUTO_CREATE_TOPIC, 4)
                .is_none()
        );
    }
}
