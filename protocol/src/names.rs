//! Topic and group names: the retry and dead-letter topics of a consumer
//! group, the reserved names, and the validation rules the producer and the
//! consumers share (Java `MixAll`, `TopicValidator`, `Validators`).
//!
//! ```
//! use rmq_protocol::names::{self, NameKind};
//!
//! assert_eq!(names::retry_topic("billing"), "%RETRY%billing");
//! assert!(names::is_retry_topic("%RETRY%billing"));
//! assert!(names::check(NameKind::Topic, "orders").is_ok());
//! let bad = names::check(NameKind::ConsumerGroup, "a b").unwrap_err();
//! assert_eq!(
//!     bad.to_string(),
//!     "the consumer group \"a b\" contains ' '; only letters, digits, '%', '|', '_' and '-' \
//!      are allowed"
//! );
//! ```

use std::fmt;

/// Prefix of a consumer group's retry topic, `%RETRY%<group>` (Java
/// `MixAll.RETRY_GROUP_TOPIC_PREFIX`).
pub const RETRY_TOPIC_PREFIX: &str = "%RETRY%";

/// Prefix of a consumer group's dead-letter topic, `%DLQ%<group>` (Java
/// `MixAll.DLQ_GROUP_TOPIC_PREFIX`).
pub const DLQ_TOPIC_PREFIX: &str = "%DLQ%";

/// Longest topic name the broker accepts (Java
/// `TopicValidator.TOPIC_MAX_LENGTH`).
pub const TOPIC_MAX_LEN: usize = 127;

/// Longest group name (Java `Validators.CHARACTER_MAX_LENGTH`).
pub const GROUP_MAX_LEN: usize = 255;

/// The consumer group no application may use (Java
/// `MixAll.DEFAULT_CONSUMER_GROUP`).
pub const DEFAULT_CONSUMER_GROUP: &str = "DEFAULT_CONSUMER";

/// The producer group no application may use (Java
/// `MixAll.DEFAULT_PRODUCER_GROUP`).
pub const DEFAULT_PRODUCER_GROUP: &str = "DEFAULT_PRODUCER";

/// The topic a producer falls back to for a topic without a route, so the
/// broker auto-creates it (Java `TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const AUTO_CREATE_TOPIC: &str = "TBW102";

/// Prefix of 5.x system topics (Java `TopicValidator.SYSTEM_TOPIC_PREFIX`);
/// clients may not send to them.
pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";

/// Topics no client may send to: the broker's internal topics (Java
/// `TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`) plus [`AUTO_CREATE_TOPIC`],
/// which only exists as a template for auto-created topics.
///
/// Topics starting with [`SYSTEM_TOPIC_PREFIX`] are refused too.
/// `RMQ_SYS_TRACE_TOPIC` and `BenchmarkTest` stay allowed: message tracing
/// and the benchmark tools write to them.
pub const FORBIDDEN_TOPICS: &[&str] = &[
    AUTO_CREATE_TOPIC,
    "SCHEDULE_TOPIC_XXXX",
    "SCHEDULE_TOPIC_XXXX_V2",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
];

/// The retry topic of `group`: `%RETRY%<group>`.
pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_TOPIC_PREFIX}{group}")
}

/// The dead-letter topic of `group`: `%DLQ%<group>`.
pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_TOPIC_PREFIX}{group}")
}

/// Whether `topic` is some group's retry topic (starts with `%RETRY%`).
pub fn is_retry_topic(topic: &str) -> bool {
    topic.starts_with(RETRY_TOPIC_PREFIX)
}

/// Whether a client may not send to `topic`: one of [`FORBIDDEN_TOPICS`]
/// or a 5.x system topic.
pub fn is_forbidden_send_topic(topic: &str) -> bool {
    FORBIDDEN_TOPICS.contains(&topic) || topic.starts_with(SYSTEM_TOPIC_PREFIX)
}

/// What a checked name names (it decides the length limit, the reserved
/// name and the wording of the error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameKind {
    /// A topic: at most [`TOPIC_MAX_LEN`] characters.
    Topic,
    /// A consumer group: at most [`GROUP_MAX_LEN`] characters, not
    /// [`DEFAULT_CONSUMER_GROUP`].
    ConsumerGroup,
    /// A producer group: at most [`GROUP_MAX_LEN`] characters, not
    /// [`DEFAULT_PRODUCER_GROUP`].
    ProducerGroup,
}

impl NameKind {
    /// How the kind is named in error texts.
    pub fn as_str(self) -> &'static str {
        match self {
            NameKind::Topic => "topic",
            NameKind::ConsumerGroup => "consumer group",
            NameKind::ProducerGroup => "producer group",
        }
    }

    /// The longest name of this kind.
    pub fn max_len(self) -> usize {
        match self {
            NameKind::Topic => TOPIC_MAX_LEN,
            NameKind::ConsumerGroup | NameKind::ProducerGroup => GROUP_MAX_LEN,
        }
    }

    fn reserved(self) -> Option<&'static str> {
        match self {
            NameKind::Topic => None,
            NameKind::ConsumerGroup => Some(DEFAULT_CONSUMER_GROUP),
            NameKind::ProducerGroup => Some(DEFAULT_PRODUCER_GROUP),
        }
    }
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is wrong with a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameProblem {
    /// Empty or only white space.
    Empty,
    /// Longer than the kind allows.
    TooLong {
        /// The name's length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A character outside `[%|a-zA-Z0-9_-]`.
    BadChar(char),
    /// A name reserved by RocketMQ (the default groups).
    Reserved,
    /// A topic clients may not send to (see [`is_forbidden_send_topic`]).
    NotSendable,
}

/// A topic or group name that RocketMQ refuses; `Display` says which rule
/// it breaks and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct InvalidName {
    kind: NameKind,
    name: String,
    problem: NameProblem,
}

impl InvalidName {
    /// What the name names.
    pub fn kind(&self) -> NameKind {
        self.kind
    }

    /// The refused name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What is wrong with it.
    pub fn problem(&self) -> NameProblem {
        self.problem
    }

    /// The rule the name breaks, without the name (for messages that
    /// name it themselves).
    pub fn reason(&self) -> String {
        match self.problem {
            NameProblem::Empty => "it is empty; set one".to_owned(),
            NameProblem::TooLong { len, max } => {
                format!("it is {len} characters long; at most {max} are allowed")
            }
            NameProblem::BadChar(c) => format!(
                "it contains {c:?}; only letters, digits, '%', '|', '_' and '-' are allowed"
            ),
            NameProblem::Reserved => "it is reserved by RocketMQ; choose your own name".to_owned(),
            NameProblem::NotSendable => {
                "it is a reserved system topic that clients may not send to".to_owned()
            }
        }
    }

    fn describe(&self) -> String {
        let kind = self.kind;
        let name = &self.name;
        match self.problem {
            NameProblem::Empty => format!("the {kind} is empty; set one"),
            NameProblem::TooLong { len, max } => {
                format!("the {kind} {name:?} is {len} characters long; at most {max} are allowed")
            }
            NameProblem::BadChar(c) => format!(
                "the {kind} {name:?} contains {c:?}; only letters, digits, '%', '|', '_' and '-' \
                 are allowed"
            ),
            NameProblem::Reserved => {
                format!("the {kind} {name:?} is reserved by RocketMQ; choose your own name")
            }
            NameProblem::NotSendable => {
                format!(
                    "the {kind} {name:?} is a reserved system topic that clients may not send to"
                )
            }
        }
    }
}

/// Checks a name like Java's `Validators.checkTopic` / `checkGroup`: not
/// empty, at most the kind's length, only `[%|a-zA-Z0-9_-]`, and not the
/// kind's reserved default group.
///
/// # Errors
///
/// [`InvalidName`] naming the first rule broken.
pub fn check(kind: NameKind, name: &str) -> Result<(), InvalidName> {
    let problem = if name.trim().is_empty() {
        Some(NameProblem::Empty)
    } else if name.len() > kind.max_len() {
        Some(NameProblem::TooLong {
            len: name.len(),
            max: kind.max_len(),
        })
    } else if let Some(c) = name.chars().find(|c| !is_name_char(*c)) {
        Some(NameProblem::BadChar(c))
    } else if kind.reserved() == Some(name) {
        Some(NameProblem::Reserved)
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(InvalidName {
            kind,
            name: name.to_owned(),
            problem,
        }),
    }
}

/// [`check`] for a topic a producer sends to: also refuses the
/// [`FORBIDDEN_TOPICS`] and 5.x system topics (Java
/// `TopicValidator.isNotAllowedSendTopic`).
///
/// # Errors
///
/// [`InvalidName`] naming the first rule broken.
pub fn check_send_topic(topic: &str) -> Result<(), InvalidName> {
    check(NameKind::Topic, topic)?;
    if is_forbidden_send_topic(topic) {
        return Err(InvalidName {
            kind: NameKind::Topic,
            name: topic.to_owned(),
            problem: NameProblem::NotSendable,
        });
    }
    Ok(())
}

/// Whether `c` may appear in a topic or group name (`^[%|a-zA-Z0-9_-]+$`).
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_topics() {
        assert_eq!(retry_topic("G"), "%RETRY%G");
        assert_eq!(dlq_topic("G"), "%DLQ%G");
        assert!(is_retry_topic("%RETRY%G"));
        assert!(!is_retry_topic("%DLQ%G"));
    }

    #[test]
    fn rules_and_wording() {
        for ok in ["a", "T-1_x", "%RETRY%g", "a|b", &"x".repeat(127)] {
            check(NameKind::Topic, ok).unwrap();
        }
        let e = check(NameKind::ConsumerGroup, "").unwrap_err();
        assert_eq!(e.problem(), NameProblem::Empty);
        assert_eq!(e.to_string(), "the consumer group is empty; set one");
        let e = check(NameKind::Topic, &"x".repeat(128)).unwrap_err();
        assert_eq!(e.problem(), NameProblem::TooLong { len: 128, max: 127 });
        assert!(e.to_string().contains("at most 127"));
        let e = check(NameKind::ProducerGroup, "a.b").unwrap_err();
        assert_eq!(e.problem(), NameProblem::BadChar('.'));
        assert!(
            e.to_string()
                .starts_with("the producer group \"a.b\" contains '.'")
        );
        assert!(check(NameKind::ConsumerGroup, &"g".repeat(255)).is_ok());
        assert!(check(NameKind::ConsumerGroup, &"g".repeat(256)).is_err());
        let e = check(NameKind::ConsumerGroup, DEFAULT_CONSUMER_GROUP).unwrap_err();
        assert_eq!(e.problem(), NameProblem::Reserved);
        assert!(check(NameKind::ProducerGroup, DEFAULT_CONSUMER_GROUP).is_ok());
        assert!(check(NameKind::ProducerGroup, DEFAULT_PRODUCER_GROUP).is_err());
        assert!(e.reason().contains("reserved"));
    }

    #[test]
    fn send_topics() {
        for ok in ["t", "RMQ_SYS_TRACE_TOPIC", "BenchmarkTest", "%RETRY%g"] {
            check_send_topic(ok).unwrap();
        }
        for bad in ["TBW102", "SCHEDULE_TOPIC_XXXX", "rmq_sys_wheel_timer"] {
            let e = check_send_topic(bad).unwrap_err();
            assert_eq!(e.problem(), NameProblem::NotSendable, "{bad}");
        }
        assert_eq!(
            check_send_topic("a b").unwrap_err().problem(),
            NameProblem::BadChar(' ')
        );
    }
}
