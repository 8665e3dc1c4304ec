//! [`MessageQueue`]: one queue of a topic on one broker.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// One queue: topic, broker name and queue id.
///
/// Ordered exactly like Java's `MessageQueue.compareTo`: by topic, then
/// broker name (both compared as Java strings, i.e. by UTF-16 code units),
/// then queue id. Allocation strategies depend on this order being the same
/// in every client of a group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    /// Topic name.
    pub topic: String,
    /// Broker name (not address).
    pub broker_name: String,
    /// Queue id within the topic on that broker.
    pub queue_id: i32,
}

impl MessageQueue {
    /// A queue.
    pub fn new(topic: impl Into<String>, broker_name: impl Into<String>, queue_id: i32) -> Self {
        MessageQueue {
            topic: topic.into(),
            broker_name: broker_name.into(),
            queue_id,
        }
    }
}

/// Compares two strings like Java's `String.compareTo` (UTF-16 code units).
pub fn java_string_cmp(a: &str, b: &str) -> Ordering {
    // For strings without supplementary characters UTF-8 byte order equals
    // UTF-16 order; fall back to the exact comparison only when needed.
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

impl Ord for MessageQueue {
    fn cmp(&self, other: &Self) -> Ordering {
        java_string_cmp(&self.topic, &other.topic)
            .then_with(|| java_string_cmp(&self.broker_name, &other.broker_name))
            .then_with(|| self.queue_id.cmp(&other.queue_id))
    }
}

impl PartialOrd for MessageQueue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for MessageQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}#{}", self.topic, self.broker_name, self.queue_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_like_java_compare_to() {
        let mut qs = [
            MessageQueue::new("b", "broker-a", 0),
            MessageQueue::new("a", "broker-b", 1),
            MessageQueue::new("a", "broker-b", 0),
            MessageQueue::new("a", "broker-a", 10),
            MessageQueue::new("a", "broker-a", 2),
        ];
        qs.sort();
        let got: Vec<String> = qs.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "a@broker-a#2",
                "a@broker-a#10",
                "a@broker-b#0",
                "a@broker-b#1",
                "b@broker-a#0"
            ]
        );
    }

    #[test]
    fn compares_strings_by_utf16_code_units() {
        // U+FF61 is above the surrogates in UTF-16 but below U+1F600 in UTF-8.
        let bmp = "\u{FF61}";
        let astral = "\u{1F600}";
        assert_eq!(java_string_cmp(bmp, astral), Ordering::Greater);
        assert_eq!(bmp.cmp(astral), Ordering::Less);
    }

    #[test]
    fn json_shape_matches_java() {
        let q = MessageQueue::new("T1", "broker-a", 3);
        assert_eq!(
            serde_json::to_string(&q).unwrap(),
            r#"{"topic":"T1","brokerName":"broker-a","queueId":3}"#
        );
    }
}
