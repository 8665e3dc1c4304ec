//! Encoding frames: [`RemotingCodec`]'s `Encoder` impls and
//! [`RemotingCodec::encode_with_ext_json`]. The header goes in first, then
//! the length prefix is written into the 8 bytes reserved for it.

use bytes::{BufMut, BytesMut};
use tokio_util::codec::Encoder;

use crate::code::SerializeType;
use crate::command::RemotingCommand;
use crate::error::Error;

use super::frame::{PREFIX_LEN, RemotingCodec};
use super::{binary, json};

/// Largest header the 24-bit header-length field can describe.
const MAX_HEADER_LEN: usize = 0x00FF_FFFF;

impl RemotingCodec {
    /// Appends one frame for `item` whose JSON `extFields` are `ext_members`
    /// (pre-encoded members, e.g. from
    /// [`CommandHeader::write_json_members`](crate::header::CommandHeader::write_json_members))
    /// instead of `item.ext_fields`, which must then be empty. The frame
    /// decodes to `item` with those fields; no map is built or sorted.
    ///
    /// # Errors
    ///
    /// As the [`Encoder`] impl, and [`Error::Encode`] when `item` is not
    /// JSON-serialized or already has ext fields. `dst` is left as it was.
    pub fn encode_with_ext_json(
        &self,
        item: &RemotingCommand,
        ext_members: &[u8],
        dst: &mut BytesMut,
    ) -> Result<(), Error> {
        if item.serialize_type != SerializeType::Json {
            return Err(Error::Encode(
                "pre-encoded ext fields need a JSON-serialized command".into(),
            ));
        }
        if !item.ext_fields.is_empty() {
            return Err(Error::Encode(
                "pre-encoded ext fields replace the command's own; it has some".into(),
            ));
        }
        self.encode_inner(item, Some(ext_members), dst)
    }

    fn encode_ref(&self, item: &RemotingCommand, dst: &mut BytesMut) -> Result<(), Error> {
        self.encode_inner(item, None, dst)
    }

    fn encode_inner(
        &self,
        item: &RemotingCommand,
        ext_members: Option<&[u8]>,
        dst: &mut BytesMut,
    ) -> Result<(), Error> {
        let body_len = item.body.len();
        let too_large = |len: usize| Error::FrameTooLarge {
            len: u64::try_from(len).unwrap_or(u64::MAX),
            max: self.max_frame_len(),
        };
        let min_len = body_len.saturating_add(PREFIX_LEN);
        if min_len > self.max_frame_len() {
            return Err(too_large(min_len));
        }

        let estimate = match item.serialize_type {
            SerializeType::Json => {
                json::estimate_len(item).saturating_add(ext_members.map_or(0, <[u8]>::len))
            }
            SerializeType::RocketMq => binary::estimate_len(item),
        };
        dst.reserve(min_len.saturating_add(estimate));

        let start = dst.len();
        dst.put_u64(0);
        let written = match item.serialize_type {
            SerializeType::Json => {
                json::encode(item, ext_members, dst);
                Ok(())
            }
            SerializeType::RocketMq => binary::encode(item, dst),
        };
        let checked = written.and_then(|()| {
            let header_len = dst.len().saturating_sub(start + PREFIX_LEN);
            if header_len > MAX_HEADER_LEN {
                return Err(Error::Encode(format!(
                    "header of {header_len} bytes exceeds the 24-bit limit of {MAX_HEADER_LEN} bytes; \
                     move data from ext fields into the body"
                )));
            }
            let frame_len = min_len.saturating_add(header_len);
            if frame_len > self.max_frame_len() {
                return Err(too_large(frame_len));
            }
            let total_len = i32::try_from(frame_len.saturating_sub(4)).map_err(|_| too_large(frame_len))?;
            let header_word = (u32::from(item.serialize_type.code()) << 24)
                | u32::try_from(header_len).map_err(|_| too_large(frame_len))?;
            let slot = dst
                .get_mut(start..start + PREFIX_LEN)
                .ok_or_else(|| Error::Encode("frame prefix slot is missing".into()))?;
            slot.copy_from_slice(
                &((u64::from(total_len.unsigned_abs()) << 32) | u64::from(header_word))
                    .to_be_bytes(),
            );
            Ok(())
        });
        if let Err(e) = checked {
            dst.truncate(start);
            return Err(e);
        }
        dst.put_slice(&item.body);
        Ok(())
    }
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = Error;

    /// Appends one frame to `dst`.
    ///
    /// # Errors
    ///
    /// [`Error::FrameTooLarge`] when the frame would exceed the maximum
    /// length, [`Error::Encode`] when the header exceeds 24 bits or (binary
    /// headers) a code or version does not fit an `i16`. `dst` is left as it
    /// was.
    fn encode(&mut self, item: RemotingCommand, dst: &mut BytesMut) -> Result<(), Error> {
        self.encode_ref(&item, dst)
    }
}

impl Encoder<&RemotingCommand> for RemotingCodec {
    type Error = Error;

    /// Like the by-value impl, for callers that keep the command (retries).
    fn encode(&mut self, item: &RemotingCommand, dst: &mut BytesMut) -> Result<(), Error> {
        self.encode_ref(item, dst)
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::codec::Decoder;

    use super::*;
    use crate::code::{LanguageCode, RequestCode};
    use crate::codec::testing::route_query;

    /// The frame of `header` written through its JSON members decodes to
    /// the command built through the ext-field map.
    fn assert_members_match_the_map<H: crate::header::CommandHeader>(
        code: RequestCode,
        header: &H,
    ) {
        let by_map = RemotingCommand::request(code, header)
            .with_opaque(-9)
            .with_body(vec![1u8, 2, 3]);
        let mut members = BytesMut::new();
        assert!(header.write_json_members(&mut members));
        let bare = RemotingCommand::new_request(code)
            .with_opaque(-9)
            .with_body(vec![1u8, 2, 3]);
        let mut dst = BytesMut::new();
        RemotingCodec::new()
            .encode_with_ext_json(&bare, &members, &mut dst)
            .unwrap();
        let decoded = RemotingCodec::new().decode(&mut dst).unwrap().unwrap();
        assert_eq!(decoded, by_map);
        assert!(dst.is_empty());
    }

    #[test]
    fn pre_encoded_ext_fields_decode_like_the_map() {
        use crate::header::{EmptyHeader, PullMessageRequestHeader, SendMessageRequestHeaderV2};
        assert_members_match_the_map(RequestCode::HEART_BEAT, &EmptyHeader);
        let pull = PullMessageRequestHeader {
            consumer_group: "group \"quoted\" \\ back-slashed".into(),
            topic: "topic-ü-日本".into(),
            queue_id: 3,
            queue_offset: i64::MAX,
            max_msg_nums: 32,
            sys_flag: -1,
            commit_offset: i64::MIN,
            suspend_timeout_millis: 20_000,
            subscription: Some("TagA || TagB\n\t\u{1}".into()),
            sub_version: 1_700_000_000_000,
            ..PullMessageRequestHeader::default()
        };
        assert_members_match_the_map(RequestCode::PULL_MESSAGE, &pull);
        let send = SendMessageRequestHeaderV2 {
            producer_group: "pg".into(),
            topic: "t".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            born_timestamp: 1,
            // Properties are separated by U+0001 and U+0002.
            properties: Some("KEYS\u{1}k1 k2\u{2}UNIQ_KEY\u{1}ABC\u{2}".into()),
            unit_mode: Some(false),
            batch: Some(true),
            broker_name: Some(String::new()),
            ..SendMessageRequestHeaderV2::default()
        };
        assert_members_match_the_map(RequestCode::SEND_MESSAGE_V2, &send);
    }

    #[test]
    fn pre_encoded_ext_fields_are_refused_beside_a_map_or_in_binary() {
        let mut dst = BytesMut::new();
        let with_map = route_query(SerializeType::Json, LanguageCode::Java);
        assert!(
            RemotingCodec::new()
                .encode_with_ext_json(&with_map, b"\"a\":\"b\"", &mut dst)
                .is_err()
        );
        let binary = RemotingCommand::new_request(RequestCode::HEART_BEAT)
            .with_serialize_type(SerializeType::RocketMq);
        assert!(
            RemotingCodec::new()
                .encode_with_ext_json(&binary, b"", &mut dst)
                .is_err()
        );
        assert!(dst.is_empty());
    }

    #[test]
    fn header_estimates_cover_the_written_header() {
        // Encoding reserves `8 + estimate + body` once; the estimate must not
        // fall short for ordinary (escape-free) headers.
        let cmd = route_query(SerializeType::Json, LanguageCode::Java)
            .with_ext_field("consumerGroup", "group-ü")
            .with_body(vec![7u8; 1000]);
        let mut cmd = cmd;
        cmd.remark = Some("remark".into());
        cmd.opaque = i32::MIN;
        cmd.code = i32::MIN;
        cmd.version = i32::MIN;
        cmd.flag = i32::MIN;
        let mut dst = BytesMut::new();
        RemotingCodec::new().encode(&cmd, &mut dst).unwrap();
        assert!(dst.len() - 8 - 1000 <= json::estimate_len(&cmd));
        let mut cmd = cmd.with_serialize_type(SerializeType::RocketMq);
        cmd.code = 11;
        cmd.version = 401;
        let mut dst = BytesMut::new();
        RemotingCodec::new().encode(&cmd, &mut dst).unwrap();
        assert_eq!(dst.len() - 8 - 1000, binary::estimate_len(&cmd));
    }

    #[test]
    fn failed_encode_leaves_dst_untouched() {
        let mut dst = BytesMut::from(&b"keep"[..]);
        let mut cmd = route_query(SerializeType::RocketMq, LanguageCode::Rust);
        cmd.code = 70_000;
        assert!(matches!(
            RemotingCodec::new().encode(&cmd, &mut dst),
            Err(Error::Encode(_))
        ));
        assert_eq!(&dst[..], b"keep");

        let big_header = route_query(SerializeType::Json, LanguageCode::Rust)
            .with_ext_field("k", "v".repeat(MAX_HEADER_LEN));
        let mut codec = RemotingCodec::new().with_max_frame_len(64 * 1024 * 1024);
        let err = codec.encode(&big_header, &mut dst).unwrap_err();
        assert!(
            matches!(err, Error::Encode(ref m) if m.contains("24-bit")),
            "{err:?}"
        );
        assert_eq!(&dst[..], b"keep");

        let mut small = RemotingCodec::new().with_max_frame_len(100);
        let cmd = route_query(SerializeType::Json, LanguageCode::Rust);
        let err = small.encode(&cmd, &mut dst).unwrap_err();
        assert!(
            matches!(err, Error::FrameTooLarge { len: 139, max: 100 }),
            "{err:?}"
        );
        let err = small
            .encode(cmd.with_body(vec![0u8; 200]), &mut dst)
            .unwrap_err();
        assert!(
            matches!(err, Error::FrameTooLarge { len: 208, max: 100 }),
            "{err:?}"
        );
        assert_eq!(&dst[..], b"keep");
    }
}
