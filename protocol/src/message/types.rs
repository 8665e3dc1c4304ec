//! Message types (Java `TopicMessageType`): what kind of message a message
//! is by its properties, the 5.x priority and lite-topic properties, and
//! the rules of their values and combinations.
//!
//! A 5.x topic has a type (its `message.type` attribute); the proxy answers
//! it in a route (`accept_message_types`) and refuses a message of another
//! type, a remoting broker does not check. The type of a message is read
//! from its properties in Java's order ([`MessageType::of`]); the Java gRPC
//! client refuses a message that sets two of delivery time, message group,
//! priority and lite topic ([`check_types`]).

use std::fmt;

use super::{Message, property};

/// The longest lite topic name a 5.5 proxy accepts, in bytes (its
/// `maxLiteTopicSize` default).
pub const MAX_LITE_TOPIC_LEN: usize = 64;

/// The kind of a message, as a 5.x topic's type names it (Java
/// `TopicMessageType`, without `UNSPECIFIED` and `MIXED`, which only topics
/// have).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// A plain message.
    Normal,
    /// An ordered message: it has a message group ([`property::SHARDING_KEY`]).
    Fifo,
    /// A delayed message: a delay level or a delivery time.
    Delay,
    /// A transactional half message ([`property::TRAN_MSG`]).
    Transaction,
    /// A priority message ([`property::PRIORITY`], 5.4+).
    Priority,
    /// A message for a lite topic ([`property::LITE_TOPIC`], 5.5+).
    Lite,
}

impl MessageType {
    /// The type of `msg` by its properties, in the order of Java's
    /// `TopicMessageType.parseFromMessageProperty` (which the broker uses
    /// too): transaction, then delay, then FIFO, then priority, then lite.
    ///
    /// ```
    /// use rmq_protocol::Message;
    /// use rmq_protocol::message::MessageType;
    ///
    /// assert_eq!(MessageType::of(&Message::new("t", "x")), MessageType::Normal);
    /// assert_eq!(MessageType::of(&Message::new("t", "x").with_priority(3)), MessageType::Priority);
    /// assert_eq!(MessageType::of(&Message::new("t", "x").with_lite_topic("order-1")), MessageType::Lite);
    /// ```
    pub fn of(msg: &Message) -> MessageType {
        let has = |name: &str| msg.properties.contains_key(name);
        if msg
            .property(property::TRAN_MSG)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            MessageType::Transaction
        } else if has(property::DELAY) || msg.is_timer() {
            MessageType::Delay
        } else if has(property::SHARDING_KEY) {
            MessageType::Fifo
        } else if has(property::PRIORITY) {
            MessageType::Priority
        } else if has(property::LITE_TOPIC) {
            MessageType::Lite
        } else {
            MessageType::Normal
        }
    }

    /// The name a topic's `message.type` attribute uses (`NORMAL`, `FIFO`, ...).
    pub fn name(self) -> &'static str {
        match self {
            MessageType::Normal => "NORMAL",
            MessageType::Fifo => "FIFO",
            MessageType::Delay => "DELAY",
            MessageType::Transaction => "TRANSACTION",
            MessageType::Priority => "PRIORITY",
            MessageType::Lite => "LITE",
        }
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a message's type properties cannot be sent.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeError {
    /// [`property::PRIORITY`] is not an integer from 0 to `i32::MAX`.
    Priority(String),
    /// [`property::LITE_TOPIC`] breaks the name rule ([`check_lite_topic`]).
    LiteTopic {
        /// The lite topic.
        lite_topic: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The message has the properties of two message types that exclude
    /// each other (e.g. a priority and a delivery time).
    Conflict {
        /// What the message has first (`"a priority"`, ...).
        first: &'static str,
        /// What it has besides.
        second: &'static str,
    },
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeError::Priority(raw) => write!(
                f,
                "priority {raw:?} ({}) is not an integer from 0 to {}",
                property::PRIORITY,
                i32::MAX
            ),
            TypeError::LiteTopic { lite_topic, reason } => {
                write!(f, "lite topic {lite_topic:?} is invalid: {reason}")
            }
            TypeError::Conflict { first, second } => write!(
                f,
                "a message cannot have both {first} and {second}: they are different message \
                 types; drop one"
            ),
        }
    }
}

impl std::error::Error for TypeError {}

/// Checks a lite topic name as the 5.5 proxy does (Java
/// `GrpcValidator.validateLiteTopic`): not blank, at most
/// [`MAX_LITE_TOPIC_LEN`] bytes, only ASCII letters, digits, `-` and `_`.
/// (A remoting broker stores any name; the proxy refuses these with
/// `ILLEGAL_LITE_TOPIC`.)
///
/// # Errors
///
/// [`TypeError::LiteTopic`] saying what is wrong.
pub fn check_lite_topic(lite_topic: &str) -> Result<(), TypeError> {
    let bad = |reason| {
        Err(TypeError::LiteTopic {
            lite_topic: lite_topic.to_owned(),
            reason,
        })
    };
    if lite_topic.trim().is_empty() {
        return bad("it is empty or blank");
    }
    if lite_topic.len() > MAX_LITE_TOPIC_LEN {
        return bad("it is longer than 64 bytes");
    }
    if !lite_topic
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return bad("only ASCII letters, digits, '-' and '_' are allowed");
    }
    Ok(())
}

/// The priority of `msg` when it has a valid one.
///
/// # Errors
///
/// [`TypeError::Priority`] when [`property::PRIORITY`] is set but is not an
/// integer from 0 to `i32::MAX` (Java `Message.setPriority` refuses a
/// negative one; the proxy's field is an `int32`).
pub fn priority_of(msg: &Message) -> Result<Option<i32>, TypeError> {
    match msg.property(property::PRIORITY) {
        None => Ok(None),
        Some(raw) => match raw.parse::<i32>() {
            Ok(p) if p >= 0 => Ok(Some(p)),
            _ => Err(TypeError::Priority(raw.to_owned())),
        },
    }
}

/// Checks the type properties of `msg` before it is sent: a valid priority
/// and lite topic, and no two of delivery time (or delay level), message
/// group, priority and lite topic together, nor a priority or lite topic on
/// a transactional message (the rules of the Java gRPC client's
/// `MessageBuilderImpl` and `PublishingMessageImpl`; the broker would
/// otherwise silently drop one of them).
///
/// ```
/// use std::time::Duration;
/// use rmq_protocol::Message;
/// use rmq_protocol::message::check_types;
///
/// check_types(&Message::new("t", "x").with_priority(5)).unwrap();
/// assert!(check_types(&Message::new("t", "x").with_priority(-1)).is_err());
/// assert!(check_types(&Message::new("t", "x").with_lite_topic("no spaces")).is_err());
/// let both = Message::new("t", "x").with_priority(1).deliver_after(Duration::from_secs(5));
/// assert!(check_types(&both).is_err());
/// ```
///
/// # Errors
///
/// The first problem found.
pub fn check_types(msg: &Message) -> Result<(), TypeError> {
    let priority = priority_of(msg)?.is_some();
    let lite = match msg.property(property::LITE_TOPIC) {
        Some(l) => {
            check_lite_topic(l)?;
            true
        }
        None => false,
    };
    if !priority && !lite {
        return Ok(());
    }
    let ours = if priority {
        "a priority"
    } else {
        "a lite topic"
    };
    let others = [
        (priority && lite, "a lite topic"),
        (
            msg.properties.contains_key(property::DELAY) || msg.is_timer(),
            "a delay (delivery time or delay level)",
        ),
        (
            msg.properties.contains_key(property::SHARDING_KEY),
            "a message group (__SHARDINGKEY)",
        ),
        (
            MessageType::of(msg) == MessageType::Transaction,
            "a transaction (TRAN_MSG)",
        ),
    ];
    match others.iter().find(|(has, _)| *has) {
        Some((_, second)) => Err(TypeError::Conflict {
            first: ours,
            second,
        }),
        None => Ok(()),
    }
}

impl Message {
    /// Sets the priority (Java `Message.setPriority`,
    /// [`property::PRIORITY`], RocketMQ 5.4+): a broker stores a message of
    /// a `PRIORITY` topic in queue `min(priority, write queues - 1)`, and a
    /// pop of the topic serves the higher queues first. It must be 0 or
    /// more: the producer refuses a negative one before sending, and a
    /// priority together with a delivery time, a message group or a lite
    /// topic ([`check_types`]). A broker older than 5.4 does not support it:
    /// the producer refuses such a send with an "unsupported" error.
    ///
    /// ```
    /// let msg = rmq_protocol::Message::new("alerts", "disk full").with_priority(7);
    /// assert_eq!(msg.priority(), Some(7));
    /// ```
    pub fn with_priority(self, priority: i32) -> Self {
        self.with_property(property::PRIORITY, priority.to_string())
    }

    /// The priority ([`property::PRIORITY`]); `None` when absent or not an
    /// integer.
    pub fn priority(&self) -> Option<i32> {
        self.property(property::PRIORITY)?.parse().ok()
    }

    /// Sends the message to `lite_topic` of its (`LITE`) topic (Java gRPC
    /// `MessageBuilder.setLiteTopic`, [`property::LITE_TOPIC`], RocketMQ
    /// 5.5+): the broker dispatches it to the lite topic's own queue, which
    /// lite consumers subscribe to. The name must pass
    /// [`check_lite_topic`] (checked before sending). A broker older than
    /// 5.5 does not support it: the producer refuses such a send with an
    /// "unsupported" error.
    ///
    /// ```
    /// let msg = rmq_protocol::Message::new("orders", "paid").with_lite_topic("order-42");
    /// assert_eq!(msg.lite_topic(), Some("order-42"));
    /// ```
    pub fn with_lite_topic(self, lite_topic: impl Into<String>) -> Self {
        self.with_property(property::LITE_TOPIC, lite_topic.into())
    }

    /// The lite topic ([`property::LITE_TOPIC`]).
    pub fn lite_topic(&self) -> Option<&str> {
        self.property(property::LITE_TOPIC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn m() -> Message {
        Message::new("t", "x")
    }

    #[test]
    fn type_follows_the_java_parse_order() {
        let tx = m()
            .with_property(property::TRAN_MSG, "TRUE")
            .with_delay_level(2);
        assert_eq!(MessageType::of(&tx), MessageType::Transaction);
        let delay = m()
            .with_delay_level(2)
            .with_property(property::SHARDING_KEY, "g");
        assert_eq!(MessageType::of(&delay), MessageType::Delay);
        let timer = m().deliver_after(Duration::from_secs(1));
        assert_eq!(MessageType::of(&timer), MessageType::Delay);
        let fifo = m()
            .with_property(property::SHARDING_KEY, "g")
            .with_priority(1);
        assert_eq!(MessageType::of(&fifo), MessageType::Fifo);
        let prio = m().with_priority(1).with_lite_topic("l");
        assert_eq!(MessageType::of(&prio), MessageType::Priority);
        assert_eq!(
            MessageType::of(&m().with_lite_topic("l")),
            MessageType::Lite
        );
        assert_eq!(
            MessageType::of(&m().with_property(property::TRAN_MSG, "false")),
            MessageType::Normal
        );
        assert_eq!(MessageType::Priority.to_string(), "PRIORITY");
    }

    #[test]
    fn priorities() {
        assert_eq!(priority_of(&m()), Ok(None));
        assert_eq!(priority_of(&m().with_priority(0)), Ok(Some(0)));
        assert_eq!(
            priority_of(&m().with_priority(i32::MAX)),
            Ok(Some(i32::MAX))
        );
        for bad in ["-1", "x", "", " 1", "2147483648"] {
            let msg = m().with_property(property::PRIORITY, bad);
            assert_eq!(
                priority_of(&msg),
                Err(TypeError::Priority(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(m().with_priority(-3).priority(), Some(-3));
        assert!(
            TypeError::Priority("-1".into())
                .to_string()
                .contains("_SYS_MSG_PRIORITY_")
        );
    }

    #[test]
    fn lite_topic_names() {
        for good in ["a", "order-42", "A_b-9", &"x".repeat(64)] {
            check_lite_topic(good).unwrap();
        }
        for bad in ["", "  ", "a b", "a/b", "ünï", "a.b", &"x".repeat(65)] {
            assert!(
                matches!(check_lite_topic(bad), Err(TypeError::LiteTopic { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn conflicting_types_are_refused() {
        check_types(&m()).unwrap();
        check_types(
            &m().with_delay_level(3)
                .with_property(property::SHARDING_KEY, "g"),
        )
        .unwrap();
        check_types(&m().with_priority(2)).unwrap();
        check_types(&m().with_lite_topic("l")).unwrap();
        let conflicts = [
            (m().with_priority(1).with_lite_topic("l"), "a lite topic"),
            (
                m().with_priority(1).deliver_after(Duration::from_secs(1)),
                "a delay (delivery time or delay level)",
            ),
            (
                m().with_lite_topic("l").with_delay_level(1),
                "a delay (delivery time or delay level)",
            ),
            (
                m().with_priority(1)
                    .with_property(property::SHARDING_KEY, "g"),
                "a message group (__SHARDINGKEY)",
            ),
            (
                m().with_lite_topic("l")
                    .with_property(property::TRAN_MSG, "true"),
                "a transaction (TRAN_MSG)",
            ),
        ];
        for (msg, second) in conflicts {
            match check_types(&msg) {
                Err(TypeError::Conflict { second: s, .. }) => assert_eq!(s, second),
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            check_types(&m().with_priority(-1).with_lite_topic("l")),
            Err(TypeError::Priority(_))
        ));
        assert!(matches!(
            check_types(&m().with_lite_topic("a b")),
            Err(TypeError::LiteTopic { .. })
        ));
    }
}
