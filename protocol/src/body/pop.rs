//! BATCH_ACK_MESSAGE (200151) and QUERY_ASSIGNMENT (400) bodies (5.x).

use std::collections::{BTreeSet, HashMap};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

use crate::body::MessageModel;
use crate::queue::MessageQueue;

/// The acks of one popped batch of one queue (Java `BatchAck`): bit `i` of
/// [`bit_set`](BatchAck::bit_set) acks the message at offset
/// `start_offset + i`. Keys are the Java short names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BatchAck {
    /// Consumer group.
    #[serde(rename = "c")]
    pub consumer_group: String,
    /// The original topic (not the retry topic).
    #[serde(rename = "t")]
    pub topic: String,
    /// The extra info's retry flag: `"0"`, `"1"` or `"2"`.
    #[serde(rename = "r")]
    pub retry: String,
    /// The checkpoint's start offset (the extra info's first field).
    #[serde(rename = "so")]
    pub start_offset: i64,
    /// Queue id.
    #[serde(rename = "q")]
    pub queue_id: i32,
    /// Revive queue id.
    #[serde(rename = "rq")]
    pub revive_queue_id: i32,
    /// Pop time.
    #[serde(rename = "pt")]
    pub pop_time: i64,
    /// Invisible time.
    #[serde(rename = "it")]
    pub invisible_time: i64,
    /// Acked offsets relative to `start_offset` (Java `BitSet`, written as
    /// the base64 of `BitSet.toByteArray()`).
    #[serde(
        rename = "b",
        serialize_with = "write_bit_set",
        deserialize_with = "read_bit_set"
    )]
    pub bit_set: BTreeSet<u32>,
}

/// BATCH_ACK_MESSAGE body (Java `BatchAckMessageRequestBody`): the acks of
/// one broker.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BatchAckMessageRequestBody {
    /// The broker the acks are for.
    pub broker_name: String,
    /// One entry per popped batch and queue.
    pub acks: Vec<BatchAck>,
}

json_body!(BatchAckMessageRequestBody, "BatchAckMessageRequestBody");

/// `BitSet.toByteArray()`: little-endian bytes, trailing zero bytes dropped.
pub fn bit_set_bytes(bits: &BTreeSet<u32>) -> Vec<u8> {
    let Some(&last) = bits.iter().next_back() else {
        return Vec::new();
    };
    let mut bytes = vec![0u8; usize::try_from(last / 8).unwrap_or(0) + 1];
    for &bit in bits {
        if let Some(b) = bytes.get_mut(usize::try_from(bit / 8).unwrap_or(usize::MAX)) {
            *b |= 1 << (bit % 8);
        }
    }
    bytes
}

/// The bits of `BitSet.valueOf(bytes)`.
pub fn bit_set_from_bytes(bytes: &[u8]) -> BTreeSet<u32> {
    let mut bits = BTreeSet::new();
    for (i, byte) in bytes.iter().enumerate() {
        for j in 0..8u32 {
            if byte & (1 << j) != 0 {
                if let Ok(i) = u32::try_from(i) {
                    bits.insert(i.saturating_mul(8).saturating_add(j));
                }
            }
        }
    }
    bits
}

fn write_bit_set<S: Serializer>(bits: &BTreeSet<u32>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&STANDARD.encode(bit_set_bytes(bits)))
}

fn read_bit_set<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeSet<u32>, D::Error> {
    let text = Option::<String>::deserialize(d)?.unwrap_or_default();
    let bytes = STANDARD
        .decode(text.as_bytes())
        .map_err(|e| de::Error::custom(format!("bit set is not base64: {e}")))?;
    Ok(bit_set_from_bytes(&bytes))
}

/// How a member reads an assigned queue (Java `MessageRequestMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageRequestMode {
    /// Pull with offsets (the queue is the member's alone).
    #[default]
    Pull,
    /// Pop (the broker shares the queue among members).
    Pop,
}

/// QUERY_ASSIGNMENT request body (Java `QueryAssignmentRequestBody`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryAssignmentRequestBody {
    /// This client's id.
    pub client_id: String,
    /// Consumer group.
    pub consumer_group: String,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// The allocation strategy's name (Java `AllocateMessageQueueStrategy.getName`).
    pub strategy_name: String,
    /// Topic.
    pub topic: String,
}

json_body!(QueryAssignmentRequestBody, "QueryAssignmentRequestBody");

/// One assigned queue (Java `MessageQueueAssignment`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueueAssignment {
    /// The queue.
    pub message_queue: MessageQueue,
    /// Pull or pop.
    #[serde(default)]
    pub mode: MessageRequestMode,
    /// Extra attributes.
    #[serde(default)]
    pub attachments: Option<HashMap<String, String>>,
}

/// QUERY_ASSIGNMENT answer (Java `QueryAssignmentResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryAssignmentResponseBody {
    /// The queues assigned to the asking member.
    pub message_queue_assignments: Vec<MessageQueueAssignment>,
}

json_body!(QueryAssignmentResponseBody, "QueryAssignmentResponseBody");

/// SET_MESSAGE_REQUEST_MODE body (Java `SetMessageRequestModeRequestBody`):
/// whether a group pulls or pops a topic, and how many members share each
/// queue when popping (0 or less: every member pops every queue).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetMessageRequestModeRequestBody {
    /// Consumer group.
    pub consumer_group: String,
    /// Pull or pop.
    pub mode: MessageRequestMode,
    /// Members per queue when popping.
    pub pop_share_queue_num: i32,
    /// Topic.
    pub topic: String,
}

json_body!(
    SetMessageRequestModeRequestBody,
    "SetMessageRequestModeRequestBody"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_set_matches_java_to_byte_array() {
        let bits: BTreeSet<u32> = [0, 3, 9].into_iter().collect();
        // BitSet{0,3,9}.toByteArray() = [0x09, 0x02]
        assert_eq!(bit_set_bytes(&bits), [0x09, 0x02]);
        assert_eq!(bit_set_from_bytes(&[0x09, 0x02]), bits);
        assert!(bit_set_bytes(&BTreeSet::new()).is_empty());
    }

    #[test]
    fn batch_ack_json_short_keys() {
        let body = BatchAckMessageRequestBody {
            broker_name: "broker-a".into(),
            acks: vec![BatchAck {
                consumer_group: "G".into(),
                topic: "T".into(),
                retry: "0".into(),
                start_offset: 10,
                queue_id: 1,
                revive_queue_id: 2,
                pop_time: 3,
                invisible_time: 4,
                bit_set: [0, 1].into_iter().collect(),
            }],
        };
        let json = String::from_utf8(body.to_json_bytes().unwrap()).unwrap();
        assert_eq!(
            json,
            r#"{"brokerName":"broker-a","acks":[{"c":"G","t":"T","r":"0","so":10,"q":1,"rq":2,"pt":3,"it":4,"b":"Aw=="}]}"#
        );
        assert_eq!(
            BatchAckMessageRequestBody::decode(json.as_bytes()).unwrap(),
            body
        );
    }

    #[test]
    fn assignment_bodies() {
        let req = QueryAssignmentRequestBody {
            client_id: "c@1".into(),
            consumer_group: "G".into(),
            message_model: MessageModel::Clustering,
            strategy_name: "AVG".into(),
            topic: "T".into(),
        };
        let json = String::from_utf8(req.to_json_bytes().unwrap()).unwrap();
        assert!(json.contains(r#""messageModel":"CLUSTERING""#), "{json}");
        let resp = QueryAssignmentResponseBody::decode(
            br#"{"messageQueueAssignments":[{"messageQueue":{"brokerName":"b","queueId":1,"topic":"T"},"mode":"POP","attachments":{}}]}"#,
        )
        .unwrap();
        assert_eq!(resp.message_queue_assignments.len(), 1);
        let a = &resp.message_queue_assignments[0];
        assert_eq!(a.mode, MessageRequestMode::Pop);
        assert_eq!(a.message_queue, MessageQueue::new("T", "b", 1));
    }
}
