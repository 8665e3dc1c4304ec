//! Property tests of `RemotingCodec`: arbitrary commands round trip in both
//! header serializations, and arbitrary bytes never make the decoder panic.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use proptest::collection::{hash_map, vec};
use proptest::prelude::*;
use rmq_protocol::{LanguageCode, RemotingCodec, RemotingCommand, SerializeType};
use tokio_util::codec::{Decoder, Encoder};

const KNOWN_LANGUAGES: [LanguageCode; 14] = [
    LanguageCode::Java,
    LanguageCode::Cpp,
    LanguageCode::Dotnet,
    LanguageCode::Python,
    LanguageCode::Delphi,
    LanguageCode::Erlang,
    LanguageCode::Ruby,
    LanguageCode::Other,
    LanguageCode::Http,
    LanguageCode::Go,
    LanguageCode::Php,
    LanguageCode::Oms,
    LanguageCode::Rust,
    LanguageCode::NodeJs,
];

fn known_language() -> impl Strategy<Value = LanguageCode> {
    prop::sample::select(&KNOWN_LANGUAGES[..])
}

/// Any language byte: the binary header carries unknown bytes as is.
fn any_language_byte() -> impl Strategy<Value = LanguageCode> {
    any::<u8>().prop_map(LanguageCode::from_code)
}

fn text() -> impl Strategy<Value = String> {
    // Mostly short, any Unicode scalar (controls, quotes, astral planes).
    prop_oneof![
        3 => "[a-zA-Z0-9_%@.-]{0,12}",
        2 => any::<String>(),
        1 => "\\PC{0,40}",
    ]
}

fn ext_fields() -> impl Strategy<Value = HashMap<String, String>> {
    hash_map(text(), text(), 0..8)
}

fn body() -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..600).prop_map(Bytes::from)
}

prop_compose! {
    fn json_command()(
        code in any::<i32>(),
        language in known_language(),
        version in any::<i32>(),
        opaque in any::<i32>(),
        flag in any::<i32>(),
        remark in proptest::option::of(text()),
        ext_fields in ext_fields(),
        body in body(),
    ) -> RemotingCommand {
        RemotingCommand {
            code, language, version, opaque, flag, remark, ext_fields, body,
            serialize_type: SerializeType::Json,
        }
    }
}

prop_compose! {
    fn binary_command()(
        code in any::<i16>(),
        language in any_language_byte(),
        version in any::<i16>(),
        opaque in any::<i32>(),
        flag in any::<i32>(),
        remark in proptest::option::of(text()),
        ext_fields in ext_fields(),
        body in body(),
    ) -> RemotingCommand {
        RemotingCommand {
            code: code.into(), language, version: version.into(), opaque, flag, remark,
            ext_fields, body, serialize_type: SerializeType::RocketMq,
        }
    }
}

fn any_command() -> impl Strategy<Value = RemotingCommand> {
    prop_oneof![json_command(), binary_command()]
}

/// What decoding `cmd` must give: the binary header has no "empty remark".
fn expected(cmd: &RemotingCommand) -> RemotingCommand {
    let mut e = cmd.clone();
    if cmd.serialize_type == SerializeType::RocketMq {
        e.remark = e.remark.filter(|r| !r.is_empty());
    }
    e
}

/// Decodes until the codec wants more bytes or fails; must never panic.
fn drain(
    codec: &mut RemotingCodec,
    src: &mut BytesMut,
) -> Result<Vec<RemotingCommand>, rmq_protocol::Error> {
    let mut out = Vec::new();
    while let Some(cmd) = codec.decode(src)? {
        out.push(cmd);
    }
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn json_commands_round_trip(cmd in json_command()) {
        let mut buf = BytesMut::new();
        RemotingCodec::new().encode(&cmd, &mut buf).unwrap();
        let decoded = RemotingCodec::new().decode(&mut buf).unwrap();
        prop_assert_eq!(decoded, Some(expected(&cmd)));
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn binary_commands_round_trip(cmd in binary_command()) {
        let mut buf = BytesMut::new();
        RemotingCodec::new().encode(&cmd, &mut buf).unwrap();
        let decoded = RemotingCodec::new().decode(&mut buf).unwrap();
        prop_assert_eq!(decoded, Some(expected(&cmd)));
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn command_streams_round_trip_in_any_chunking(
        cmds in vec(any_command(), 1..6),
        cuts in vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut wire = BytesMut::new();
        let mut codec = RemotingCodec::new();
        for c in &cmds {
            codec.encode(c, &mut wire).unwrap();
        }
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(wire.len() + 1)).collect();
        cuts.push(wire.len());
        cuts.sort_unstable();
        let mut src = BytesMut::new();
        let mut got = Vec::new();
        let mut at = 0;
        for cut in cuts {
            src.extend_from_slice(&wire[at..cut]);
            at = cut;
            got.extend(drain(&mut codec, &mut src).unwrap());
        }
        prop_assert!(codec.decode_eof(&mut src).unwrap().is_none());
        let want: Vec<_> = cmds.iter().map(expected).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in vec(any::<u8>(), 0..2048)) {
        let mut codec = RemotingCodec::new();
        let mut src = BytesMut::from(&data[..]);
        if drain(&mut codec, &mut src).is_ok() {
            let _ = codec.decode_eof(&mut src);
        }
    }

    #[test]
    fn arbitrary_chunked_bytes_never_panic(
        chunks in vec(vec(any::<u8>(), 0..64), 0..32),
        max in prop_oneof![Just(rmq_protocol::DEFAULT_MAX_FRAME_LEN), 0usize..512],
    ) {
        let mut codec = RemotingCodec::new().with_max_frame_len(max);
        let mut src = BytesMut::new();
        for chunk in &chunks {
            src.extend_from_slice(chunk);
            if drain(&mut codec, &mut src).is_err() {
                return Ok(());
            }
        }
        let _ = codec.decode_eof(&mut src);
    }

    /// Arbitrary header bytes behind a well-formed prefix reach the header
    /// parsers (random bytes rarely pass the prefix checks).
    #[test]
    fn arbitrary_headers_never_panic(
        type_byte in 0u8..2,
        header in prop_oneof![
            vec(any::<u8>(), 0..256),
            "\\PC{0,200}".prop_map(String::into_bytes),
        ],
        body in vec(any::<u8>(), 0..16),
    ) {
        let mut frame = Vec::new();
        frame.extend_from_slice(&i32::try_from(4 + header.len() + body.len()).unwrap().to_be_bytes());
        frame.extend_from_slice(&((u32::from(type_byte) << 24) | u32::try_from(header.len()).unwrap()).to_be_bytes());
        frame.extend_from_slice(&header);
        frame.extend_from_slice(&body);
        let mut src = BytesMut::from(&frame[..]);
        if let Ok(Some(cmd)) = RemotingCodec::new().decode(&mut src) {
            prop_assert_eq!(&cmd.body[..], &body[..]);
        }
        prop_assert!(src.is_empty());
    }

    /// Valid frames with a few bytes flipped never panic the decoder.
    #[test]
    fn mutated_frames_never_panic(
        cmd in any_command(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut buf = BytesMut::new();
        RemotingCodec::new().encode(&cmd, &mut buf).unwrap();
        for (i, b) in flips {
            let at = i.index(buf.len());
            buf[at] ^= b;
        }
        let mut codec = RemotingCodec::new();
        if drain(&mut codec, &mut buf).is_ok() {
            let _ = codec.decode_eof(&mut buf);
        }
    }
}
