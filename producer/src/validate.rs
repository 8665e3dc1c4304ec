//! Checks run before anything is sent (Java `Validators.checkMessage` /
//! `checkTopic`, `TopicValidator`, and the batch rules of `MessageBatch`).

use rmq_protocol::Message;
use rmq_protocol::message::{check_types, is_reply, is_request, property, validate_properties};
use rmq_protocol::names::{self, NameKind};

use crate::error::InvalidMessage;

pub use rmq_protocol::names::{
    AUTO_CREATE_TOPIC, FORBIDDEN_TOPICS, GROUP_MAX_LEN, RETRY_TOPIC_PREFIX, TOPIC_MAX_LEN,
};

/// Checks a topic name as Java's `Validators.checkTopic` and
/// `isNotAllowedSendTopic` do (the rules of
/// [`rmq_protocol::names::check_send_topic`]).
///
/// # Errors
///
/// [`InvalidMessage::Topic`] saying what is wrong.
pub fn check_topic(topic: &str) -> Result<(), InvalidMessage> {
    names::check_send_topic(topic).map_err(|e| InvalidMessage::Topic {
        topic: topic.to_owned(),
        reason: e.reason(),
    })
}

/// Checks a producer group name (Java `Validators.checkGroup`; not
/// `DEFAULT_PRODUCER`).
///
/// # Errors
///
/// A description of the problem.
pub(crate) fn check_group(group: &str) -> Result<(), String> {
    names::check(NameKind::ProducerGroup, group).map_err(|e| e.to_string())
}

/// Checks one message before it is sent: topic, body (non-empty, at most
/// `max_size` bytes), delay level, properties, and the 5.x type properties
/// (a priority of 0 or more, a valid lite topic, not two message types at
/// once: [`rmq_protocol::message::check_types`]).
///
/// # Errors
///
/// The first problem found.
pub fn check_message(msg: &Message, max_size: usize) -> Result<(), InvalidMessage> {
    check_topic(&msg.topic)?;
    check_body(msg, max_size)?;
    check_delay(msg)?;
    validate_properties(&msg.properties).map_err(InvalidMessage::Property)?;
    check_types(msg).map_err(InvalidMessage::Type)?;
    Ok(())
}

/// What of `msg` makes it travel on its own, never in a batch: a priority
/// or a lite topic (a broker applies them to single messages only: in a
/// batch they would be ignored), being a reply (sent with
/// SEND_REPLY_MESSAGE_V2) or a request (the broker adds the `CLUSTER` a
/// replier needs to single messages).
pub(crate) fn sent_alone(msg: &Message) -> Option<&'static str> {
    if msg.properties.contains_key(property::PRIORITY) {
        Some("a priority")
    } else if msg.properties.contains_key(property::LITE_TOPIC) {
        Some("a lite topic")
    } else if is_reply(msg) {
        Some("a reply (MSG_TYPE=reply)")
    } else if is_request(msg) {
        Some("a request (CORRELATION_ID)")
    } else {
        None
    }
}

fn check_body(msg: &Message, max_size: usize) -> Result<(), InvalidMessage> {
    if msg.body.is_empty() {
        return Err(InvalidMessage::EmptyBody);
    }
    if msg.body.len() > max_size {
        return Err(InvalidMessage::TooLarge {
            size: msg.body.len(),
            max: max_size,
        });
    }
    Ok(())
}

fn check_delay(msg: &Message) -> Result<(), InvalidMessage> {
    match msg.property(property::DELAY) {
        None => Ok(()),
        Some(raw) => match raw.trim().parse::<i32>() {
            Ok(level) if level >= 0 => Ok(()),
            _ => Err(InvalidMessage::DelayLevel(raw.to_owned())),
        },
    }
}

/// Whether `msg` is a transactional half message (`TRAN_MSG=true`, read
/// as Java's `Boolean.parseBoolean`).
pub(crate) fn is_transactional(msg: &Message) -> bool {
    msg.property(property::TRAN_MSG)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The delay properties a transactional message must not carry: the delay
/// level and the 5.x timer properties.
const DELAY_PROPERTIES: [&str; 4] = [
    property::DELAY,
    property::TIMER_DELAY_SEC,
    property::TIMER_DELAY_MS,
    property::TIMER_DELIVER_MS,
];

/// Checks that a message for a transactional send has no delay.
///
/// # Errors
///
/// [`InvalidMessage::TransactionDelay`] naming the property found.
pub(crate) fn check_no_delay(msg: &Message) -> Result<(), InvalidMessage> {
    match DELAY_PROPERTIES
        .iter()
        .find(|p| msg.property(p).is_some_and(|v| v.trim() != "0"))
    {
        Some(p) => Err(InvalidMessage::TransactionDelay {
            property: (*p).to_owned(),
        }),
        None => Ok(()),
    }
}

/// Checks a batch (Java `DefaultMQProducer.batch` and `MessageBatch`): not
/// empty, one topic, not a retry topic, no delay level, no transactional
/// message, no priority, lite topic or reply, one `WAIT` value, and every
/// message valid on its own.
///
/// The encoded size is checked later, once the batch is encoded.
///
/// # Errors
///
/// The first problem found; per-message problems carry the message's index.
pub fn check_batch(msgs: &[Message], max_size: usize) -> Result<(), InvalidMessage> {
    let Some(first) = msgs.first() else {
        return Err(InvalidMessage::EmptyBatch);
    };
    check_topic(&first.topic)?;
    if names::is_retry_topic(&first.topic) {
        return Err(InvalidMessage::Batch(format!(
            "a batch cannot be sent to the retry topic {}",
            first.topic
        )));
    }
    let wait = first.wait_store_msg_ok();
    for (index, msg) in msgs.iter().enumerate() {
        if msg.topic != first.topic {
            return Err(InvalidMessage::Batch(format!(
                "message {index} is for topic {:?} but message 0 is for {:?}; \
                 a batch must have one topic",
                msg.topic, first.topic
            )));
        }
        if msg.delay_level().is_some_and(|l| l > 0) {
            return Err(InvalidMessage::Batch(format!(
                "message {index} has a delay level; batches cannot be delayed, \
                 send delayed messages one by one"
            )));
        }
        if is_transactional(msg) {
            return Err(InvalidMessage::TransactionInBatch { index });
        }
        if let Some(what) = sent_alone(msg) {
            return Err(InvalidMessage::Batch(format!(
                "message {index} has {what}, which the broker applies to single messages only; \
                 send it on its own"
            )));
        }
        if msg.wait_store_msg_ok() != wait {
            return Err(InvalidMessage::Batch(format!(
                "message {index} has a different WAIT property than message 0; \
                 all messages of a batch must agree"
            )));
        }
        check_message(msg, max_size).map_err(|source| InvalidMessage::InBatch {
            index,
            source: Box::new(source),
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics() {
        for ok in [
            "a",
            "T-1_x",
            "%RETRY%g",
            "a|b",
            &"x".repeat(127),
            "RMQ_SYS_TRACE_TOPIC",
        ] {
            check_topic(ok).unwrap();
        }
        for bad in [
            "",
            "  ",
            "a b",
            "a/b",
            "é",
            &"x".repeat(128),
            "TBW102",
            "SCHEDULE_TOPIC_XXXX",
            "RMQ_SYS_TRANS_HALF_TOPIC",
            "rmq_sys_wheel_timer",
        ] {
            assert!(
                matches!(check_topic(bad), Err(InvalidMessage::Topic { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn groups() {
        check_group("g-1_%|").unwrap();
        assert!(check_group("").is_err());
        assert!(check_group("a.b").is_err());
        assert!(check_group(&"g".repeat(256)).is_err());
    }

    #[test]
    fn messages() {
        let ok = Message::new("t", "x").with_tags("a").with_delay_level(2);
        check_message(&ok, 10).unwrap();
        assert!(matches!(
            check_message(&Message::new("t", ""), 10),
            Err(InvalidMessage::EmptyBody)
        ));
        assert!(matches!(
            check_message(&Message::new("t", vec![0u8; 11]), 10),
            Err(InvalidMessage::TooLarge { size: 11, max: 10 })
        ));
        check_message(&Message::new("t", vec![0u8; 10]), 10).unwrap();
        let sep = Message::new("t", "x").with_property("k", "a\u{1}b");
        assert!(matches!(
            check_message(&sep, 10),
            Err(InvalidMessage::Property(_))
        ));
        let delay = Message::new("t", "x").with_property(property::DELAY, "soon");
        assert!(matches!(
            check_message(&delay, 10),
            Err(InvalidMessage::DelayLevel(_))
        ));
        assert!(check_message(&Message::new("TBW102", "x"), 10).is_err());
    }

    #[test]
    fn batches() {
        let m = |t: &str| Message::new(t, "x");
        check_batch(&[m("t"), m("t")], 10).unwrap();
        assert!(matches!(
            check_batch(&[], 10),
            Err(InvalidMessage::EmptyBatch)
        ));
        assert!(matches!(
            check_batch(&[m("t"), m("u")], 10),
            Err(InvalidMessage::Batch(_))
        ));
        assert!(matches!(
            check_batch(&[m("%RETRY%g")], 10),
            Err(InvalidMessage::Batch(_))
        ));
        assert!(matches!(
            check_batch(&[m("t"), m("t").with_delay_level(1)], 10),
            Err(InvalidMessage::Batch(_))
        ));
        // Delay level 0 means "no delay".
        check_batch(&[m("t").with_delay_level(0)], 10).unwrap();
        assert!(matches!(
            check_batch(&[m("t"), m("t").with_property(property::WAIT, "false")], 10),
            Err(InvalidMessage::Batch(_))
        ));
        assert!(matches!(
            check_batch(&[m("t"), Message::new("t", "")], 10),
            Err(InvalidMessage::InBatch { index: 1, .. })
        ));
        assert!(matches!(
            check_batch(
                &[m("t"), m("t").with_property(property::TRAN_MSG, "TRUE")],
                10
            ),
            Err(InvalidMessage::TransactionInBatch { index: 1 })
        ));
        check_batch(&[m("t").with_property(property::TRAN_MSG, "false")], 10).unwrap();
    }

    #[test]
    fn priority_and_lite_topic_rules() {
        let m = || Message::new("t", "x");
        check_message(&m().with_priority(0), 10).unwrap();
        check_message(&m().with_lite_topic("order-1"), 10).unwrap();
        for bad in [
            m().with_priority(-1),
            m().with_property(property::PRIORITY, "high"),
            m().with_lite_topic("a b"),
            m().with_lite_topic("  "),
            m().with_priority(1).with_lite_topic("l"),
            m().with_priority(1).with_delay_level(2),
        ] {
            assert!(
                matches!(check_message(&bad, 10), Err(InvalidMessage::Type(_))),
                "{bad:?}"
            );
        }
        // Sent alone: never in a batch.
        for (alone, what) in [
            (m().with_priority(1), "a priority"),
            (m().with_lite_topic("l"), "a lite topic"),
            (m().with_property(property::MSG_TYPE, "reply"), "a reply"),
            (
                m().with_property(property::CORRELATION_ID, "c")
                    .with_property(property::REPLY_TO_CLIENT, "id"),
                "a request",
            ),
        ] {
            assert!(
                sent_alone(&alone).is_some_and(|w| w.starts_with(what)),
                "{what}"
            );
            match check_batch(&[m(), alone], 10) {
                Err(InvalidMessage::Batch(text)) => assert!(text.contains(what), "{text}"),
                other => panic!("{what}: {other:?}"),
            }
        }
        assert_eq!(sent_alone(&m()), None);
    }

    #[test]
    fn transactional_sends_have_no_delay() {
        let m = || Message::new("t", "x");
        check_no_delay(&m()).unwrap();
        check_no_delay(&m().with_delay_level(0)).unwrap();
        for (name, value) in [
            (property::DELAY, "3"),
            (property::TIMER_DELAY_SEC, "10"),
            (property::TIMER_DELAY_MS, "10"),
            (property::TIMER_DELIVER_MS, "1700000000000"),
        ] {
            match check_no_delay(&m().with_property(name, value)) {
                Err(InvalidMessage::TransactionDelay { property }) => assert_eq!(property, name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
