//! [`Message`] (what a producer sends: topic, body, flag, properties) and
//! [`MessageExt`] (what the broker stored and returns).

use std::net::{Ipv4Addr, SocketAddr};

use bytes::Bytes;

use crate::error::{Error, Result};

use super::{MAX_PROPERTIES_LEN, Properties, encode_properties, property, validate_properties};

/// A message to send: topic, body, user flag and properties (tags, keys,
/// delay level and user properties all live in the properties map, as in
/// Java).
///
/// Built by value: `Message::new(topic, body).with_tags(..).with_keys(..)`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// Topic name.
    pub topic: String,
    /// User flag (Java `Message.flag`), opaque to RocketMQ.
    pub flag: i32,
    /// Properties, system ones (`TAGS`, `KEYS`, `DELAY`, `UNIQ_KEY`, ...) included.
    /// A consumed message's are read in place from the pull response.
    pub properties: Properties,
    /// The body.
    pub body: Bytes,
}

impl Message {
    /// A message for `topic` with `body`, no flag and no properties.
    pub fn new(topic: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Message {
            topic: topic.into(),
            flag: 0,
            properties: Properties::new(),
            body: body.into(),
        }
    }

    /// Sets the tag ([`property::TAGS`]); consumers subscribe by tag.
    pub fn with_tags(self, tags: impl Into<String>) -> Self {
        self.with_property(property::TAGS, tags.into())
    }

    /// Sets the business keys ([`property::KEYS`]), joined by a single space
    /// as Java's `setKeys(Collection)` does. Keys must not contain spaces (they
    /// would split on read). An empty iterator removes the keys.
    pub fn with_keys<I, K>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = K>,
        K: AsRef<str>,
    {
        let mut joined = String::new();
        for k in keys {
            if !joined.is_empty() {
                joined.push_str(property::KEY_SEPARATOR);
            }
            joined.push_str(k.as_ref());
        }
        if joined.is_empty() {
            self.properties.remove(property::KEYS);
            self
        } else {
            self.with_property(property::KEYS, joined)
        }
    }

    /// Sets one business key ([`property::KEYS`]), replacing earlier keys:
    /// `with_keys([key])`.
    ///
    /// ```
    /// let msg = rmq_protocol::Message::new("orders", "x").with_key("order-42");
    /// assert_eq!(msg.keys().collect::<Vec<_>>(), ["order-42"]);
    /// ```
    pub fn with_key(self, key: impl AsRef<str>) -> Self {
        self.with_keys([key])
    }

    /// Delivers the message at `at` (a 5.x timer message,
    /// [`property::TIMER_DELIVER_MS`]), not before: consumers see it once
    /// the broker's timer reaches `at` (a broker's `timerPrecisionMs`,
    /// default 1 s, bounds how late). A time in the past delivers at once.
    /// Brokers older than 5.0 do not support it: the producer refuses such
    /// a send with an "unsupported" error instead of letting the broker
    /// deliver it at once. Replaces a delay level set before.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// let at = SystemTime::now() + Duration::from_secs(60);
    /// let msg = rmq_protocol::Message::new("reminders", "call back").deliver_at(at);
    /// let asked = msg.deliver_time().unwrap();
    /// assert!(asked <= at && at.duration_since(asked).unwrap() < Duration::from_millis(1));
    /// ```
    pub fn deliver_at(mut self, at: std::time::SystemTime) -> Self {
        let ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.properties.remove(property::DELAY);
        self.properties.remove(property::TIMER_DELAY_SEC);
        self.properties.remove(property::TIMER_DELAY_MS);
        self.with_property(property::TIMER_DELIVER_MS, ms.to_string())
    }

    /// Delivers the message `after` from now (a 5.x timer message, see
    /// [`Message::deliver_at`]): `deliver_at(SystemTime::now() + after)`,
    /// computed when this is called.
    ///
    /// ```
    /// use std::time::Duration;
    /// let msg = rmq_protocol::Message::new("reminders", "x").deliver_after(Duration::from_secs(30));
    /// assert!(msg.deliver_time().is_some());
    /// ```
    pub fn deliver_after(self, after: std::time::Duration) -> Self {
        let now = std::time::SystemTime::now();
        self.deliver_at(now.checked_add(after).unwrap_or(now))
    }

    /// When a timer message is to be delivered
    /// ([`property::TIMER_DELIVER_MS`]); `None` for other messages.
    pub fn deliver_time(&self) -> Option<std::time::SystemTime> {
        let ms: u64 = self
            .property(property::TIMER_DELIVER_MS)?
            .trim()
            .parse()
            .ok()?;
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(ms))
    }

    /// Whether the message asks for a 5.x timer (delivery-time) delivery:
    /// [`property::TIMER_DELIVER_MS`], [`property::TIMER_DELAY_SEC`] or
    /// [`property::TIMER_DELAY_MS`] is set.
    pub fn is_timer(&self) -> bool {
        [
            property::TIMER_DELIVER_MS,
            property::TIMER_DELAY_SEC,
            property::TIMER_DELAY_MS,
        ]
        .iter()
        .any(|p| self.properties.contains_key(p))
    }

    /// Sets a property (user or system), replacing an earlier value. Names and
    /// values must be non-empty and free of `0x01`/`0x02`; that is checked
    /// when the message is encoded.
    pub fn with_property<N, V>(mut self, name: N, value: V) -> Self
    where
        N: AsRef<str> + Into<String>,
        V: AsRef<str> + Into<String>,
    {
        self.set_property(name, value);
        self
    }

    /// Sets the delay level ([`property::DELAY`]): 1–18 with the broker's
    /// default `messageDelayLevel` (1 s … 2 h); 0 means no delay.
    pub fn with_delay_level(self, level: i32) -> Self {
        self.with_property(property::DELAY, level.to_string())
    }

    /// Sets the user flag.
    pub fn with_flag(mut self, flag: i32) -> Self {
        self.flag = flag;
        self
    }

    /// Sets a property in place (Java `MessageAccessor.putProperty`).
    pub fn set_property<N, V>(&mut self, name: N, value: V)
    where
        N: AsRef<str> + Into<String>,
        V: AsRef<str> + Into<String>,
    {
        self.properties.insert(name, value);
    }

    /// Removes a property, returning its value.
    pub fn remove_property(&mut self, name: &str) -> Option<String> {
        self.properties.remove(name)
    }

    /// A property's value.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties.get(name)
    }

    /// The tag ([`property::TAGS`]).
    pub fn tags(&self) -> Option<&str> {
        self.property(property::TAGS)
    }

    /// The business keys ([`property::KEYS`] split on spaces; empty pieces skipped).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.property(property::KEYS)
            .unwrap_or("")
            .split(property::KEY_SEPARATOR)
            .filter(|k| !k.is_empty())
    }

    /// The delay level ([`property::DELAY`]); `None` when absent or not a
    /// number (Java: absent = 0).
    pub fn delay_level(&self) -> Option<i32> {
        self.property(property::DELAY)?.trim().parse().ok()
    }

    /// The client message id ([`property::UNIQ_KEY`]).
    pub fn unique_key(&self) -> Option<&str> {
        self.property(property::UNIQ_KEY)
    }

    /// Whether the broker should answer only once the message is stored
    /// ([`property::WAIT`]; absent means `true`, as in Java).
    pub fn wait_store_msg_ok(&self) -> bool {
        self.property(property::WAIT) != Some("false")
    }

    /// The properties string (Java `MessageDecoder.messageProperties2String`) for the send header.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] if a property is invalid (see [`validate_properties`])
    /// or the string exceeds [`MAX_PROPERTIES_LEN`] bytes (the broker would
    /// answer `PROPERTIES_SIZE_EXCEEDED`).
    pub fn properties_string(&self) -> Result<String> {
        validate_properties(&self.properties)?;
        let s = encode_properties(&self.properties);
        if s.len() > MAX_PROPERTIES_LEN {
            return Err(Error::Encode(format!(
                "the message's properties take {} bytes, more than the limit of \
                 {MAX_PROPERTIES_LEN}; shorten or drop some properties",
                s.len()
            )));
        }
        Ok(s)
    }
}

/// A message as stored by the broker and returned by pulls.
///
/// Dereferences to its [`Message`], so `ext.tags()`, `ext.body` and
/// `ext.set_property(..)` work directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageExt {
    /// Topic, flag, properties and (decompressed) body.
    pub message: Message,
    /// Broker name of the queue it was pulled from (set by the consumer; empty after decoding).
    pub broker_name: String,
    /// Queue id.
    pub queue_id: i32,
    /// Size of the stored record in bytes.
    pub store_size: i32,
    /// Offset in the consume queue.
    pub queue_offset: i64,
    /// System flag (compression bit cleared after decompression).
    pub sys_flag: i32,
    /// Producer timestamp, ms since the epoch ([`born_time`](Self::born_time)
    /// as a `SystemTime`).
    pub born_timestamp: i64,
    /// Producer address as the broker saw it.
    pub born_host: SocketAddr,
    /// Broker timestamp, ms since the epoch ([`store_time`](Self::store_time)
    /// as a `SystemTime`).
    pub store_timestamp: i64,
    /// Broker address.
    pub store_host: SocketAddr,
    /// Commit-log (physical) offset.
    pub commit_log_offset: i64,
    /// CRC of the stored body.
    pub body_crc: i32,
    /// Number of previous deliveries via retry.
    pub reconsume_times: i32,
    /// Prepared-transaction offset.
    pub prepared_transaction_offset: i64,
    /// Message id as applications see it: `UNIQ_KEY` if present, else the offset id.
    pub msg_id: String,
    /// Offset message id: store host + commit-log offset, upper-case hex.
    pub offset_msg_id: String,
}

impl Default for MessageExt {
    /// An empty message: zero numbers, hosts `0.0.0.0:0`, empty ids (useful
    /// with struct-update syntax in tests).
    fn default() -> Self {
        let nowhere = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0);
        MessageExt {
            message: Message::default(),
            broker_name: String::new(),
            queue_id: 0,
            store_size: 0,
            queue_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: nowhere,
            store_timestamp: 0,
            store_host: nowhere,
            commit_log_offset: 0,
            body_crc: 0,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            msg_id: String::new(),
            offset_msg_id: String::new(),
        }
    }
}

impl MessageExt {
    /// When the producer made the message ([`born_timestamp`](Self::born_timestamp)
    /// as a `SystemTime`; a negative timestamp reads as the epoch).
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// let m = rmq_protocol::MessageExt { born_timestamp: 1_500, ..Default::default() };
    /// assert_eq!(m.born_time(), UNIX_EPOCH + Duration::from_millis(1_500));
    /// ```
    pub fn born_time(&self) -> std::time::SystemTime {
        epoch_ms(self.born_timestamp)
    }

    /// When the broker stored the message ([`store_timestamp`](Self::store_timestamp)
    /// as a `SystemTime`; a negative timestamp reads as the epoch).
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// let m = rmq_protocol::MessageExt { store_timestamp: 1_700_000_000_000, ..Default::default() };
    /// let age = SystemTime::now().duration_since(m.store_time()).unwrap_or(Duration::ZERO);
    /// assert!(age > Duration::from_secs(3600));
    /// ```
    pub fn store_time(&self) -> std::time::SystemTime {
        epoch_ms(self.store_timestamp)
    }
}

/// `ms` since the epoch as a `SystemTime` (negative: the epoch).
fn epoch_ms(ms: i64) -> std::time::SystemTime {
    let ms = u64::try_from(ms).unwrap_or(0);
    std::time::UNIX_EPOCH
        .checked_add(std::time::Duration::from_millis(ms))
        .unwrap_or(std::time::UNIX_EPOCH)
}

impl std::ops::Deref for MessageExt {
    type Target = Message;

    fn deref(&self) -> &Message {
        &self.message
    }
}

impl std::ops::DerefMut for MessageExt {
    fn deref_mut(&mut self) -> &mut Message {
        &mut self.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_and_getters() {
        let m = Message::new("t", "body")
            .with_tags("tag-a")
            .with_keys(["k1", "k2", "k3"])
            .with_property("color", "red")
            .with_delay_level(3)
            .with_flag(9);
        assert_eq!(m.topic, "t");
        assert_eq!(&m.body[..], b"body");
        assert_eq!(m.flag, 9);
        assert_eq!(m.tags(), Some("tag-a"));
        assert_eq!(m.property(property::KEYS), Some("k1 k2 k3"));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["k1", "k2", "k3"]);
        assert_eq!(m.delay_level(), Some(3));
        assert_eq!(m.property("color"), Some("red"));
        assert_eq!(m.unique_key(), None);
        assert!(m.wait_store_msg_ok());
        let m = m
            .with_property(property::WAIT, "false")
            .with_keys(Vec::<String>::new());
        assert!(!m.wait_store_msg_ok());
        assert_eq!(m.keys().count(), 0);
        assert_eq!(m.property(property::KEYS), None);
    }

    #[test]
    fn keys_split_like_java() {
        let m = Message::new("t", "").with_property(property::KEYS, " a  b ");
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b"]);
        let m = Message::new("t", "").with_property(property::DELAY, "x");
        assert_eq!(m.delay_level(), None);
    }

    #[test]
    fn properties_string_checks() {
        let m = Message::new("t", "").with_tags("a").with_property("k", "v");
        assert_eq!(
            m.properties_string().unwrap(),
            "TAGS\u{1}a\u{2}k\u{1}v\u{2}"
        );
        assert!(
            Message::new("t", "")
                .with_tags("")
                .properties_string()
                .is_err()
        );
        assert!(
            Message::new("t", "")
                .with_property("k", "x".repeat(MAX_PROPERTIES_LEN))
                .properties_string()
                .is_err()
        );
    }

    #[test]
    fn message_ext_deref_mut() {
        let mut ext = MessageExt::default();
        ext.set_property(property::MIN_OFFSET, "3");
        assert_eq!(ext.property(property::MIN_OFFSET), Some("3"));
        assert_eq!(
            ext.remove_property(property::MIN_OFFSET).as_deref(),
            Some("3")
        );
    }
}
