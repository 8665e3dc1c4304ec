//! JSON bodies: route data, heartbeat data, consumer lists, lock sets and
//! the broker's non-standard JSON.
//!
//! Every body type decodes with the tolerant reader of [`lenient_json`]
//! (fastjson writes map keys without quotes or as objects), accepts missing
//! keys (defaults), treats `null` like a missing key and ignores unknown
//! keys. Bodies the client sends are written with fastjson's key order
//! (alphabetical); all are standard JSON except where Java's own output is
//! not ([`ResetOffsetBody::to_json_bytes`],
//! [`ConsumerRunningInfo::to_json_bytes`]).
//!
//! ```
//! use rmq_protocol::body::TopicRouteData;
//!
//! let route = TopicRouteData::decode(
//!     br#"{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"C"}],
//!          "queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":2,"writeQueueNums":2}]}"#,
//! )?;
//! assert_eq!(route.publish_queues("T1").len(), 2);
//! # Ok::<(), rmq_protocol::Error>(())
//! ```

#[macro_use]
mod de;

mod admin_stats;
mod consumer_list;
mod heartbeat;
pub mod lenient_json;
mod lock;
mod pop;
mod reset_offset;
mod route;
mod running_info;
mod subscription;

pub use admin_stats::{
    ConsumeStats, KvTable, OffsetWrapper, TopicList, TopicOffset, TopicStatsTable,
};
pub use consumer_list::ConsumerListBody;
pub use heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel, ProducerData,
};
pub use lock::{LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody};
pub use pop::{
    BatchAck, BatchAckMessageRequestBody, MessageQueueAssignment, MessageRequestMode,
    QueryAssignmentRequestBody, QueryAssignmentResponseBody, SetMessageRequestModeRequestBody,
    bit_set_bytes, bit_set_from_bytes,
};
pub use reset_offset::ResetOffsetBody;
pub use route::{BrokerData, ClusterInfo, MASTER_ID, QueueData, TopicRouteData, perm};
pub use running_info::{
    CmResult, ConsumeMessageDirectlyResult, ConsumeStatus, ConsumerRunningInfo,
    PROP_CLIENT_VERSION, PROP_CONSUME_TYPE, PROP_CONSUMEORDERLY, PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR, PROP_THREADPOOL_CORE_SIZE, ProcessQueueInfo,
};
pub use subscription::{ExpressionType, SUB_ALL, SubscriptionData, java_string_hash};
