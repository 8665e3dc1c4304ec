//! The recall handle of a 5.x timer message (Java `RecallMessageHandle`):
//! what a send result carries so that the message can be recalled before
//! its delivery time (RECALL_MESSAGE, RocketMQ 5.3.2+).

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};

use crate::error::{Error, Result};

/// The only handle version there is (Java `RecallMessageHandle.VERSION_1`).
const VERSION_1: &str = "v1";

/// A decoded recall handle, version 1: the URL-safe Base64 (with padding)
/// of `v1 <topic> <broker name> <timestamp> <message id>`, joined by single
/// spaces (Java `RecallMessageHandle.HandleV1`). The broker makes it when
/// it stores a timer message ([`encode`](Self::encode)); a producer reads
/// the broker name from it ([`decode`](Self::decode)) to know where to send
/// the recall. Any client may recall with it.
///
/// ```
/// use rmq_protocol::message::RecallHandle;
///
/// let handle = RecallHandle {
///     topic: "orders".into(),
///     broker_name: "broker-a".into(),
///     timestamp: "1735689600001".into(),
///     message_id: "7F00000100002A9F0000000000000010".into(),
/// };
/// let text = handle.encode();
/// assert_eq!(RecallHandle::decode(&text)?, handle);
/// assert!(RecallHandle::decode("not a handle").is_err());
/// # Ok::<(), rmq_protocol::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecallHandle {
    /// The topic the message was sent to.
    pub topic: String,
    /// The broker that stores it.
    pub broker_name: String,
    /// When the broker's timer delivers it (ms since the epoch, plus one),
    /// as the broker wrote it.
    pub timestamp: String,
    /// The message's `UNIQ_KEY`.
    pub message_id: String,
}

impl RecallHandle {
    /// Decodes a handle as the broker and the Java client do (Java
    /// `RecallMessageHandle.decodeHandle`): URL-safe Base64 (padding
    /// optional), then at least five space-separated parts, the first
    /// `v1`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMessage`] (the broker answers such a handle with
    /// ILLEGAL_OPERATION `recall handle is invalid`).
    pub fn decode(handle: &str) -> Result<RecallHandle> {
        let invalid = |why: &str| {
            Error::InvalidMessage(format!(
                "recall handle {handle:?} is invalid: {why}; use the recall_handle of the \
                 send result of a timer message"
            ))
        };
        if handle.is_empty() {
            return Err(invalid("it is empty"));
        }
        let raw = URL_SAFE
            .decode(handle)
            .or_else(|_| URL_SAFE_NO_PAD.decode(handle))
            .map_err(|_| invalid("not URL-safe Base64"))?;
        let text = String::from_utf8(raw).map_err(|_| invalid("not UTF-8"))?;
        let parts: Vec<&str> = text.split(' ').collect();
        match parts.as_slice() {
            [version, topic, broker, timestamp, id, ..] if *version == VERSION_1 => {
                Ok(RecallHandle {
                    topic: (*topic).to_owned(),
                    broker_name: (*broker).to_owned(),
                    timestamp: (*timestamp).to_owned(),
                    message_id: (*id).to_owned(),
                })
            }
            [version, ..] if *version != VERSION_1 => {
                Err(invalid(&format!("unknown version {version:?}")))
            }
            _ => Err(invalid("fewer than five parts")),
        }
    }

    /// The handle's text (Java `HandleV1.buildHandle`).
    pub fn encode(&self) -> String {
        let raw = [
            VERSION_1,
            self.topic.as_str(),
            self.broker_name.as_str(),
            self.timestamp.as_str(),
            self.message_id.as_str(),
        ]
        .join(" ");
        URL_SAFE.encode(raw)
    }

    /// When the broker's timer delivers the message, in ms since the epoch
    /// (the timestamp minus the one the broker added); `None` when it is
    /// not a number.
    pub fn deliver_time_ms(&self) -> Option<i64> {
        self.timestamp.parse::<i64>().ok().map(|t| t - 1)
    }
}

impl fmt::Display for RecallHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_vectors() {
        // Java: HandleV1.buildHandle("T", "broker-a", "1700000000001", "ID")
        // = Base64.getUrlEncoder() of "v1 T broker-a 1700000000001 ID".
        let h = RecallHandle {
            topic: "T".into(),
            broker_name: "broker-a".into(),
            timestamp: "1700000000001".into(),
            message_id: "ID".into(),
        };
        assert_eq!(h.encode(), "djEgVCBicm9rZXItYSAxNzAwMDAwMDAwMDAxIElE");
        assert_eq!(h.deliver_time_ms(), Some(1_700_000_000_000));
        // Padding, with and without.
        let p = RecallHandle {
            message_id: "IDX".into(),
            ..h.clone()
        };
        let text = p.encode();
        assert!(text.ends_with('='), "{text}");
        assert_eq!(RecallHandle::decode(&text).unwrap(), p);
        assert_eq!(RecallHandle::decode(text.trim_end_matches('=')).unwrap(), p);
        assert_eq!(h.to_string(), h.encode());
    }

    #[test]
    fn invalid_handles() {
        let enc = |s: &str| URL_SAFE.encode(s);
        for (bad, why) in [
            (String::new(), "empty"),
            ("%%%".to_owned(), "Base64"),
            (enc("v2 T b 1 id"), "version"),
            (enc("v1 T b 1"), "five parts"),
            (URL_SAFE.encode([0xff, 0xfe]), "UTF-8"),
        ] {
            let e = RecallHandle::decode(&bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        // More parts than five: the first five count (Java too).
        let h = RecallHandle::decode(&enc("v1 T b 1 id extra")).unwrap();
        assert_eq!(h.message_id, "id");
    }
}
