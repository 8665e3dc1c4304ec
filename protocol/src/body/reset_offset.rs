//! [`ResetOffsetBody`]: the RESET_CONSUMER_CLIENT_OFFSET (220) body.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::de::{mq_fastjson_text, parse_mq_key};
use super::lenient_json;
use crate::error::{Error, Result};
use crate::queue::MessageQueue;

const WHAT: &str = "ResetOffsetBody";

/// The offsets an admin reset asks the client to apply (Java
/// `ResetOffsetBody`, or `ResetOffsetBodyForC`).
///
/// Two forms arrive: the map form `{"offsetTable":{<MessageQueue>:<offset>,…}}`
/// with fastjson object keys, and, when the reset came from a CPP admin
/// client, the list form
/// `{"offsetTable":[{"brokerName":…,"offset":…,"queueId":…,"topic":…},…]}`.
/// [`ResetOffsetBody::decode`] reads both.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResetOffsetBody {
    /// Target offset per queue, sorted by queue, each queue once.
    pub offset_table: Vec<(MessageQueue, i64)>,
}

/// One entry of the list form (Java `MessageQueueForC`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageQueueForC {
    topic: String,
    broker_name: String,
    queue_id: i32,
    #[serde(deserialize_with = "super::de::lenient_i64")]
    offset: i64,
}

fn invalid(reason: String) -> Error {
    Error::InvalidBody { what: WHAT, reason }
}

fn offset_value(key: &str, v: &Value) -> Result<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| invalid(format!("offset of queue {key} is not an integer: {v}")))
}

impl ResetOffsetBody {
    /// Decodes either form.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidBody`] when the text is not JSON (even fastjson's), a
    /// key is not a MessageQueue object, or an offset is not an integer.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut value = lenient_json::parse_as(bytes, WHAT)?;
        lenient_json::strip_nulls(&mut value);
        let Value::Object(mut top) = value else {
            return Err(invalid("expected a JSON object".to_owned()));
        };
        let mut table = BTreeMap::new();
        match top.remove("offsetTable") {
            None => {}
            Some(Value::Object(map)) => {
                for (key, v) in map {
                    let mq = parse_mq_key::<serde_json::Error>(&key)
                        .map_err(|e| invalid(e.to_string()))?;
                    let offset = offset_value(&key, &v)?;
                    table.insert(mq, offset);
                }
            }
            Some(Value::Array(items)) => {
                for item in items {
                    let e: MessageQueueForC =
                        serde_json::from_value(item).map_err(|e| invalid(e.to_string()))?;
                    table.insert(
                        MessageQueue::new(e.topic, e.broker_name, e.queue_id),
                        e.offset,
                    );
                }
            }
            Some(other) => {
                return Err(invalid(format!(
                    "`offsetTable` is neither an object nor an array: {other}"
                )));
            }
        }
        Ok(ResetOffsetBody {
            offset_table: table.into_iter().collect(),
        })
    }

    /// Encodes the map form exactly as a Java broker does, with object keys
    /// (non-standard JSON; for fake brokers and tests).
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] if a string cannot be written (it cannot).
    pub fn to_json_bytes(&self) -> Result<Vec<u8>> {
        let mut out = String::from(r#"{"offsetTable":{"#);
        for (i, (mq, offset)) in self.offset_table.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&mq_fastjson_text(mq).map_err(|e| Error::Encode(e.to_string()))?);
            out.push(':');
            out.push_str(&offset.to_string());
        }
        out.push_str("}}");
        Ok(out.into_bytes())
    }

    /// Encodes the list form (`ResetOffsetBodyForC`), standard JSON.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] if a string cannot be written (it cannot).
    pub fn to_json_bytes_list_form(&self) -> Result<Vec<u8>> {
        let items: Vec<Value> = self
            .offset_table
            .iter()
            .map(|(mq, offset)| {
                serde_json::json!({
                    "brokerName": mq.broker_name,
                    "offset": offset,
                    "queueId": mq.queue_id,
                    "topic": mq.topic,
                })
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({ "offsetTable": items }))
            .map_err(|e| Error::Encode(e.to_string()))
    }
}
