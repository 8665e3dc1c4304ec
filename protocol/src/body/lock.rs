//! LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42) bodies.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::queue::MessageQueue;

/// LOCK_BATCH_MQ request body (Java `LockBatchRequestBody`); the same keys
/// serve UNLOCK_BATCH_MQ ([`UnlockBatchRequestBody`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LockBatchRequestBody {
    /// This client's id (lower-case `Id` here).
    pub client_id: String,
    /// Consumer group.
    pub consumer_group: String,
    /// Queues of this broker to lock or unlock.
    pub mq_set: BTreeSet<MessageQueue>,
    /// Only matters for broker containers; `false`.
    pub only_this_broker: bool,
}

json_body!(LockBatchRequestBody, "LockBatchRequestBody");

/// UNLOCK_BATCH_MQ request body (Java `UnlockBatchRequestBody`): the same
/// keys as [`LockBatchRequestBody`].
pub type UnlockBatchRequestBody = LockBatchRequestBody;

/// LOCK_BATCH_MQ answer (Java `LockBatchResponseBody`): the queues now
/// locked by this client.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LockBatchResponseBody {
    /// Locked queues.
    #[serde(rename = "lockOKMQSet")]
    pub lock_ok_mq_set: BTreeSet<MessageQueue>,
}

json_body!(LockBatchResponseBody, "LockBatchResponseBody");
