//! Typed command headers and their conversion to and from ext fields.
//!
//! Every request header the client sends or receives is a struct
//! implementing [`CommandHeader`]. Field names on the wire are the Java
//! field names; numbers and booleans travel as decimal text and
//! `true`/`false` (Java `toString()`), optional fields are omitted when
//! `None`. Required Java fields are plain Rust types (reading fails with
//! [`Error::MissingField`] when absent), optional ones are `Option`s. The
//! common optional `bname` field is `broker_name` where the Java client
//! fills it.
//!
//! ```
//! use rmq_protocol::header::{PullMessageRequestHeader, pull_sys_flag};
//! use rmq_protocol::{RemotingCommand, RequestCode};
//!
//! let header = PullMessageRequestHeader {
//!     consumer_group: "G1".into(),
//!     topic: "T1".into(),
//!     max_msg_nums: 32,
//!     sys_flag: pull_sys_flag::SUSPEND,
//!     suspend_timeout_millis: 15_000,
//!     broker_name: Some("broker-a".into()),
//!     ..Default::default()
//! };
//! let cmd = RemotingCommand::request(RequestCode::PULL_MESSAGE, &header);
//! assert_eq!(cmd.ext_field("maxMsgNums"), Some("32"));
//! assert_eq!(cmd.ext_field("bname"), Some("broker-a"));
//! assert_eq!(cmd.decode_header::<PullMessageRequestHeader>()?, header);
//! # Ok::<(), rmq_protocol::Error>(())
//! ```

use std::collections::HashMap;

use crate::error::{Error, Result};

#[macro_use]
mod macros;

mod admin;
mod admin_ops;
mod broker_request;
mod consumer;
mod offset;
mod pull;
mod query;
mod route;
mod send;

pub use admin::CreateTopicRequestHeader;
pub use admin_ops::{
    DeleteSubscriptionGroupRequestHeader, DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader, GetConsumeStatsRequestHeader, GetTopicStatsInfoRequestHeader,
};
pub use broker_request::{
    CheckTransactionStateRequestHeader, ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader, GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader, ResetOffsetRequestHeader,
};
pub use consumer::{
    ConsumerSendMsgBackRequestHeader, GetConsumerListByGroupRequestHeader,
    UnregisterClientRequestHeader,
};
pub use offset::{
    BoundaryType, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
pub use pull::{PullMessageRequestHeader, PullMessageResponseHeader, pull_sys_flag};
pub use query::{
    QueryMessageRequestHeader, QueryMessageResponseHeader, UNIQUE_KEY_QUERY_FLAG,
    ViewMessageRequestHeader,
};
pub use route::GetRouteInfoRequestHeader;
pub use send::{
    EndTransactionRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
};

/// The ext-field map of a command.
pub type ExtFields = HashMap<String, String>;

/// A typed view of a command's ext fields.
pub trait CommandHeader: Sized {
    /// Writes every non-`None` field into `fields`.
    fn write_to(&self, fields: &mut ExtFields);

    /// Reads the header back.
    ///
    /// # Errors
    ///
    /// [`Error::MissingField`] when a required field is absent,
    /// [`Error::InvalidField`] when a value does not parse.
    fn read_from(fields: &ExtFields) -> Result<Self>;

    /// The header as a fresh map.
    fn to_ext_fields(&self) -> ExtFields {
        let mut fields = ExtFields::new();
        self.write_to(&mut fields);
        fields
    }
}

/// A header with no fields of its own (e.g. HEART_BEAT, LOCK_BATCH_MQ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmptyHeader;

impl CommandHeader for EmptyHeader {
    fn write_to(&self, _fields: &mut ExtFields) {}

    fn read_from(_fields: &ExtFields) -> Result<Self> {
        Ok(EmptyHeader)
    }
}

/// Parses a boolean the way Java's `Boolean.parseBoolean` does:
/// case-insensitive `"true"` is true, anything else false.
pub(crate) fn parse_java_bool(v: &str) -> bool {
    v.eq_ignore_ascii_case("true")
}

/// One value type a header field can hold, with its Java text form.
pub(crate) trait HeaderValue: Sized {
    /// The value as Java's `toString()` writes it.
    fn to_wire(&self) -> String;
    /// Parses the wire text of field `key`.
    fn from_wire(key: &'static str, text: &str) -> Result<Self>;
}

impl HeaderValue for String {
    fn to_wire(&self) -> String {
        self.clone()
    }

    fn from_wire(_key: &'static str, text: &str) -> Result<Self> {
        Ok(text.to_owned())
    }
}

impl HeaderValue for bool {
    fn to_wire(&self) -> String {
        self.to_string()
    }

    fn from_wire(_key: &'static str, text: &str) -> Result<Self> {
        Ok(parse_java_bool(text))
    }
}

macro_rules! number_header_value {
    ($($t:ty),*) => {$(
        impl HeaderValue for $t {
            fn to_wire(&self) -> String {
                self.to_string()
            }

            fn from_wire(key: &'static str, text: &str) -> Result<Self> {
                text.trim().parse().map_err(|_| Error::InvalidField {
                    field: key,
                    value: text.to_owned(),
                })
            }
        }
    )*};
}

number_header_value!(i32, i64);

/// A header struct field: a required value (`T`) or an optional one
/// (`Option<T>`, omitted from the wire when `None`).
pub(crate) trait HeaderField: Sized {
    /// Writes the field under `key` (nothing for `None`).
    fn write_field(&self, fields: &mut ExtFields, key: &'static str);
    /// Reads the field from `key`.
    fn read_field(fields: &ExtFields, key: &'static str) -> Result<Self>;
}

impl<T: HeaderValue> HeaderField for T {
    fn write_field(&self, fields: &mut ExtFields, key: &'static str) {
        fields.insert(key.to_owned(), self.to_wire());
    }

    fn read_field(fields: &ExtFields, key: &'static str) -> Result<Self> {
        let text = fields.get(key).ok_or(Error::MissingField { field: key })?;
        T::from_wire(key, text)
    }
}

impl<T: HeaderValue> HeaderField for Option<T> {
    fn write_field(&self, fields: &mut ExtFields, key: &'static str) {
        if let Some(v) = self {
            fields.insert(key.to_owned(), v.to_wire());
        }
    }

    fn read_field(fields: &ExtFields, key: &'static str) -> Result<Self> {
        fields
            .get(key)
            .map(|text| T::from_wire(key, text))
            .transpose()
    }
}
