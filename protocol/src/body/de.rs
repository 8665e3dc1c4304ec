//! Serde helpers shared by the body types.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::{self, Deserializer, Unexpected};

use crate::queue::MessageQueue;

/// Declares inherent `decode` and `to_json_bytes` methods on a body type.
macro_rules! json_body {
    ($ty:ident, $what:literal) => {
        impl $ty {
            /// Decodes the body with the lenient reader
            /// ([`crate::body::lenient_json`]).
            ///
            /// # Errors
            ///
            /// [`crate::Error::InvalidBody`] when the bytes are not JSON (even
            /// fastjson's) or do not have this body's shape.
            pub fn decode(bytes: &[u8]) -> $crate::Result<Self> {
                $crate::body::lenient_json::decode_object(bytes, $what)
            }

            /// Encodes the body as standard JSON.
            ///
            /// # Errors
            ///
            /// [`crate::Error::Encode`] if serialization fails (it does not for
            /// well-formed values).
            pub fn to_json_bytes(&self) -> $crate::Result<Vec<u8>> {
                serde_json::to_vec(self).map_err(|e| {
                    $crate::Error::Encode(format!(concat!("cannot write ", $what, ": {}"), e))
                })
            }
        }
    };
}

/// A JSON integer, or a string holding one (fastjson's `BrowserCompatible`
/// writes large longs as strings; the Go client writes `codeSet` as strings).
#[derive(Deserialize)]
#[serde(untagged)]
enum IntOrString {
    Int(i64),
    Str(String),
}

impl IntOrString {
    fn into_i64<E: de::Error>(self) -> Result<i64, E> {
        match self {
            IntOrString::Int(v) => Ok(v),
            IntOrString::Str(s) => s
                .trim()
                .parse()
                .map_err(|_| E::invalid_value(Unexpected::Str(&s), &"an integer")),
        }
    }
}

/// Deserializes an `i64` written as a number or a string.
pub(crate) fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    IntOrString::deserialize(d)?.into_i64()
}

/// Deserializes a `Vec<i32>` whose items are numbers or strings.
pub(crate) fn lenient_i32_vec<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i32>, D::Error> {
    Vec::<IntOrString>::deserialize(d)?
        .into_iter()
        .map(|v| {
            let n = v.into_i64()?;
            i32::try_from(n)
                .map_err(|_| de::Error::invalid_value(Unexpected::Signed(n), &"a 32-bit integer"))
        })
        .collect()
}

/// Reads a map key holding a `MessageQueue` as JSON text (what the lenient
/// reader makes of fastjson's object keys).
pub(crate) fn parse_mq_key<E: de::Error>(key: &str) -> Result<MessageQueue, E> {
    serde_json::from_str(key)
        .map_err(|e| E::custom(format!("map key `{key}` is not a MessageQueue: {e}")))
}

/// Deserializes a map whose keys are `MessageQueue` objects (fastjson's
/// `Map<MessageQueue, V>`, e.g. `ConsumeStats.offsetTable`).
pub(crate) fn mq_keyed_map<'de, D, V>(d: D) -> Result<BTreeMap<MessageQueue, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    BTreeMap::<String, V>::deserialize(d)?
        .into_iter()
        .map(|(k, v)| Ok((parse_mq_key(&k)?, v)))
        .collect()
}

/// Writes `mq` as fastjson does (keys sorted), for object-keyed maps.
pub(crate) fn mq_fastjson_text(mq: &MessageQueue) -> Result<String, serde_json::Error> {
    Ok(format!(
        r#"{{"brokerName":{},"queueId":{},"topic":{}}}"#,
        serde_json::to_string(&mq.broker_name)?,
        mq.queue_id,
        serde_json::to_string(&mq.topic)?
    ))
}
