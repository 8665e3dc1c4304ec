//! Answers to broker requests: [`ConsumerRunningInfo`]
//! (GET_CONSUMER_RUNNING_INFO, 307) and [`ConsumeMessageDirectlyResult`]
//! (CONSUME_MESSAGE_DIRECTLY, 309).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::de::mq_fastjson_text;
use super::heartbeat::ConsumerData;
use super::subscription::SubscriptionData;
use crate::error::{Error, Result};
use crate::queue::MessageQueue;

/// `properties` key: name server address list.
pub const PROP_NAMESERVER_ADDR: &str = "PROP_NAMESERVER_ADDR";
/// `properties` key: consume thread pool core size.
pub const PROP_THREADPOOL_CORE_SIZE: &str = "PROP_THREADPOOL_CORE_SIZE";
/// `properties` key: `true` for an orderly consumer.
pub const PROP_CONSUMEORDERLY: &str = "PROP_CONSUMEORDERLY";
/// `properties` key: the consume type name (`CONSUME_PASSIVELY`, …).
pub const PROP_CONSUME_TYPE: &str = "PROP_CONSUME_TYPE";
/// `properties` key: client version.
pub const PROP_CLIENT_VERSION: &str = "PROP_CLIENT_VERSION";
/// `properties` key: consumer start time, ms.
pub const PROP_CONSUMER_START_TIMESTAMP: &str = "PROP_CONSUMER_START_TIMESTAMP";

/// State of one process queue (Java `ProcessQueueInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProcessQueueInfo {
    /// Cached message count.
    pub cached_msg_count: i32,
    /// Highest cached offset.
    pub cached_msg_max_offset: i64,
    /// Lowest cached offset.
    pub cached_msg_min_offset: i64,
    /// Cached size, MiB.
    #[serde(rename = "cachedMsgSizeInMiB")]
    pub cached_msg_size_in_mib: i32,
    /// Offset to commit.
    pub commit_offset: i64,
    /// Whether the queue was dropped (Java spelling `droped`).
    #[serde(rename = "droped")]
    pub dropped: bool,
    /// Last consume time, ms.
    pub last_consume_timestamp: i64,
    /// Last lock time, ms.
    pub last_lock_timestamp: i64,
    /// Last pull time, ms.
    pub last_pull_timestamp: i64,
    /// Whether the queue is locked (orderly).
    pub locked: bool,
    /// Transaction message count.
    pub transaction_msg_count: i32,
    /// Highest transaction message offset.
    pub transaction_msg_max_offset: i64,
    /// Lowest transaction message offset.
    pub transaction_msg_min_offset: i64,
    /// Unlock attempts.
    pub try_unlock_times: i64,
}

/// Consume statistics of one topic (Java `ConsumeStatus`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsumeStatus {
    /// Failed messages in the last hour.
    #[serde(rename = "consumeFailedMsgs")]
    pub consume_failed_msgs: i64,
    /// Failed consumes per second.
    #[serde(rename = "consumeFailedTPS")]
    pub consume_failed_tps: f64,
    /// Successful consumes per second.
    #[serde(rename = "consumeOKTPS")]
    pub consume_ok_tps: f64,
    /// Mean consume time, ms.
    #[serde(rename = "consumeRT")]
    pub consume_rt: f64,
    /// Mean pull time, ms.
    #[serde(rename = "pullRT")]
    pub pull_rt: f64,
    /// Pulls per second.
    #[serde(rename = "pullTPS")]
    pub pull_tps: f64,
}

/// A consumer's self-description for admin tools (Java
/// `ConsumerRunningInfo`).
///
/// `mqTable` is keyed by [`MessageQueue`], which fastjson writes as object
/// keys; [`ConsumerRunningInfo::to_json_bytes`] writes it that way too.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerRunningInfo {
    /// Thread dump, when asked for.
    pub jstack: Option<String>,
    /// Process queue state per queue.
    #[serde(deserialize_with = "super::de::mq_keyed_map")]
    pub mq_table: BTreeMap<MessageQueue, ProcessQueueInfo>,
    /// Client properties (the `PROP_*` keys and consumer config).
    pub properties: BTreeMap<String, String>,
    /// Consume statistics per topic.
    pub status_table: BTreeMap<String, ConsumeStatus>,
    /// The subscriptions.
    pub subscription_set: Vec<SubscriptionData>,
}

impl ConsumerRunningInfo {
    /// The running info a consumer without process queues reports: its
    /// subscriptions and its consume type (`PROP_CONSUME_TYPE`).
    pub fn of_consumer(data: ConsumerData) -> Self {
        let mut info = ConsumerRunningInfo {
            subscription_set: data.subscription_data_set,
            ..ConsumerRunningInfo::default()
        };
        info.properties.insert(
            PROP_CONSUME_TYPE.to_owned(),
            data.consume_type.as_str().to_owned(),
        );
        info
    }

    /// Decodes the body (fastjson object keys accepted).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidBody`] when the bytes are not JSON (even fastjson's)
    /// or do not have this body's shape.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        super::lenient_json::decode_object(bytes, "ConsumerRunningInfo")
    }

    /// Encodes the body as fastjson would: keys sorted, `mqTable` with
    /// MessageQueue objects as keys.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] if a value cannot be written (it cannot).
    pub fn to_json_bytes(&self) -> Result<Vec<u8>> {
        self.write_json()
            .map(String::into_bytes)
            .map_err(|e| Error::Encode(format!("cannot write ConsumerRunningInfo: {e}")))
    }

    fn write_json(&self) -> Result<String, serde_json::Error> {
        let mut out = String::from("{");
        if let Some(jstack) = &self.jstack {
            out.push_str(r#""jstack":"#);
            out.push_str(&serde_json::to_string(jstack)?);
            out.push(',');
        }
        out.push_str(r#""mqTable":{"#);
        for (i, (mq, info)) in self.mq_table.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&mq_fastjson_text(mq)?);
            out.push(':');
            out.push_str(&serde_json::to_string(info)?);
        }
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            r#"}},"properties":{},"statusTable":{},"subscriptionSet":{}}}"#,
            serde_json::to_string(&self.properties)?,
            serde_json::to_string(&self.status_table)?,
            serde_json::to_string(&self.subscription_set)?,
        );
        Ok(out)
    }
}

/// Result of consuming one message on request (Java `CMResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CmResult {
    /// `CR_SUCCESS`.
    CrSuccess,
    /// `CR_LATER`.
    CrLater,
    /// `CR_ROLLBACK`.
    CrRollback,
    /// `CR_COMMIT`.
    CrCommit,
    /// `CR_THROW_EXCEPTION`.
    CrThrowException,
    /// `CR_RETURN_NULL`.
    CrReturnNull,
}

/// The CONSUME_MESSAGE_DIRECTLY answer (Java
/// `ConsumeMessageDirectlyResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumeMessageDirectlyResult {
    /// Auto-commit (orderly); Java's default is `true`.
    pub auto_commit: bool,
    /// The outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consume_result: Option<CmResult>,
    /// `true` for an orderly consumer.
    pub order: bool,
    /// Explanation (e.g. an error's text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remark: Option<String>,
    /// Time spent, ms (Java spelling `spentTimeMills`).
    #[serde(rename = "spentTimeMills")]
    pub spent_time_millis: i64,
}

impl Default for ConsumeMessageDirectlyResult {
    fn default() -> Self {
        ConsumeMessageDirectlyResult {
            auto_commit: true,
            consume_result: None,
            order: false,
            remark: None,
            spent_time_millis: 0,
        }
    }
}

json_body!(ConsumeMessageDirectlyResult, "ConsumeMessageDirectlyResult");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_info_writes_object_keys_and_reads_them_back() {
        let mut info = ConsumerRunningInfo::default();
        info.properties
            .insert(PROP_CONSUME_TYPE.into(), "CONSUME_PASSIVELY".into());
        info.mq_table.insert(
            MessageQueue::new("T", "b", 1),
            ProcessQueueInfo {
                commit_offset: 10,
                locked: true,
                ..Default::default()
            },
        );
        info.status_table.insert(
            "T".into(),
            ConsumeStatus {
                pull_rt: 1.5,
                ..Default::default()
            },
        );
        let text = String::from_utf8(info.to_json_bytes().unwrap()).unwrap();
        assert!(
            text.starts_with(
                r#"{"mqTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"cachedMsgCount":0,"#
            ),
            "{text}"
        );
        assert!(text.contains(r#""cachedMsgSizeInMiB":0"#), "{text}");
        assert!(text.contains(r#""droped":false"#), "{text}");
        assert!(text.contains(r#""pullRT":1.5"#), "{text}");
        assert!(text.ends_with(r#""subscriptionSet":[]}"#), "{text}");
        assert!(
            serde_json::from_str::<serde_json::Value>(&text).is_err(),
            "non-standard on purpose"
        );
        assert_eq!(ConsumerRunningInfo::decode(text.as_bytes()).unwrap(), info);
    }

    #[test]
    fn direct_result_names() {
        let r = ConsumeMessageDirectlyResult {
            consume_result: Some(CmResult::CrThrowException),
            remark: Some("boom".into()),
            spent_time_millis: 3,
            ..Default::default()
        };
        assert_eq!(
            String::from_utf8(r.to_json_bytes().unwrap()).unwrap(),
            r#"{"autoCommit":true,"consumeResult":"CR_THROW_EXCEPTION","order":false,"remark":"boom","spentTimeMills":3}"#
        );
        assert_eq!(
            ConsumeMessageDirectlyResult::decode(&r.to_json_bytes().unwrap()).unwrap(),
            r
        );
    }
}
