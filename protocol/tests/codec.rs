//! Frame-level tests of `RemotingCodec`: partial input, several frames per
//! read, zero-copy bodies and every kind of malformed frame.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use rmq_protocol::{
    Error, LanguageCode, RemotingCodec, RemotingCommand, RequestCode, ResponseCode, SerializeType,
};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::{Decoder, Encoder, FramedRead, FramedWrite};

fn encode(cmd: &RemotingCommand) -> BytesMut {
    let mut buf = BytesMut::new();
    RemotingCodec::new().encode(cmd, &mut buf).unwrap();
    buf
}

/// A raw frame with the given type byte, header bytes and body.
fn raw_frame(type_byte: u8, header: &[u8], body: &[u8]) -> Vec<u8> {
    let total = 4 + header.len() + body.len();
    let mut v = Vec::new();
    v.extend_from_slice(&i32::try_from(total).unwrap().to_be_bytes());
    v.extend_from_slice(
        &((u32::from(type_byte) << 24) | u32::try_from(header.len()).unwrap()).to_be_bytes(),
    );
    v.extend_from_slice(header);
    v.extend_from_slice(body);
    v
}

fn sample(serialize_type: SerializeType, opaque: i32) -> RemotingCommand {
    let mut cmd = RemotingCommand::new_request(RequestCode::PULL_MESSAGE)
        .with_opaque(opaque)
        .with_ext_field("consumerGroup", "cg")
        .with_ext_field("topic", "T")
        .with_ext_field("queueId", "3")
        .with_ext_field("中文", "ünïcødé 🎉")
        .with_body(Bytes::from(format!("body-{opaque}")))
        .with_serialize_type(serialize_type);
    cmd.remark = Some(format!("remark {opaque}"));
    cmd
}

fn decode_all(codec: &mut RemotingCodec, src: &mut BytesMut) -> Vec<RemotingCommand> {
    let mut out = Vec::new();
    while let Some(cmd) = codec.decode(src).unwrap() {
        out.push(cmd);
    }
    out
}

#[test]
fn both_header_types_round_trip() {
    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let cmd = sample(st, 42);
        let mut buf = encode(&cmd);
        assert_eq!(buf[4], st.code(), "type byte");
        let decoded = RemotingCodec::new().decode(&mut buf).unwrap().unwrap();
        assert_eq!(decoded, cmd);
        assert_eq!(decoded.serialize_type, st);
        assert!(buf.is_empty());
    }
    // A response, with the other flags and an unknown language byte (binary keeps it).
    let mut resp =
        RemotingCommand::new_response(ResponseCode::SYSTEM_BUSY, Some("[OVERLOAD]".into()))
            .with_opaque(-5)
            .with_serialize_type(SerializeType::RocketMq);
    resp.language = LanguageCode::Unknown(200);
    resp.set_oneway();
    let decoded = RemotingCodec::new()
        .decode(&mut encode(&resp))
        .unwrap()
        .unwrap();
    assert_eq!(decoded, resp);
    assert!(decoded.is_response() && decoded.is_oneway());
}

#[test]
fn bytes_fed_one_at_a_time() {
    let cmds = [
        sample(SerializeType::Json, 1),
        sample(SerializeType::RocketMq, 2),
    ];
    let mut wire = BytesMut::new();
    for c in &cmds {
        wire.extend_from_slice(&encode(c));
    }
    let mut codec = RemotingCodec::new();
    let mut src = BytesMut::new();
    let mut out = Vec::new();
    for &b in wire.iter() {
        src.extend_from_slice(&[b]);
        if let Some(cmd) = codec.decode(&mut src).unwrap() {
            out.push(cmd);
        }
    }
    assert_eq!(out, cmds);
    assert!(src.is_empty());
    assert!(codec.decode_eof(&mut src).unwrap().is_none());
}

#[test]
fn several_frames_in_one_chunk_and_a_partial_tail() {
    let cmds: Vec<_> = (0..5)
        .map(|i| {
            let st = if i % 2 == 0 {
                SerializeType::Json
            } else {
                SerializeType::RocketMq
            };
            sample(st, i)
        })
        .collect();
    let mut wire = BytesMut::new();
    for c in &cmds {
        wire.extend_from_slice(&encode(c));
    }
    let next = encode(&sample(SerializeType::Json, 99));
    wire.extend_from_slice(&next[..10]);

    let mut codec = RemotingCodec::new();
    assert_eq!(decode_all(&mut codec, &mut wire), cmds);
    assert_eq!(
        wire.len(),
        6,
        "the 4-byte prefix of the partial frame is consumed"
    );
    wire.extend_from_slice(&next[10..]);
    let last = codec.decode(&mut wire).unwrap().unwrap();
    assert_eq!(last.opaque, 99);
    assert!(wire.is_empty());
}

#[test]
fn empty_body_and_empty_header_fields() {
    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let cmd = RemotingCommand::new_request(RequestCode::HEART_BEAT).with_serialize_type(st);
        let mut buf = encode(&cmd);
        let decoded = RemotingCodec::new().decode(&mut buf).unwrap().unwrap();
        assert!(decoded.body.is_empty());
        assert!(decoded.ext_fields.is_empty());
        assert_eq!(decoded, cmd);
    }
    // A frame whose header is the whole frame (no body) decodes, as does a
    // hand-written minimal JSON header.
    let mut src = BytesMut::from(&raw_frame(0, br#"{"code":0}"#, b"")[..]);
    let cmd = RemotingCodec::new().decode(&mut src).unwrap().unwrap();
    assert_eq!(cmd.code, 0);
    assert!(cmd.body.is_empty());
}

#[test]
fn body_is_a_zero_copy_slice_of_the_frame() {
    let cmd = sample(SerializeType::Json, 7).with_body(vec![0xAB; 64 * 1024]);
    let mut src = encode(&cmd);
    let range = src.as_ptr() as usize..src.as_ptr() as usize + src.len();
    let decoded = RemotingCodec::new().decode(&mut src).unwrap().unwrap();
    let body_start = decoded.body.as_ptr() as usize;
    assert!(range.contains(&body_start));
    assert!(body_start + decoded.body.len() <= range.end);
    assert_eq!(
        body_start + decoded.body.len(),
        range.end,
        "body is the frame's tail"
    );
    assert_eq!(decoded.body, cmd.body);
}

#[test]
fn oversize_frames_are_rejected_before_buffering() {
    let mut codec = RemotingCodec::new();
    // 16 MiB of content plus the 4-byte prefix is over the default limit.
    let mut src = BytesMut::from(&(16 * 1024 * 1024i32).to_be_bytes()[..]);
    match codec.decode(&mut src) {
        Err(Error::FrameTooLarge { len, max }) => {
            assert_eq!(len, 16 * 1024 * 1024 + 4);
            assert_eq!(max, 16 * 1024 * 1024);
        }
        other => panic!("{other:?}"),
    }
    // Exactly 16 MiB including the prefix is fine (still waiting for data).
    let mut src = BytesMut::from(&(16 * 1024 * 1024i32 - 4).to_be_bytes()[..]);
    assert!(codec.decode(&mut src).unwrap().is_none());

    let mut small = RemotingCodec::new().with_max_frame_len(1024);
    let mut src =
        BytesMut::from(&encode(&sample(SerializeType::Json, 1).with_body(vec![0; 2000]))[..]);
    assert!(matches!(
        small.decode(&mut src),
        Err(Error::FrameTooLarge { max: 1024, .. })
    ));
    let mut src = BytesMut::from(&i32::MAX.to_be_bytes()[..]);
    assert!(matches!(
        RemotingCodec::new().decode(&mut src),
        Err(Error::FrameTooLarge {
            len: 2_147_483_651,
            ..
        })
    ));
}

#[test]
fn oversize_commands_are_refused_on_encode() {
    let mut codec = RemotingCodec::new().with_max_frame_len(1024);
    let mut dst = BytesMut::new();
    let err = codec.encode(
        sample(SerializeType::RocketMq, 1).with_body(vec![0; 1024]),
        &mut dst,
    );
    assert!(
        matches!(err, Err(Error::FrameTooLarge { max: 1024, .. })),
        "{err:?}"
    );
    assert!(dst.is_empty());
}

#[test]
fn negative_and_short_lengths_are_rejected() {
    for prefix in [-1i32, i32::MIN, 0, 3] {
        let mut src = BytesMut::from(&prefix.to_be_bytes()[..]);
        let err = RemotingCodec::new().decode(&mut src).unwrap_err();
        assert!(matches!(err, Error::InvalidFrame(_)), "{prefix}: {err:?}");
    }
}

#[test]
fn header_longer_than_the_frame_is_rejected() {
    let mut v = raw_frame(0, br#"{"code":0}"#, b"");
    // Claim an 11-byte header in a frame that has 10 bytes after the header word.
    v[7] = 11;
    let mut src = BytesMut::from(&v[..]);
    let err = RemotingCodec::new().decode(&mut src).unwrap_err();
    assert!(
        matches!(err, Error::InvalidFrame(ref m) if m.contains("header length")),
        "{err:?}"
    );

    // The 24-bit maximum in a tiny frame.
    let mut src = BytesMut::from(&[0, 0, 0, 4, 0, 0xFF, 0xFF, 0xFF][..]);
    assert!(matches!(
        RemotingCodec::new().decode(&mut src),
        Err(Error::InvalidFrame(_))
    ));
}

#[test]
fn unknown_serialize_type_is_rejected() {
    for t in [2u8, 0x7F, 0xFF] {
        let mut src = BytesMut::from(&raw_frame(t, br#"{"code":0}"#, b"")[..]);
        assert!(matches!(
            RemotingCodec::new().decode(&mut src),
            Err(Error::UnknownSerializeType(got)) if got == t
        ));
    }
    // Detected from the 8-byte prefix alone, before the frame arrives.
    let mut src = BytesMut::from(&[0, 0, 0x10, 0, 5, 0, 0, 0][..]);
    assert!(matches!(
        RemotingCodec::new().decode(&mut src),
        Err(Error::UnknownSerializeType(5))
    ));
}

#[test]
fn bad_json_header_is_rejected() {
    for header in [
        &b"{\"code\":"[..],
        b"not json",
        b"{\"code\":1,}",
        b"[1,2]",
        b"{}",
    ] {
        let mut src = BytesMut::from(&raw_frame(0, header, b"body")[..]);
        let err = RemotingCodec::new().decode(&mut src).unwrap_err();
        assert!(matches!(err, Error::JsonHeader(_)), "{err:?}");
        assert!(src.is_empty(), "the bad frame was consumed");
    }
}

#[test]
fn truncated_binary_header_fields_are_rejected() {
    let cmd = sample(SerializeType::RocketMq, 3);
    let full = encode(&cmd);
    let header_len = (u32::from_be_bytes(full[4..8].try_into().unwrap()) & 0xFF_FFFF) as usize;
    let header = &full[8..8 + header_len];
    // Every cut of the header leaves a field (at the end, the ext area)
    // incomplete.
    for cut in 0..header.len() {
        let mut src = BytesMut::from(&raw_frame(1, &header[..cut], b"")[..]);
        let err = RemotingCodec::new().decode(&mut src).unwrap_err();
        assert!(matches!(err, Error::BinaryHeader(_)), "cut {cut}: {err:?}");
    }
    // A remark length pointing past the header.
    let mut h = header.to_vec();
    h[13..17].copy_from_slice(&1000i32.to_be_bytes());
    let mut src = BytesMut::from(&raw_frame(1, &h, b"body")[..]);
    assert!(matches!(
        RemotingCodec::new().decode(&mut src),
        Err(Error::BinaryHeader(_))
    ));
}

#[test]
fn java_and_go_style_json_headers_decode() {
    let java = br#"{"code":0,"extFields":{"queueId":"1","offset":"100"},"flag":1,"language":"JAVA","opaque":12,"serializeTypeCurrentRPC":"JSON","version":479}"#;
    let go = br#"{"code":0,"language":"GO","version":317,"opaque":12,"flag":1,"remark":"","extFields":{"queueId":"1"}}"#;
    let mut src = BytesMut::new();
    src.extend_from_slice(&raw_frame(0, java, b"j"));
    src.extend_from_slice(&raw_frame(0, go, b""));
    let cmds = decode_all(&mut RemotingCodec::new(), &mut src);
    assert_eq!(cmds.len(), 2);
    assert_eq!(cmds[0].language, LanguageCode::Java);
    assert_eq!(cmds[0].ext_field("offset"), Some("100"));
    assert_eq!(&cmds[0].body[..], b"j");
    assert!(cmds[0].is_response());
    assert_eq!(cmds[1].language, LanguageCode::Go);
    assert_eq!(cmds[1].remark.as_deref(), Some(""));
}

/// An `AsyncRead` that hands out its data in chunks of a fixed size.
struct Chunked {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self
            .chunk
            .min(buf.remaining())
            .min(self.data.len() - self.pos);
        let start = self.pos;
        buf.put_slice(&self.data[start..start + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn framed_read_over_chunked_reader() {
    let cmds: Vec<_> = (0u8..20)
        .map(|i| {
            let st = if i % 3 == 0 {
                SerializeType::RocketMq
            } else {
                SerializeType::Json
            };
            sample(st, i.into()).with_body(vec![i; usize::from(i) * 97])
        })
        .collect();
    // Write them with FramedWrite, read them back through several chunk sizes.
    let mut wire = Vec::new();
    {
        let mut sink = FramedWrite::new(&mut wire, RemotingCodec::new());
        for c in &cmds {
            sink.send(c.clone()).await.unwrap();
        }
    }
    for chunk in [1, 3, 7, 64, 4096] {
        let reader = Chunked {
            data: wire.clone(),
            pos: 0,
            chunk,
        };
        let got: Vec<_> = FramedRead::new(reader, RemotingCodec::new())
            .map(|r| r.unwrap())
            .collect()
            .await;
        assert_eq!(got, cmds, "chunk {chunk}");
    }
}

#[tokio::test]
async fn framed_read_reports_a_truncated_stream() {
    let wire = encode(&sample(SerializeType::Json, 1));
    let reader = &wire[..wire.len() - 1];
    let mut framed = FramedRead::new(reader, RemotingCodec::new());
    assert!(matches!(
        framed.next().await,
        Some(Err(Error::InvalidFrame(_)))
    ));
}
