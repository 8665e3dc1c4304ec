//! The broker's request handlers: one per request code (or family of codes
//! the Java broker serves with one processor), each in its own file.
//!
//! | code | file | Java |
//! |---|---|---|
//! | SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) | `send.rs` | `SendMessageProcessor` |
//! | PULL_MESSAGE (11), LITE_PULL_MESSAGE (361, 5.x) | `pull.rs` | `PullMessageProcessor`, `DefaultPullMessageResultHandler` |
//! | QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15) | `consumer_offset.rs` | `ConsumerManageProcessor` |
//! | UPDATE_AND_CREATE_TOPIC (17) | `create_topic.rs` | `AdminBrokerProcessor` |
//! | GET_BROKER_RUNTIME_INFO (28) | `runtime_info.rs` | `AdminBrokerProcessor` |
//! | SEARCH_OFFSET_BY_TIMESTAMP (29), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) | `queue_offset.rs` | `AdminBrokerProcessor` |
//! | VIEW_MESSAGE_BY_ID (33) | `view_message.rs` | `QueryMessageProcessor` |
//! | HEART_BEAT (34) | `heartbeat.rs` | `ClientManageProcessor` |
//! | UNREGISTER_CLIENT (35) | `unregister.rs` | `ClientManageProcessor` |
//! | CONSUMER_SEND_MSG_BACK (36) | `send_back.rs` | `AbstractSendMessageProcessor.consumerSendMsgBack` |
//! | GET_CONSUMER_LIST_BY_GROUP (38) | `consumer_list.rs` | `ConsumerManageProcessor` |
//! | LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42) | `lock.rs` | `AdminBrokerProcessor`, `RebalanceLockManager` |
//! | CHECK_CLIENT_CONFIG (46) | `check_client_config.rs` | `ClientManageProcessor` |
//! | GET_PRODUCER_CONNECTION_LIST (204) | `producer_connections.rs` | `AdminBrokerProcessor` |
//!
//! Any other code is answered REQUEST_CODE_NOT_SUPPORTED, as a broker
//! without a processor for it does. New request families (pop / ack,
//! END_TRANSACTION with check-backs) are a new file and one line in
//! [`dispatch()`] (`dispatch.rs`); `answer.rs` holds the header decoding and
//! plain answers every handler shares.

// A refusal is the answer itself (a `RemotingCommand`), built once per
// refused request: boxing it would only add an allocation.
#![allow(clippy::result_large_err)]

mod answer;
mod check_client_config;
mod consumer_list;
mod consumer_offset;
mod create_topic;
mod dispatch;
mod heartbeat;
mod lock;
mod producer_connections;
mod pull;
mod queue_offset;
mod runtime_info;
mod send;
mod send_back;
mod unregister;
mod view_message;

use answer::{header, illegal_queue_code, ok};
pub(super) use dispatch::dispatch;
