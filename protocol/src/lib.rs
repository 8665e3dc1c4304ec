//! The Apache RocketMQ remoting protocol, client side, without I/O.
//!
//! * [`RemotingCommand`] and its [`RemotingCodec`] (a tokio-util
//!   `Decoder`/`Encoder`) for the frame, with both JSON and ROCKETMQ binary
//!   headers;
//! * [`RequestCode`] / [`ResponseCode`] and a typed header struct for every
//!   request the client sends or receives ([`header`]);
//! * [`Message`] / [`MessageExt`] encoding and the stored-message decoder
//!   used for pull responses ([`message`]);
//! * the JSON bodies (route data, heartbeat, consumer list, locks), including
//!   the broker's non-standard JSON ([`body`]);
//! * [`MessageQueue`], ordered like Java's `MessageQueue.compareTo`;
//! * the topic and group name rules, retry and dead-letter topics
//!   ([`names`]), and their namespaces ([`namespace`]).
//!
//! This crate never performs I/O, spawns tasks or reads clocks: every value
//! that depends on time is passed in by the caller.
#![warn(missing_docs)]

pub mod body;
mod chain;
mod code;
mod codec;
mod command;
mod error;
pub mod header;
pub mod message;
pub mod names;
pub mod namespace;
pub mod pop;
mod queue;
mod time;
pub mod trace;
mod version;

pub use chain::ErrorChain;
pub use code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
pub use codec::{DEFAULT_MAX_FRAME_LEN, RawCodec, RawCommand, RemotingCodec};
pub use command::{FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand};
pub use error::{Error, Result};
pub use message::{Message, MessageExt, Properties};
pub use queue::{MessageQueue, java_string_cmp};
pub use time::epoch_millis;
pub use version::BrokerVersion;
