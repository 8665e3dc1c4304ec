//! Messages: [`Message`] (what a producer sends), [`MessageExt`] (what the
//! broker stored and returns), the properties string, stored-message and
//! batch encodings, compression and message ids.
//!
//! (Stub: being filled in.)

use std::collections::HashMap;
use std::net::SocketAddr;

use bytes::Bytes;

/// A message to send: topic, body, user flag and properties (tags, keys,
/// delay level and user properties all live in the properties map, as in
/// Java).
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

/// A message as stored by the broker and returned by pulls.
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

impl std::ops::Deref for MessageExt {
    type Target = Message;

    fn deref(&self) -> &Message {
        &self.message
    }
}
