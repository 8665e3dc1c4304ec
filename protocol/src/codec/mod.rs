//! [`RemotingCodec`]: the tokio-util `Decoder`/`Encoder` for remoting frames.
//!
//! A frame is
//!
//! ```text
//! +-----------+-----------------+--------------+------------+
//! | total_len | header word     | header       | body       |
//! | i32 BE    | u32 BE          | header_len   | the rest   |
//! +-----------+-----------------+--------------+------------+
//!              top byte: serialize type (0 JSON, 1 ROCKETMQ)
//!              low 24 bits: header_len
//! ```
//!
//! `total_len` counts everything after itself (`4 + header_len + body_len`).
//!
//! | file | what |
//! |---|---|
//! | `frame.rs` | the frame layout, [`RemotingCodec`], decoding frames, the header dispatch |
//! | `encode.rs` | encoding frames (the `Encoder` impls, pre-encoded JSON ext fields) |
//! | `json.rs` | JSON headers (Java's `RemotingSerializable`) |
//! | `binary.rs` | ROCKETMQ binary headers (Java's `RocketMQSerializable`) |
//! | `raw.rs` | [`RawCommand`] and [`RawCodec`]: ext fields read on demand |
//! | `json_scan.rs` | the fast reader of the JSON headers brokers write (ext fields as positions) |

mod binary;
mod encode;
mod frame;
mod json;
mod json_scan;
mod raw;
#[cfg(test)]
mod testing;

use frame::HeaderFields;
pub(crate) use json::put_str as put_json_str;

pub use frame::{DEFAULT_MAX_FRAME_LEN, RemotingCodec};
pub use raw::{RawCodec, RawCommand};
