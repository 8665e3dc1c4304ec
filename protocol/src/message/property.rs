//! Property names (Java `MessageConst.PROPERTY_*`).
//!
//! System properties live in the same map as user properties; these are the
//! names the client, the broker and the Java client agree on. Reference:
//! Java `MessageConst`.

/// The message's single tag (`PROPERTY_TAGS`).
pub const TAGS: &str = "TAGS";
/// Business keys joined by a single space (`PROPERTY_KEYS`).
pub const KEYS: &str = "KEYS";
/// Separator between the keys inside [`KEYS`] (`MessageConst.KEY_SEPARATOR`).
pub const KEY_SEPARATOR: &str = " ";
/// Client message id, see [`UniqIdGenerator`](super::UniqIdGenerator)
/// (`PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX`).
pub const UNIQ_KEY: &str = "UNIQ_KEY";
/// `true`/`false`: the broker answers only after the message is flushed; absent means
/// `true` (`PROPERTY_WAIT_STORE_MSG_OK`).
pub const WAIT: &str = "WAIT";
/// Delay level (`PROPERTY_DELAY_TIME_LEVEL`); the broker writes `-1` for DLQ-bound retries.
pub const DELAY: &str = "DELAY";
/// Original topic of a retried message (`PROPERTY_RETRY_TOPIC`).
pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
/// Topic a delayed/transactional message was destined for (`PROPERTY_REAL_TOPIC`).
pub const REAL_TOPIC: &str = "REAL_TOPIC";
/// Queue id counterpart of [`REAL_TOPIC`] (`PROPERTY_REAL_QUEUE_ID`).
pub const REAL_QID: &str = "REAL_QID";
/// `true` on transactional half messages (`PROPERTY_TRANSACTION_PREPARED`).
pub const TRAN_MSG: &str = "TRAN_MSG";
/// Producer group of a transactional message (`PROPERTY_PRODUCER_GROUP`).
pub const PGROUP: &str = "PGROUP";
/// Pull response `minOffset`, set by the consumer (`PROPERTY_MIN_OFFSET`).
pub const MIN_OFFSET: &str = "MIN_OFFSET";
/// Pull response `maxOffset`, set by the consumer (`PROPERTY_MAX_OFFSET`).
pub const MAX_OFFSET: &str = "MAX_OFFSET";
/// Buyer id (`PROPERTY_BUYER_ID`), unused by this client.
pub const BUYER_ID: &str = "BUYER_ID";
/// Message id of the first delivery of a retried message (`PROPERTY_ORIGIN_MESSAGE_ID`).
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
/// Reconsume times carried by a client fallback send-back (`PROPERTY_RECONSUME_TIME`).
pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
/// Max reconsume times carried by a client fallback send-back
/// (`PROPERTY_MAX_RECONSUME_TIMES`).
pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
/// Millisecond timestamp put on a message just before its listener runs
/// (`PROPERTY_CONSUME_START_TIMESTAMP`).
pub const CONSUME_START_TIME: &str = "CONSUME_START_TIME";
/// Region of the broker, in send responses (`PROPERTY_MSG_REGION`).
pub const MSG_REGION: &str = "MSG_REGION";
/// Trace switch, in send responses (`PROPERTY_TRACE_SWITCH`).
pub const TRACE_ON: &str = "TRACE_ON";
/// Transaction id, informational (`PROPERTY_TRANSACTION_ID`).
pub const TRANSACTION_ID: &str = "__transactionId__";
/// Times the broker checked a half message (`PROPERTY_TRANSACTION_CHECK_TIMES`).
pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
/// First check delay of a half message (`PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS`).
pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
/// Namespace of the producer (`PROPERTY_INSTANCE_ID`).
pub const INSTANCE_ID: &str = "INSTANCE_ID";
/// Request/reply correlation id (`PROPERTY_CORRELATION_ID`).
pub const CORRELATION_ID: &str = "CORRELATION_ID";
/// Request/reply: client to answer (`PROPERTY_MESSAGE_REPLY_TO_CLIENT`).
pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
/// Request/reply time to live (`PROPERTY_MESSAGE_TTL`).
pub const TTL: &str = "TTL";
/// Cluster that stored the message (`PROPERTY_CLUSTER`).
pub const CLUSTER: &str = "CLUSTER";
/// Message type, request/reply (`PROPERTY_MESSAGE_TYPE`).
pub const MSG_TYPE: &str = "MSG_TYPE";
/// Sharding key for ordered sends of 5.x Java producers (`PROPERTY_SHARDING_KEY`).
/// The Go client uses `SHARDING_KEY`, client side only.
pub const SHARDING_KEY: &str = "__SHARDINGKEY";
/// 5.x arbitrary-time delay: delay in seconds (`PROPERTY_TIMER_DELAY_SEC`).
pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
/// 5.x arbitrary-time delay: delay in milliseconds (`PROPERTY_TIMER_DELAY_MS`).
pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
/// 5.x arbitrary-time delay: absolute delivery time in ms since the epoch
/// (`PROPERTY_TIMER_DELIVER_MS`).
pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
/// Body CRC appended by 5.x brokers with `enabledAppendPropCRC` (`PROPERTY_CRC32`).
pub const CRC32: &str = "__CRC32#";
/// Original topic of a 5.x DLQ message (`PROPERTY_DLQ_ORIGIN_TOPIC`).
pub const DLQ_ORIGIN_TOPIC: &str = "DLQ_ORIGIN_TOPIC";
/// Original message id of a 5.x DLQ message (`PROPERTY_DLQ_ORIGIN_MESSAGE_ID`).
pub const DLQ_ORIGIN_MESSAGE_ID: &str = "DLQ_ORIGIN_MESSAGE_ID";
/// Inner message count of a batch (`PROPERTY_INNER_NUM`).
pub const INNER_NUM: &str = "INNER_NUM";
/// Base queue offset of an inner batch (`PROPERTY_INNER_BASE`).
pub const INNER_BASE: &str = "INNER_BASE";
/// 5.4+ message priority, a non-negative integer (`PROPERTY_PRIORITY`): a
/// broker stores a message of a `PRIORITY` topic in queue
/// `min(priority, write queues - 1)`, and pops serve the higher queues first.
pub const PRIORITY: &str = "_SYS_MSG_PRIORITY_";
/// 5.5+ lite topic of a message sent to a `LITE` parent topic
/// (`PROPERTY_LITE_TOPIC`): the broker dispatches it to the light message
/// queue of that lite topic too.
pub const LITE_TOPIC: &str = "__LITE_TOPIC";
/// The light message queue(s) a broker dispatched a message to, set by the
/// broker (`PROPERTY_INNER_MULTI_DISPATCH`): for a lite topic
/// `%LMQ%$<parent>$<lite topic>`.
pub const INNER_MULTI_DISPATCH: &str = "INNER_MULTI_DISPATCH";
/// The message's offsets in the queues of [`INNER_MULTI_DISPATCH`], set by
/// the broker (`PROPERTY_INNER_MULTI_QUEUE_OFFSET`).
pub const INNER_MULTI_QUEUE_OFFSET: &str = "INNER_MULTI_QUEUE_OFFSET";
/// When a reply reached the requester, ms since the epoch, set by the
/// requester's client (`PROPERTY_REPLY_MESSAGE_ARRIVE_TIME`).
pub const REPLY_MESSAGE_ARRIVE_TIME: &str = "ARRIVE_TIME";
/// When the broker pushed a reply to the requester, ms since the epoch
/// (`PROPERTY_PUSH_REPLY_TIME`).
pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
/// The sender's host as the 5.x proxy stores it for a message sent through
/// it: the host name the gRPC client put in its born host
/// (`PROPERTY_BORN_HOST`).
pub const BORN_HOST: &str = "__BORNHOST";
