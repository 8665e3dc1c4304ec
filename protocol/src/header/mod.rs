//! Typed command headers and their conversion to and from ext fields.
//!
//! Every request header the client sends or receives is a struct
//! implementing [`CommandHeader`]. Field names on the wire are the Java
//! field names; numbers and booleans travel as decimal text and
//! `true`/`false` (Java `toString()`), optional fields are omitted when
//! `None`. Required Java fields are plain Rust types (reading fails with
//! [`Error::MissingField`](crate::Error::MissingField) when absent), optional ones are `Option`s. The
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

#[macro_use]
mod macros;

mod admin;
mod admin_ops;
mod broker_request;
mod consumer;
mod fields;
mod offset;
mod pop;
mod pull;
mod query;
mod recall;
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
pub use pop::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader, PopMessageResponseHeader,
};
pub use pull::{PullMessageRequestHeader, PullMessageResponseHeader, pull_sys_flag};
pub use query::{
    QueryMessageRequestHeader, QueryMessageResponseHeader, UNIQUE_KEY_QUERY_FLAG,
    ViewMessageRequestHeader,
};
pub use recall::{
    RecallMessageRequestHeader, RecallMessageResponseHeader, ReplyMessageRequestHeader,
};
pub use route::GetRouteInfoRequestHeader;
pub use send::{
    EndTransactionRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
};

pub use fields::{CommandHeader, EmptyHeader, ExtFields, FieldSource};
pub(crate) use fields::{HeaderField, HeaderValue, plain_json_key};
