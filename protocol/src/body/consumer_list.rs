//! [`ConsumerListBody`]: the GET_CONSUMER_LIST_BY_GROUP (38) answer.

use serde::{Deserialize, Serialize};

/// Client ids of a consumer group's live members (Java
/// `GetConsumerListByGroupResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerListBody {
    /// Client ids.
    pub consumer_id_list: Vec<String>,
}

json_body!(ConsumerListBody, "GetConsumerListByGroupResponseBody");
