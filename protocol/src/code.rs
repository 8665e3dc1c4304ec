//! Request codes, response codes, language codes and header serialize types.
//!
//! Codes are open sets: a code this crate does not know is carried as is and
//! never rejected, so the newtypes below wrap the raw `i32` and name the
//! values the Java client defines (Java `RequestCode` / `ResponseCode`).

use std::fmt;

macro_rules! code_table {
    (
        $(#[$meta:meta])*
        $ty:ident {
            $( $(#[$cmeta:meta])* $name:ident = $value:expr, $retry:expr; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $ty(pub i32);

        impl $ty {
            $( $(#[$cmeta])* pub const $name: $ty = $ty($value); )*

            /// The Java constant's name, or `None` for a code this crate does not know.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($name)), )*
                    _ => None,
                }
            }

            #[allow(dead_code)]
            fn table_retryable(self) -> bool {
                match self.0 {
                    $( $value => $retry, )*
                    _ => false,
                }
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => write!(f, "{}({})", n, self.0),
                    None => write!(f, "{}({})", stringify!($ty), self.0),
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }

        impl From<i32> for $ty {
            fn from(v: i32) -> Self { $ty(v) }
        }

        impl From<$ty> for i32 {
            fn from(v: $ty) -> i32 { v.0 }
        }
    };
}

code_table! {
    /// A request code (Java `RequestCode`).
    RequestCode {
        /// SEND_MESSAGE (V1 header names).
        SEND_MESSAGE = 10, false;
        /// PULL_MESSAGE.
        PULL_MESSAGE = 11, false;
        /// QUERY_MESSAGE.
        QUERY_MESSAGE = 12, false;
        /// QUERY_CONSUMER_OFFSET.
        QUERY_CONSUMER_OFFSET = 14, false;
        /// UPDATE_CONSUMER_OFFSET.
        UPDATE_CONSUMER_OFFSET = 15, false;
        /// UPDATE_AND_CREATE_TOPIC (admin; used by tests and tools).
        UPDATE_AND_CREATE_TOPIC = 17, false;
        /// GET_ALL_TOPIC_CONFIG.
        GET_ALL_TOPIC_CONFIG = 21, false;
        /// GET_BROKER_RUNTIME_INFO (admin).
        GET_BROKER_RUNTIME_INFO = 28, false;
        /// SEARCH_OFFSET_BY_TIMESTAMP.
        SEARCH_OFFSET_BY_TIMESTAMP = 29, false;
        /// GET_MAX_OFFSET.
        GET_MAX_OFFSET = 30, false;
        /// GET_MIN_OFFSET.
        GET_MIN_OFFSET = 31, false;
        /// GET_EARLIEST_MSG_STORETIME.
        GET_EARLIEST_MSG_STORETIME = 32, false;
        /// VIEW_MESSAGE_BY_ID.
        VIEW_MESSAGE_BY_ID = 33, false;
        /// HEART_BEAT.
        HEART_BEAT = 34, false;
        /// UNREGISTER_CLIENT.
        UNREGISTER_CLIENT = 35, false;
        /// CONSUMER_SEND_MSG_BACK.
        CONSUMER_SEND_MSG_BACK = 36, false;
        /// END_TRANSACTION.
        END_TRANSACTION = 37, false;
        /// GET_CONSUMER_LIST_BY_GROUP.
        GET_CONSUMER_LIST_BY_GROUP = 38, false;
        /// CHECK_TRANSACTION_STATE (broker → client).
        CHECK_TRANSACTION_STATE = 39, false;
        /// NOTIFY_CONSUMER_IDS_CHANGED (broker → client).
        NOTIFY_CONSUMER_IDS_CHANGED = 40, false;
        /// LOCK_BATCH_MQ.
        LOCK_BATCH_MQ = 41, false;
        /// UNLOCK_BATCH_MQ.
        UNLOCK_BATCH_MQ = 42, false;
        /// CHECK_CLIENT_CONFIG.
        CHECK_CLIENT_CONFIG = 46, false;
        /// GET_ROUTEINFO_BY_TOPIC (name server).
        GET_ROUTEINFO_BY_TOPIC = 105, false;
        /// GET_BROKER_CLUSTER_INFO (name server).
        GET_BROKER_CLUSTER_INFO = 106, false;
        /// GET_TOPIC_STATS_INFO (admin).
        GET_TOPIC_STATS_INFO = 202, false;
        /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER (admin, name server).
        GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206, false;
        /// DELETE_SUBSCRIPTIONGROUP (admin).
        DELETE_SUBSCRIPTIONGROUP = 207, false;
        /// GET_CONSUME_STATS (admin).
        GET_CONSUME_STATS = 208, false;
        /// DELETE_TOPIC_IN_BROKER (admin).
        DELETE_TOPIC_IN_BROKER = 215, false;
        /// DELETE_TOPIC_IN_NAMESRV (admin, name server).
        DELETE_TOPIC_IN_NAMESRV = 216, false;
        /// RESET_CONSUMER_CLIENT_OFFSET (broker → client).
        RESET_CONSUMER_CLIENT_OFFSET = 220, false;
        /// GET_CONSUMER_STATUS_FROM_CLIENT (broker → client, deprecated).
        GET_CONSUMER_STATUS_FROM_CLIENT = 221, false;
        /// INVOKE_BROKER_TO_RESET_OFFSET (admin).
        INVOKE_BROKER_TO_RESET_OFFSET = 222, false;
        /// GET_CONSUMER_RUNNING_INFO (broker → client).
        GET_CONSUMER_RUNNING_INFO = 307, false;
        /// CONSUME_MESSAGE_DIRECTLY (broker → client).
        CONSUME_MESSAGE_DIRECTLY = 309, false;
        /// SEND_MESSAGE_V2 (one-letter header names).
        SEND_MESSAGE_V2 = 310, false;
        /// SEND_BATCH_MESSAGE (V2 header names).
        SEND_BATCH_MESSAGE = 320, false;
        /// SEND_REPLY_MESSAGE (V1 header names): the reply of a request-reply
        /// exchange; the broker pushes it to the requester.
        SEND_REPLY_MESSAGE = 324, false;
        /// SEND_REPLY_MESSAGE_V2 (one-letter header names).
        SEND_REPLY_MESSAGE_V2 = 325, false;
        /// PUSH_REPLY_MESSAGE_TO_CLIENT (broker → client): a reply for a
        /// request this client sent.
        PUSH_REPLY_MESSAGE_TO_CLIENT = 326, false;
        /// LITE_PULL_MESSAGE.
        LITE_PULL_MESSAGE = 361, false;
        /// RECALL_MESSAGE (5.3.2+): recall a timer message before its delivery.
        RECALL_MESSAGE = 370, false;
        /// QUERY_ASSIGNMENT (5.x): the queues the broker assigns a member.
        QUERY_ASSIGNMENT = 400, false;
        /// SET_MESSAGE_REQUEST_MODE (5.x admin): pull or pop for a group.
        SET_MESSAGE_REQUEST_MODE = 401, false;
        /// POP_MESSAGE (5.x): the broker picks the messages and hides them.
        POP_MESSAGE = 200050, false;
        /// ACK_MESSAGE (5.x): a popped message is done.
        ACK_MESSAGE = 200051, false;
        /// PEEK_MESSAGE (5.x).
        PEEK_MESSAGE = 200052, false;
        /// CHANGE_MESSAGE_INVISIBLETIME (5.x): hide a popped message longer.
        CHANGE_MESSAGE_INVISIBLETIME = 200053, false;
        /// NOTIFICATION (5.x).
        NOTIFICATION = 200054, false;
        /// BATCH_ACK_MESSAGE (5.x): many acks in one JSON body.
        BATCH_ACK_MESSAGE = 200151, false;
    }
}

code_table! {
    /// A response code (Java `ResponseCode` / `RemotingSysResponseCode`).
    ResponseCode {
        /// SUCCESS.
        SUCCESS = 0, false;
        /// SYSTEM_ERROR: generic failure.
        SYSTEM_ERROR = 1, true;
        /// SYSTEM_BUSY: flow control, retry later.
        SYSTEM_BUSY = 2, true;
        /// REQUEST_CODE_NOT_SUPPORTED.
        REQUEST_CODE_NOT_SUPPORTED = 3, false;
        /// TRANSACTION_FAILED.
        TRANSACTION_FAILED = 4, false;
        /// FLUSH_DISK_TIMEOUT: stored, flush timed out.
        FLUSH_DISK_TIMEOUT = 10, false;
        /// SLAVE_NOT_AVAILABLE: stored, slave unavailable.
        SLAVE_NOT_AVAILABLE = 11, false;
        /// FLUSH_SLAVE_TIMEOUT: stored, slave sync timed out.
        FLUSH_SLAVE_TIMEOUT = 12, false;
        /// MESSAGE_ILLEGAL.
        MESSAGE_ILLEGAL = 13, false;
        /// SERVICE_NOT_AVAILABLE.
        SERVICE_NOT_AVAILABLE = 14, true;
        /// VERSION_NOT_SUPPORTED.
        VERSION_NOT_SUPPORTED = 15, false;
        /// NO_PERMISSION.
        NO_PERMISSION = 16, true;
        /// TOPIC_NOT_EXIST.
        TOPIC_NOT_EXIST = 17, true;
        /// TOPIC_EXIST_ALREADY.
        TOPIC_EXIST_ALREADY = 18, false;
        /// PULL_NOT_FOUND: no new message.
        PULL_NOT_FOUND = 19, false;
        /// PULL_RETRY_IMMEDIATELY: nothing matched the filter.
        PULL_RETRY_IMMEDIATELY = 20, false;
        /// PULL_OFFSET_MOVED: the requested offset is illegal.
        PULL_OFFSET_MOVED = 21, false;
        /// QUERY_NOT_FOUND: no stored consumer offset.
        QUERY_NOT_FOUND = 22, false;
        /// SUBSCRIPTION_PARSE_FAILED.
        SUBSCRIPTION_PARSE_FAILED = 23, false;
        /// SUBSCRIPTION_NOT_EXIST.
        SUBSCRIPTION_NOT_EXIST = 24, false;
        /// SUBSCRIPTION_NOT_LATEST.
        SUBSCRIPTION_NOT_LATEST = 25, false;
        /// SUBSCRIPTION_GROUP_NOT_EXIST.
        SUBSCRIPTION_GROUP_NOT_EXIST = 26, false;
        /// FILTER_DATA_NOT_EXIST.
        FILTER_DATA_NOT_EXIST = 27, false;
        /// FILTER_DATA_NOT_LATEST.
        FILTER_DATA_NOT_LATEST = 28, false;
        /// INVALID_PARAMETER.
        INVALID_PARAMETER = 29, false;
        /// TRANSACTION_SHOULD_COMMIT.
        TRANSACTION_SHOULD_COMMIT = 200, false;
        /// TRANSACTION_SHOULD_ROLLBACK.
        TRANSACTION_SHOULD_ROLLBACK = 201, false;
        /// TRANSACTION_STATE_UNKNOW (sic).
        TRANSACTION_STATE_UNKNOW = 202, false;
        /// TRANSACTION_STATE_GROUP_WRONG.
        TRANSACTION_STATE_GROUP_WRONG = 203, false;
        /// NO_BUYER_ID.
        NO_BUYER_ID = 204, true;
        /// NOT_IN_CURRENT_UNIT.
        NOT_IN_CURRENT_UNIT = 205, true;
        /// CONSUMER_NOT_ONLINE.
        CONSUMER_NOT_ONLINE = 206, false;
        /// CONSUME_MSG_TIMEOUT.
        CONSUME_MSG_TIMEOUT = 207, false;
        /// NO_MESSAGE (POP).
        NO_MESSAGE = 208, false;
        /// POLLING_FULL (POP).
        POLLING_FULL = 209, false;
        /// POLLING_TIMEOUT (POP).
        POLLING_TIMEOUT = 210, false;
        /// BROKER_NOT_EXIST.
        BROKER_NOT_EXIST = 211, false;
        /// BROKER_DISPATCH_NOT_COMPLETE.
        BROKER_DISPATCH_NOT_COMPLETE = 212, false;
        /// BROADCAST_CONSUMPTION.
        BROADCAST_CONSUMPTION = 213, false;
        /// FLOW_CONTROL: pull again after 20 ms.
        FLOW_CONTROL = 215, false;
        /// NOT_LEADER_FOR_QUEUE.
        NOT_LEADER_FOR_QUEUE = 501, false;
        /// ILLEGAL_OPERATION.
        ILLEGAL_OPERATION = 604, false;
        /// GO_AWAY: the server is shutting down; reconnect and retry.
        GO_AWAY = 1500, true;
    }
}

impl ResponseCode {
    /// Whether the Java producer retries a send answered with this code
    /// (`DefaultMQProducer.retryResponseCodes`).
    pub fn is_retryable(self) -> bool {
        self.table_retryable()
    }

    /// Whether a send answered with this code stored the message (SUCCESS,
    /// FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE).
    pub fn is_stored(self) -> bool {
        matches!(self.0, 0 | 10 | 11 | 12)
    }
}

/// The language a command's sender declares (Java `LanguageCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LanguageCode {
    /// JAVA (0).
    Java,
    /// CPP (1).
    Cpp,
    /// DOTNET (2).
    Dotnet,
    /// PYTHON (3).
    Python,
    /// DELPHI (4).
    Delphi,
    /// ERLANG (5).
    Erlang,
    /// RUBY (6).
    Ruby,
    /// OTHER (7).
    Other,
    /// HTTP (8).
    Http,
    /// GO (9).
    Go,
    /// PHP (10).
    Php,
    /// OMS (11).
    Oms,
    /// RUST (12), known to brokers since 4.9.4.
    Rust,
    /// NODE_JS (13).
    NodeJs,
    /// A code this crate does not know; the byte is kept (JSON: name lost, see [`LanguageCode::name`]).
    Unknown(u8),
}

const LANGUAGES: [(&str, LanguageCode); 14] = [
    ("JAVA", LanguageCode::Java),
    ("CPP", LanguageCode::Cpp),
    ("DOTNET", LanguageCode::Dotnet),
    ("PYTHON", LanguageCode::Python),
    ("DELPHI", LanguageCode::Delphi),
    ("ERLANG", LanguageCode::Erlang),
    ("RUBY", LanguageCode::Ruby),
    ("OTHER", LanguageCode::Other),
    ("HTTP", LanguageCode::Http),
    ("GO", LanguageCode::Go),
    ("PHP", LanguageCode::Php),
    ("OMS", LanguageCode::Oms),
    ("RUST", LanguageCode::Rust),
    ("NODE_JS", LanguageCode::NodeJs),
];

impl LanguageCode {
    /// The byte used in ROCKETMQ binary headers.
    pub fn code(self) -> u8 {
        match self {
            LanguageCode::Unknown(b) => b,
            known => LANGUAGES
                .iter()
                .position(|(_, l)| *l == known)
                .and_then(|p| u8::try_from(p).ok())
                .unwrap_or(7),
        }
    }

    /// The language for a binary-header byte.
    pub fn from_code(code: u8) -> Self {
        LANGUAGES
            .get(usize::from(code))
            .map(|(_, l)| *l)
            .unwrap_or(LanguageCode::Unknown(code))
    }

    /// The name used in JSON headers (`"JAVA"`, `"RUST"`, ...); `OTHER` for unknown codes.
    pub fn name(self) -> &'static str {
        match self {
            LanguageCode::Unknown(_) => "OTHER",
            known => LANGUAGES
                .iter()
                .find(|(_, l)| *l == known)
                .map(|(n, _)| *n)
                .unwrap_or("OTHER"),
        }
    }

    /// The language for a JSON-header name; unknown names map to [`LanguageCode::Other`].
    pub fn from_name(name: &str) -> Self {
        LANGUAGES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, l)| *l)
            .unwrap_or(LanguageCode::Other)
    }
}

/// How a command's header is serialized (the top byte of the header-length word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    /// JSON text header (0). The default, understood by every broker.
    #[default]
    Json,
    /// ROCKETMQ compact binary header (1).
    RocketMq,
}

impl SerializeType {
    /// The wire byte.
    pub fn code(self) -> u8 {
        match self {
            SerializeType::Json => 0,
            SerializeType::RocketMq => 1,
        }
    }

    /// Parses the wire byte.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(SerializeType::Json),
            1 => Some(SerializeType::RocketMq),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_codes_are_preserved() {
        let c = RequestCode::from(9999);
        assert_eq!(c.0, 9999);
        assert_eq!(c.name(), None);
        assert_eq!(RequestCode::PULL_MESSAGE.name(), Some("PULL_MESSAGE"));
        assert_eq!(
            format!("{:?}", ResponseCode(3)),
            "REQUEST_CODE_NOT_SUPPORTED(3)"
        );
    }

    #[test]
    fn retryable_table_matches_java_producer() {
        for c in [17, 14, 1, 2, 16, 204, 205, 1500] {
            assert!(ResponseCode(c).is_retryable(), "{c}");
        }
        assert!(!ResponseCode::SUCCESS.is_retryable());
        assert!(!ResponseCode::MESSAGE_ILLEGAL.is_retryable());
    }

    #[test]
    fn language_codes_round_trip() {
        for b in 0..=20u8 {
            assert_eq!(LanguageCode::from_code(b).code(), b);
        }
        assert_eq!(LanguageCode::Rust.code(), 12);
        assert_eq!(LanguageCode::from_name("RUST"), LanguageCode::Rust);
        assert_eq!(LanguageCode::Java.name(), "JAVA");
    }
}
