//! Messages: [`Message`] (what a producer sends), [`MessageExt`] (what the
//! broker stored and returns), the properties string, stored-message and
//! batch encodings, compression and message ids (remoting-protocol.md §4).
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`Message`] builder and getters, [`MessageExt`] |
//! | `property.rs` | [`property`] names (`TAGS`, `KEYS`, `UNIQ_KEY`, ...) |
//! | `sys_flag.rs` | [`sys_flag`] bits |
//! | `properties.rs` | the properties string: [`encode_properties`], [`decode_properties`] |
//! | `decode.rs` | stored messages: [`decode_messages`], [`decode_message`], [`unwrap_inner_batch`] |
//! | `encode.rs` | [`encode_stored_message`], [`encode_stored_record`] (raw fields, body as stored), for tests, fake brokers and tools |
//! | `batch.rs` | SEND_BATCH_MESSAGE bodies: [`encode_batch`], [`decode_batch`] |
//! | `compress.rs` | [`CompressionType`], [`compress_body`], bounded decompression |
//! | `id.rs` | [`offset_msg_id`], [`parse_offset_msg_id`], [`UniqIdGenerator`] |
//! | `crc.rs` | [`body_crc`] |
//!
//! ```
//! use rmq_protocol::message::{self, Message, MessageExt, MessageVersion, property};
//!
//! let msg = Message::new("orders", "hello")
//!     .with_tags("created")
//!     .with_keys(["order-42", "customer-7"])
//!     .with_property(property::UNIQ_KEY, "7F0000010001000000000000000A0000");
//! assert_eq!(msg.tags(), Some("created"));
//! assert_eq!(msg.keys().collect::<Vec<_>>(), ["order-42", "customer-7"]);
//!
//! // What a broker would return for it in a pull body:
//! let stored = MessageExt { message: msg.clone(), queue_offset: 5, ..MessageExt::default() };
//! let body = message::encode_stored_message(&stored, MessageVersion::V1, None)?;
//! let pulled = message::decode_messages(&body)?;
//! assert_eq!(pulled[0].message, msg);
//! assert_eq!(pulled[0].msg_id, "7F0000010001000000000000000A0000");
//! # Ok::<(), rmq_protocol::Error>(())
//! ```
//!
//! # Decoding stored messages
//!
//! * Every length is checked against the bytes present. A record's
//!   TOTALSIZE must fit in the bytes left and cover every field read from it;
//!   bytes between the last field and TOTALSIZE are skipped (a broker writes
//!   none; Java ignores TOTALSIZE and would lose sync instead). The next
//!   record starts at TOTALSIZE.
//! * A magic code other than V1 (`0xDAA320A7`, 1-byte topic length) or V2
//!   (`0xDAA320AB`, 2-byte topic length) is an error. Java silently returns
//!   the messages decoded so far; [`decode_messages`] reports the problem
//!   (use [`StoredMessages`] to keep the records before a bad one).
//! * Born/store hosts are IPv6 when sysFlag bit 4/5 is set.
//! * A body with sysFlag bit 0 is decompressed (codec from bits 8–10) up to
//!   [`DecodeOptions::max_body_size`], and bit 0 is cleared. Java does the same,
//!   and leaves an empty body (and its sysFlag) alone.
//! * Uncompressed bodies are zero-copy `Bytes` slices of the input.
//! * Topic and properties must be UTF-8 (Java would replace bad bytes).
//! * `msg_id` is the `UNIQ_KEY` property if present, else the offset id.
//! * 5.x inner-batch containers (sysFlag `INNER_BATCH | NEED_UNWRAP`) are
//!   replaced by their messages in [`decode_messages`], as the Java client's
//!   `PullAPIWrapper` does (turn off with
//!   [`DecodeOptions::unwrap_inner_batch`]; [`decode_message`] and
//!   [`StoredMessages`] never unwrap, [`unwrap_inner_batch`] does it on demand).
//! * The caller applies what the pull response adds: `offsetDelta`,
//!   `MIN_OFFSET`/`MAX_OFFSET`, broker name and queue id, tag re-check.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};

use bytes::Bytes;

use crate::error::{Error, Result};

mod batch;
mod compress;
mod crc;
mod decode;
mod encode;
mod id;
mod properties;
pub mod property;
mod reader;
pub mod sys_flag;

pub use batch::{decode_batch, encode_batch};
pub use compress::{
    CompressionType, DEFAULT_COMPRESS_LEVEL, DEFAULT_COMPRESS_OVER, DEFAULT_MAX_BODY_SIZE,
    compress_body,
};
pub use crc::body_crc;
pub use decode::{
    DEFAULT_MAX_TOTAL_DECOMPRESSED, DecodeOptions, MAGIC_CODE_V1, MAGIC_CODE_V2,
    MIN_STORED_RECORD_LEN, MessageVersion, StoredMessages, decode_message, decode_message_with,
    decode_messages, decode_messages_with, unwrap_inner_batch,
};
pub use encode::{StoredRecord, encode_stored_message, encode_stored_record};
pub use id::{UniqIdGenerator, ms_since_month_start, offset_msg_id, parse_offset_msg_id};
pub use properties::{
    MAX_PROPERTIES_LEN, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, decode_properties,
    encode_properties, validate_properties, validate_property,
};

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
    pub properties: HashMap<String, String>,
    /// The body.
    pub body: Bytes,
}

impl Message {
    /// A message for `topic` with `body`, no flag and no properties.
    pub fn new(topic: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Message {
            topic: topic.into(),
            flag: 0,
            properties: HashMap::new(),
            body: body.into(),
        }
    }

    /// Sets the tag ([`property::TAGS`]); consumers subscribe by tag.
    pub fn with_tags(self, tags: impl Into<String>) -> Self {
        self.with_property(property::TAGS, tags)
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

    /// Sets a property (user or system), replacing an earlier value. Names and
    /// values must be non-empty and free of `0x01`/`0x02`; that is checked
    /// when the message is encoded.
    pub fn with_property(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
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
    pub fn set_property(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.properties.insert(name.into(), value.into());
    }

    /// Removes a property, returning its value.
    pub fn remove_property(&mut self, name: &str) -> Option<String> {
        self.properties.remove(name)
    }

    /// A property's value.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties.get(name).map(String::as_str)
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

    /// The properties string (remoting-protocol.md §4.7) for the send header.
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
    /// Producer timestamp, ms since the epoch.
    pub born_timestamp: i64,
    /// Producer address as the broker saw it.
    pub born_host: SocketAddr,
    /// Broker timestamp, ms since the epoch.
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
