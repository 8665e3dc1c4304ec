//! Messages: [`Message`] (what a producer sends), [`MessageExt`] (what the
//! broker stored and returns), the properties string, stored-message and
//! batch encodings, compression and message ids.
//!
//! | file | what |
//! |---|---|
//! | `model.rs` | [`Message`] builder and getters, [`MessageExt`] |
//! | `property.rs` | [`property`] names (`TAGS`, `KEYS`, `UNIQ_KEY`, ...) |
//! | `sys_flag.rs` | [`sys_flag`] bits |
//! | `properties.rs` | the properties string: [`encode_properties`], [`decode_properties`] |
//! | `map/` | [`Properties`]: the pairs of one message, read in place from its properties string ([`SharedValue`], [`PropertiesIter`]) |
//! | `decode.rs` | stored messages: [`decode_messages`], [`decode_message`], [`unwrap_inner_batch`] |
//! | `encode.rs` | [`encode_stored_message`], [`encode_stored_record`] (raw fields, body as stored), for tests, fake brokers and tools |
//! | `batch.rs` | SEND_BATCH_MESSAGE bodies: [`encode_batch`], [`decode_batch`] |
//! | `compress.rs` | [`CompressionType`], [`compress_body`], bounded decompression |
//! | `id.rs` | [`offset_msg_id`], [`parse_offset_msg_id`], [`UniqIdGenerator`] |
//! | `id_v1.rs` | [`MessageIdV1Generator`]: the version-1 ids of the 5.x gRPC clients |
//! | `types.rs` | [`MessageType`], priority and lite topic ([`Message::with_priority`], [`Message::with_lite_topic`]), [`check_types`] |
//! | `recall.rs` | [`RecallHandle`]: the recall handle of a timer message |
//! | `reply.rs` | request-reply: [`create_reply_message`], [`reply_topic`] |
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

mod batch;
mod compress;
mod crc;
mod decode;
mod encode;
mod id;
mod id_v1;
mod map;
mod model;
mod properties;
pub mod property;
mod reader;
mod recall;
mod reply;
pub mod sys_flag;
mod types;

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
pub use id_v1::{
    MESSAGE_ID_V1_EPOCH_MS, MESSAGE_ID_V1_LEN, MESSAGE_ID_V1_PREFIX, MessageIdV1Generator,
    is_message_id_v1,
};
pub use map::{Iter as PropertiesIter, Properties, SharedValue};
pub use model::{Message, MessageExt};
pub use properties::{
    MAX_PROPERTIES_LEN, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, decode_properties,
    encode_properties, find_property, validate_properties, validate_property,
};
pub use recall::RecallHandle;
pub use reply::{
    REPLY_MESSAGE_FLAG, REPLY_TOPIC_SUFFIX, create_reply_message, is_reply, is_request, reply_topic,
};
pub use types::{
    MAX_LITE_TOPIC_LEN, MessageType, TypeError, check_lite_topic, check_types, priority_of,
};
