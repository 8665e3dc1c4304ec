//! RocketMQ message trace records, as the Java client writes them to the trace
//! topic (Java `TraceDataEncoder`, `TraceConstants`, `TraceType`): a record's
//! fields are joined by [`CONTENT_SEPARATOR`] (`\u{1}`) and each record ends
//! with [`FIELD_SEPARATOR`] (`\u{2}`); one trace message body holds many
//! records. Pure: no I/O, no clock.
//!
//! Field order (Java 5.5.0):
//!
//! - `Pub` (14): type, timeStamp, regionId, group, topic, msgId, tags, keys,
//!   storeHost, bodyLength, costTime, msgType, offsetMsgId, success;
//! - `SubBefore` (8): type, timeStamp, regionId, group, requestId, msgId,
//!   retryTimes, keys;
//! - `SubAfter` (9): type, requestId, msgId, costTime, success, keys,
//!   contextCode, timeStamp, group (older clients stop after contextCode or
//!   timeStamp).
//!
//! A missing string is written `null`, as Java's `StringBuilder` does; the
//! decoder keeps it as written.

use std::fmt::Write as _;

use crate::error::{Error, Result};

/// The default trace topic (Java `TopicValidator.RMQ_SYS_TRACE_TOPIC`); the
/// broker creates it when `traceTopicEnable=true`.
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Separates the fields of one record (Java `TraceConstants.CONTENT_SPLITOR`).
pub const CONTENT_SEPARATOR: char = '\u{1}';
/// Ends each record (Java `TraceConstants.FIELD_SPLITOR`).
pub const FIELD_SEPARATOR: char = '\u{2}';
/// Group prefix of the producer that writes trace messages (Java
/// `TraceConstants.GROUP_NAME_PREFIX`).
pub const TRACE_PRODUCER_GROUP_PREFIX: &str = "_INNER_TRACE_PRODUCER-";
/// What Java writes for a missing string field.
pub const NULL: &str = "null";

/// Java `MessageType` ordinals (the `msgType` field of a `Pub` record).
pub mod msg_type {
    /// `Normal_Msg`.
    pub const NORMAL: i32 = 0;
    /// `Trans_Msg_Half`.
    pub const TRANS_HALF: i32 = 1;
    /// `Trans_msg_Commit`.
    pub const TRANS_COMMIT: i32 = 2;
    /// `Delay_Msg`.
    pub const DELAY: i32 = 3;
    /// `Order_Msg`.
    pub const ORDER: i32 = 4;
}

/// Java `ConsumeReturnType` ordinals (the `contextCode` of a `SubAfter`).
pub mod context_code {
    /// `SUCCESS`.
    pub const SUCCESS: i32 = 0;
    /// `TIME_OUT`.
    pub const TIME_OUT: i32 = 1;
    /// `EXCEPTION` (the listener failed: a panic here).
    pub const EXCEPTION: i32 = 2;
    /// `RETURNNULL`.
    pub const RETURN_NULL: i32 = 3;
    /// `FAILED` (the listener asked to reconsume later).
    pub const FAILED: i32 = 4;
}

/// A message sent (Java `TraceType.Pub`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PubRecord {
    /// When the send started, ms since the epoch.
    pub timestamp: i64,
    /// The broker's region (`MSG_REGION` of the send answer).
    pub region_id: String,
    /// Producer group.
    pub group: String,
    /// Topic of the message.
    pub topic: String,
    /// The message id (`UNIQ_KEY`).
    pub msg_id: String,
    /// Tags, or [`NULL`].
    pub tags: String,
    /// Keys (space separated), or [`NULL`].
    pub keys: String,
    /// Address of the broker that stored it.
    pub store_host: String,
    /// Body length in bytes.
    pub body_length: i32,
    /// How long the send took, ms.
    pub cost_time: i64,
    /// A [`msg_type`] ordinal.
    pub msg_type: i32,
    /// The broker's offset message id, or [`NULL`] (old records have none).
    pub offset_msg_id: String,
    /// Whether the broker answered SEND_OK.
    pub success: bool,
}

/// A listener call is about to consume a message (Java `TraceType.SubBefore`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubBeforeRecord {
    /// When the call started, ms since the epoch.
    pub timestamp: i64,
    /// Region of the message (`MSG_REGION`), or [`NULL`].
    pub region_id: String,
    /// Consumer group.
    pub group: String,
    /// Id shared by the `SubBefore` and `SubAfter` of one call.
    pub request_id: String,
    /// The message id.
    pub msg_id: String,
    /// How often it was consumed before (`reconsumeTimes`).
    pub retry_times: i32,
    /// Keys, or [`NULL`].
    pub keys: String,
}

/// A listener call returned (Java `TraceType.SubAfter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubAfterRecord {
    /// The `request_id` of the matching [`SubBeforeRecord`].
    pub request_id: String,
    /// The message id.
    pub msg_id: String,
    /// Call duration divided by the messages of the call, ms.
    pub cost_time: i64,
    /// Whether the listener consumed it.
    pub success: bool,
    /// Keys, or [`NULL`].
    pub keys: String,
    /// A [`context_code`] ordinal (0 when an old record has none).
    pub context_code: i32,
    /// When the call ended, ms since the epoch (old records have none).
    pub timestamp: Option<i64>,
    /// Consumer group (old records have none).
    pub group: Option<String>,
}

/// One trace record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceRecord {
    /// `Pub`.
    Pub(PubRecord),
    /// `SubBefore`.
    SubBefore(SubBeforeRecord),
    /// `SubAfter`.
    SubAfter(SubAfterRecord),
    /// A type this crate does not model (`EndTransaction`, newer types):
    /// its fields as written, the type first.
    Other(Vec<String>),
}

impl TraceRecord {
    /// The Java `TraceType` name.
    pub fn type_name(&self) -> &str {
        match self {
            TraceRecord::Pub(_) => "Pub",
            TraceRecord::SubBefore(_) => "SubBefore",
            TraceRecord::SubAfter(_) => "SubAfter",
            TraceRecord::Other(f) => f.first().map_or("", String::as_str),
        }
    }

    /// The message id the record is about.
    pub fn msg_id(&self) -> &str {
        match self {
            TraceRecord::Pub(r) => &r.msg_id,
            TraceRecord::SubBefore(r) => &r.msg_id,
            TraceRecord::SubAfter(r) => &r.msg_id,
            TraceRecord::Other(f) => f.get(5).map_or("", String::as_str),
        }
    }

    /// The keys field of the record.
    fn keys(&self) -> &str {
        match self {
            TraceRecord::Pub(r) => &r.keys,
            TraceRecord::SubBefore(r) => &r.keys,
            TraceRecord::SubAfter(r) => &r.keys,
            TraceRecord::Other(_) => "",
        }
    }

    /// Appends the record, ended by [`FIELD_SEPARATOR`], to `out` (Java
    /// `TraceDataEncoder.encoderFromContextBean`). `Other` is written back
    /// as its fields.
    pub fn encode_into(&self, out: &mut String) {
        const S: char = CONTENT_SEPARATOR;
        // Writing into a String cannot fail.
        let _ = match self {
            TraceRecord::Pub(r) => write!(
                out,
                "Pub{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}",
                r.timestamp,
                r.region_id,
                r.group,
                r.topic,
                r.msg_id,
                r.tags,
                r.keys,
                r.store_host,
                r.body_length,
                r.cost_time,
                r.msg_type,
                r.offset_msg_id,
                r.success
            ),
            TraceRecord::SubBefore(r) => write!(
                out,
                "SubBefore{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}",
                r.timestamp, r.region_id, r.group, r.request_id, r.msg_id, r.retry_times, r.keys
            ),
            TraceRecord::SubAfter(r) => {
                let _ = write!(
                    out,
                    "SubAfter{S}{}{S}{}{S}{}{S}{}{S}{}{S}{}",
                    r.request_id, r.msg_id, r.cost_time, r.success, r.keys, r.context_code
                );
                if let Some(ts) = r.timestamp {
                    let _ = write!(out, "{S}{ts}");
                    if let Some(g) = &r.group {
                        let _ = write!(out, "{S}{g}");
                    }
                }
                Ok(())
            }
            TraceRecord::Other(fields) => {
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(S);
                    }
                    out.push_str(f);
                }
                Ok(())
            }
        };
        out.push(FIELD_SEPARATOR);
    }

    /// The record as text, ended by [`FIELD_SEPARATOR`].
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(256);
        self.encode_into(&mut s);
        s
    }

    /// The keys a trace message holding this record is indexed by (Java
    /// `TraceTransferBean.transKey`): the message id, then the keys field
    /// when it is neither empty nor [`NULL`]. `mqadmin queryMsgTraceById`
    /// finds trace messages by the message id.
    pub fn index_keys(&self) -> impl Iterator<Item = &str> {
        let keys = self.keys();
        let keys = (!keys.is_empty() && keys != NULL).then_some(keys);
        std::iter::once(self.msg_id()).chain(keys)
    }
}

/// Decodes the records of a trace message body (Java
/// `TraceDataEncoder.decoderFromTraceDataString`). Empty records are
/// skipped; a type other than `Pub` / `SubBefore` / `SubAfter` becomes
/// [`TraceRecord::Other`].
///
/// # Errors
///
/// [`Error::InvalidBody`] when a known record has too few fields or a
/// number or boolean does not parse.
pub fn decode(data: &str) -> Result<Vec<TraceRecord>> {
    data.split(FIELD_SEPARATOR)
        .filter(|r| !r.is_empty())
        .map(decode_record)
        .collect()
}

fn invalid(reason: String) -> Error {
    Error::InvalidBody {
        what: "message trace",
        reason,
    }
}

fn decode_record(record: &str) -> Result<TraceRecord> {
    let f: Vec<&str> = record.split(CONTENT_SEPARATOR).collect();
    let kind = f.first().copied().unwrap_or_default();
    let need = match kind {
        "Pub" => 13,
        "SubBefore" => 8,
        "SubAfter" => 6,
        _ => {
            return Ok(TraceRecord::Other(
                f.iter().map(|s| (*s).to_owned()).collect(),
            ));
        }
    };
    if f.len() < need {
        return Err(invalid(format!(
            "a {kind} record has {} fields, at least {need} expected",
            f.len()
        )));
    }
    let s = |i: usize| f.get(i).copied().unwrap_or_default().to_owned();
    let num = |i: usize| -> Result<i64> {
        let v = f.get(i).copied().unwrap_or_default();
        v.trim()
            .parse()
            .map_err(|_| invalid(format!("{kind} field {i} `{v}` is not a number")))
    };
    let int = |i: usize| -> Result<i32> {
        let v = num(i)?;
        i32::try_from(v).map_err(|_| invalid(format!("{kind} field {i} `{v}` is out of range")))
    };
    // Java `Boolean.parseBoolean`: "true" in any case, anything else false.
    let flag = |i: usize| f.get(i).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    Ok(match kind {
        "Pub" => {
            // 13 fields: no offsetMsgId (old clients); 14+: with it.
            let (offset_msg_id, success) = if f.len() == 13 {
                (NULL.to_owned(), flag(12))
            } else {
                (s(12), flag(13))
            };
            TraceRecord::Pub(PubRecord {
                timestamp: num(1)?,
                region_id: s(2),
                group: s(3),
                topic: s(4),
                msg_id: s(5),
                tags: s(6),
                keys: s(7),
                store_host: s(8),
                body_length: int(9)?,
                cost_time: num(10)?,
                msg_type: int(11)?,
                offset_msg_id,
                success,
            })
        }
        "SubBefore" => TraceRecord::SubBefore(SubBeforeRecord {
            timestamp: num(1)?,
            region_id: s(2),
            group: s(3),
            request_id: s(4),
            msg_id: s(5),
            retry_times: int(6)?,
            keys: s(7),
        }),
        _ => TraceRecord::SubAfter(SubAfterRecord {
            request_id: s(1),
            msg_id: s(2),
            cost_time: num(3)?,
            success: flag(4),
            keys: s(5),
            context_code: if f.len() > 6 { int(6)? } else { 0 },
            timestamp: if f.len() > 7 { Some(num(7)?) } else { None },
            group: f.get(8).filter(|g| !g.is_empty()).map(|g| (*g).to_owned()),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pub_record() -> PubRecord {
        PubRecord {
            timestamp: 1_700_000_000_000,
            region_id: "DefaultRegion".into(),
            group: "PG".into(),
            topic: "T".into(),
            msg_id: "7F0000010001".into(),
            tags: "TagA".into(),
            keys: "k1 k2".into(),
            store_host: "127.0.0.1:10911".into(),
            body_length: 5,
            cost_time: 3,
            msg_type: msg_type::NORMAL,
            offset_msg_id: "7F00000100002A9F0000000000000000".into(),
            success: true,
        }
    }

    #[test]
    fn pub_layout_is_java_s() {
        let text = TraceRecord::Pub(pub_record()).encode();
        assert_eq!(
            text,
            "Pub\u{1}1700000000000\u{1}DefaultRegion\u{1}PG\u{1}T\u{1}7F0000010001\u{1}TagA\u{1}k1 k2\u{1}\
             127.0.0.1:10911\u{1}5\u{1}3\u{1}0\u{1}7F00000100002A9F0000000000000000\u{1}true\u{2}"
        );
        assert_eq!(text.split(CONTENT_SEPARATOR).count(), 14);
    }

    #[test]
    fn sub_layouts_are_java_s() {
        let before = TraceRecord::SubBefore(SubBeforeRecord {
            timestamp: 10,
            region_id: "DefaultRegion".into(),
            group: "CG".into(),
            request_id: "R".into(),
            msg_id: "M".into(),
            retry_times: 2,
            keys: NULL.into(),
        });
        assert_eq!(
            before.encode(),
            "SubBefore\u{1}10\u{1}DefaultRegion\u{1}CG\u{1}R\u{1}M\u{1}2\u{1}null\u{2}"
        );
        let after = TraceRecord::SubAfter(SubAfterRecord {
            request_id: "R".into(),
            msg_id: "M".into(),
            cost_time: 7,
            success: false,
            keys: "k".into(),
            context_code: context_code::FAILED,
            timestamp: Some(17),
            group: Some("CG".into()),
        });
        assert_eq!(
            after.encode(),
            "SubAfter\u{1}R\u{1}M\u{1}7\u{1}false\u{1}k\u{1}4\u{1}17\u{1}CG\u{2}"
        );
        let keys: Vec<&str> = after.index_keys().collect();
        assert_eq!(keys, ["M", "k"]);
        let keys: Vec<&str> = before.index_keys().collect();
        assert_eq!(keys, ["M"]);
    }

    #[test]
    fn round_trip_of_a_batch() {
        let records = vec![
            TraceRecord::Pub(pub_record()),
            TraceRecord::SubBefore(SubBeforeRecord {
                timestamp: 1,
                region_id: "r".into(),
                group: "g".into(),
                request_id: "q".into(),
                msg_id: "m".into(),
                retry_times: 0,
                keys: "k".into(),
            }),
            TraceRecord::SubAfter(SubAfterRecord {
                request_id: "q".into(),
                msg_id: "m".into(),
                cost_time: 0,
                success: true,
                keys: "k".into(),
                context_code: 0,
                timestamp: Some(2),
                group: Some("g".into()),
            }),
        ];
        let mut body = String::new();
        for r in &records {
            r.encode_into(&mut body);
        }
        assert_eq!(decode(&body).unwrap(), records);
    }

    #[test]
    fn old_layouts_decode() {
        // Pub without offsetMsgId (13 fields), SubAfter without timeStamp/group.
        let body = "Pub\u{1}1\u{1}r\u{1}g\u{1}t\u{1}m\u{1}null\u{1}null\u{1}h\u{1}1\u{1}2\u{1}0\u{1}true\u{2}\
                    SubAfter\u{1}q\u{1}m\u{1}3\u{1}true\u{1}null\u{1}0\u{2}\
                    EndTransaction\u{1}1\u{1}r\u{1}g\u{1}t\u{1}m\u{2}";
        let got = decode(body).unwrap();
        let TraceRecord::Pub(p) = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!((p.offset_msg_id.as_str(), p.success), (NULL, true));
        let TraceRecord::SubAfter(a) = &got[1] else {
            panic!("{got:?}")
        };
        assert_eq!((a.timestamp, a.group.as_deref()), (None, None));
        assert_eq!(got[2].type_name(), "EndTransaction");
        assert_eq!(got[2].msg_id(), "m");
    }

    #[test]
    fn bad_records_are_errors() {
        assert!(decode("Pub\u{1}1\u{2}").is_err());
        assert!(decode("SubBefore\u{1}x\u{1}r\u{1}g\u{1}q\u{1}m\u{1}0\u{1}k\u{2}").is_err());
        assert!(decode("").unwrap().is_empty());
    }
}
