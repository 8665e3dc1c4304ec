//! `RawCodec` against `RemotingCodec`: for any frame both accept or both
//! refuse, a `RawCommand` converts into exactly the command the map decoder
//! makes, and its field lookups and typed headers read what the map holds.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use proptest::collection::{hash_map, vec};
use proptest::prelude::*;
use rmq_protocol::header::{CommandHeader, PullMessageResponseHeader, SendMessageResponseHeader};
use rmq_protocol::{
    LanguageCode, RawCodec, RawCommand, RemotingCodec, RemotingCommand, SerializeType,
};
use tokio_util::codec::{Decoder, Encoder};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9_%@.-]{0,12}",
        2 => any::<String>(),
        1 => "\\PC{0,40}",
        1 => Just("a\"b\\c\u{1}d\u{2}é".to_owned()),
    ]
}

/// Keys a response header really has, so typed reads find them.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset",
            "offsetDelta", "topicSysFlag", "msgId", "queueId", "queueOffset", "transactionId",
        ]).prop_map(str::to_owned),
        2 => text(),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => any::<i64>().prop_map(|n| n.to_string()),
        2 => text(),
        1 => Just(" 12 ".to_owned()),
    ]
}

prop_compose! {
    fn command()(
        code in any::<i16>(),
        version in any::<i16>(),
        opaque in any::<i32>(),
        flag in any::<i32>(),
        remark in proptest::option::of(text()),
        ext_fields in hash_map(key(), value(), 0..10),
        body in vec(any::<u8>(), 0..64).prop_map(Bytes::from),
        json in any::<bool>(),
    ) -> RemotingCommand {
        RemotingCommand {
            code: code.into(),
            language: LanguageCode::Java,
            version: version.into(),
            opaque,
            flag,
            remark,
            ext_fields,
            body,
            serialize_type: if json { SerializeType::Json } else { SerializeType::RocketMq },
        }
    }
}

/// `codec` over `wire` until it wants more bytes, then `decode_eof`.
fn drain<D: Decoder<Error = rmq_protocol::Error>>(
    mut codec: D,
    wire: &[u8],
) -> Result<Vec<D::Item>, String> {
    let mut src = BytesMut::from(wire);
    let mut out = Vec::new();
    loop {
        match codec.decode(&mut src) {
            Ok(Some(item)) => out.push(item),
            Ok(None) => break codec.decode_eof(&mut src).map(|_| out),
            Err(e) => break Err(e),
        }
    }
    .map_err(|e| e.to_string())
}

/// Both decoders over the same bytes.
fn both(
    wire: &[u8],
) -> (
    Result<Vec<RemotingCommand>, String>,
    Result<Vec<RawCommand>, String>,
) {
    (
        drain(RemotingCodec::new(), wire),
        drain(RawCodec::from(RemotingCodec::new()), wire),
    )
}

/// Everything a caller can read from `raw` agrees with `cmd`.
fn agrees(raw: &RawCommand, cmd: &RemotingCommand) -> Result<(), TestCaseError> {
    prop_assert_eq!(raw.code(), cmd.code);
    prop_assert_eq!(raw.opaque(), cmd.opaque);
    prop_assert_eq!(raw.flag(), cmd.flag);
    prop_assert_eq!(raw.remark(), cmd.remark.as_deref());
    prop_assert_eq!(raw.body(), &cmd.body);
    for k in cmd
        .ext_fields
        .keys()
        .map(String::as_str)
        .chain(["absent", ""])
    {
        prop_assert_eq!(raw.ext_field(k), cmd.ext_field(k), "field {:?}", k);
    }
    let typed = |r: rmq_protocol::Result<PullMessageResponseHeader>| format!("{r:?}");
    prop_assert_eq!(typed(raw.decode_header()), typed(cmd.decode_header()));
    let typed = |r: rmq_protocol::Result<SendMessageResponseHeader>| format!("{r:?}");
    prop_assert_eq!(typed(raw.decode_header()), typed(cmd.decode_header()));
    prop_assert_eq!(raw.clone().into_command(), cmd.clone());
    Ok(())
}

fn frame(type_byte: u8, header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(
        &i32::try_from(4 + header.len() + body.len())
            .unwrap()
            .to_be_bytes(),
    );
    f.extend_from_slice(
        &((u32::from(type_byte) << 24) | u32::try_from(header.len()).unwrap()).to_be_bytes(),
    );
    f.extend_from_slice(header);
    f.extend_from_slice(body);
    f
}

fn check_same(wire: &[u8]) -> Result<(), TestCaseError> {
    match both(wire) {
        (Ok(maps), Ok(raws)) => {
            prop_assert_eq!(maps.len(), raws.len());
            for (m, r) in maps.iter().zip(&raws) {
                agrees(r, m)?;
            }
        }
        (Err(a), Err(b)) => prop_assert_eq!(a, b),
        (a, b) => prop_assert!(false, "decoders disagree: map {:?}, raw {:?}", a, b),
    }
    Ok(())
}

/// A JSON ext-field value in any of the forms peers send.
fn json_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => value().prop_map(|v| serde_json::Value::String(v).to_string()),
        1 => Just("null".to_owned()),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => Just("1.5e3".to_owned()),
        1 => Just("true".to_owned()),
        1 => Just("[1,\"x\"]".to_owned()),
        1 => Just("{\"a\":{\"b\":null}}".to_owned()),
        1 => Just("\"\\u00e9\\n\\\"q\\\"\"".to_owned()),
        // Control characters and bad escapes: not JSON, both must refuse.
        1 => Just("\"raw\u{1}ctl\"".to_owned()),
        1 => Just("\"tab\there\"".to_owned()),
        1 => Just("\"bad\\qescape\"".to_owned()),
        1 => Just("01".to_owned()),
    ]
}

fn json_key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => key().prop_map(|k| serde_json::Value::String(k).to_string()),
        1 => Just("\"next\\u0042eginOffset\"".to_owned()),
    ]
}

prop_compose! {
    /// A JSON header written by hand: keys repeated, odd values, unknown
    /// members, `extFields` null or twice.
    fn json_header()(
        ext in vec((json_key(), json_value()), 0..8),
        ext2 in proptest::option::of(vec((json_key(), json_value()), 0..3)),
        null_ext in any::<bool>(),
        opaque in any::<i32>(),
        extra in any::<bool>(),
        language in prop::sample::select(vec!["\"JAVA\"", "12", "null", "\"X\""]),
    ) -> String {
        let members = |ext: &[(String, String)]| {
            ext.iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(",")
        };
        let ext_json = if null_ext { "null".to_owned() } else { format!("{{{}}}", members(&ext)) };
        let mut out = format!(
            "{{\"code\":0,\"extFields\":{ext_json},\"flag\":1,\"language\":{language},\"opaque\":{opaque}"
        );
        if extra {
            out.push_str(",\"unknown\":{\"x\":[1,2]},\"remark\":\"r\\u00e9\"");
        }
        if let Some(e2) = ext2 {
            out.push_str(&format!(",\"extFields\":{{{}}}", members(&e2)));
        }
        out.push('}');
        out
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn raw_decoding_agrees_with_the_map_decoder(cmds in vec(command(), 1..4)) {
        let mut wire = BytesMut::new();
        for c in &cmds {
            RemotingCodec::new().encode(c, &mut wire).unwrap();
        }
        check_same(&wire)?;
    }

    #[test]
    fn hand_written_json_headers_agree(
        header in json_header(),
        spaced in any::<bool>(),
        body in vec(any::<u8>(), 0..8),
    ) {
        // Whitespace between the tokens (inside strings too: both decoders
        // read the same bytes).
        let header = if spaced {
            format!(" {} \n", header.replace(',', " ,\t").replace(':', "\r\n: "))
        } else {
            header
        };
        check_same(&frame(0, header.as_bytes(), &body))?;
    }

    #[test]
    fn mutated_frames_agree(
        cmd in command(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut buf = BytesMut::new();
        RemotingCodec::new().encode(&cmd, &mut buf).unwrap();
        for (i, b) in flips {
            let at = i.index(buf.len());
            buf[at] ^= b;
        }
        check_same(&buf)?;
    }

    #[test]
    fn arbitrary_headers_agree(
        type_byte in 0u8..2,
        header in prop_oneof![
            vec(any::<u8>(), 0..256),
            "\\PC{0,200}".prop_map(String::into_bytes),
        ],
    ) {
        check_same(&frame(type_byte, &header, b"body"))?;
    }
}

/// A JSON header that is not UTF-8 is refused by both decoders alike (the
/// raw decoder checks the header once and leaves it to the map decoder).
#[test]
fn a_header_that_is_not_utf8_is_refused_alike() {
    for header in [
        &b"{\"code\":0,\"remark\":\"\xff\"}"[..],
        b"{\"code\":0,\"extFields\":{\"a\":\"\xc3\"}}",
    ] {
        let wire = frame(0, header, b"");
        let (map, raw) = both(&wire);
        assert!(map.is_err(), "the map decoder refuses {header:?}");
        assert_eq!(map.err(), raw.err());
    }
}

#[test]
fn a_pull_answer_reads_in_place_and_converts_back() {
    let header = br#"{"code":0,"extFields":{"suggestWhichBrokerId":"0","nextBeginOffset":"32","minOffset":"0","maxOffset":"100","topicSysFlag":"0","groupSysFlag":"0"},"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":475}"#;
    let mut src = BytesMut::from(&frame(0, header, b"msgs")[..]);
    let raw = RawCodec::default().decode(&mut src).unwrap().unwrap();
    let h: PullMessageResponseHeader = raw.decode_header().unwrap();
    assert_eq!(
        (h.next_begin_offset, h.max_offset, h.offset_delta),
        (32, 100, None)
    );
    assert_eq!(raw.ext_field("topicSysFlag"), Some("0"));
    assert!(raw.is_response());
    assert_eq!(&raw.body()[..], b"msgs");
    let cmd = raw.into_command();
    let want: HashMap<String, String> = [
        ("suggestWhichBrokerId", "0"),
        ("nextBeginOffset", "32"),
        ("minOffset", "0"),
        ("maxOffset", "100"),
        ("topicSysFlag", "0"),
        ("groupSysFlag", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(cmd.ext_fields, want);
    assert_eq!(cmd.opaque, 7);
}

#[test]
fn a_missing_required_field_is_named() {
    let header = br#"{"code":0,"extFields":{"nextBeginOffset":"32"},"flag":1,"opaque":7}"#;
    let mut src = BytesMut::from(&frame(0, header, b"")[..]);
    let raw = RawCodec::default().decode(&mut src).unwrap().unwrap();
    let err = PullMessageResponseHeader::read_from_source(&raw).unwrap_err();
    assert!(err.to_string().contains("suggestWhichBrokerId"), "{err}");
}

/// A header declared outside the crate: only `write_to` and `read_from`.
#[derive(Debug, PartialEq)]
struct Outside {
    next: String,
}

impl CommandHeader for Outside {
    fn write_to(&self, fields: &mut rmq_protocol::header::ExtFields) {
        fields.insert("nextBeginOffset".into(), self.next.clone());
    }

    fn read_from(fields: &rmq_protocol::header::ExtFields) -> rmq_protocol::Result<Self> {
        let next = fields
            .get("nextBeginOffset")
            .ok_or(rmq_protocol::Error::MissingField {
                field: "nextBeginOffset",
            })?;
        Ok(Outside { next: next.clone() })
    }
}

#[test]
fn a_header_declared_elsewhere_reads_from_a_raw_command_too() {
    let header = br#"{"code":0,"extFields":{"nextBeginOffset":"32","nextBeginOffset":"33"},"flag":1,"opaque":7}"#;
    let mut src = BytesMut::from(&frame(0, header, b"")[..]);
    let raw = RawCodec::default().decode(&mut src).unwrap().unwrap();
    assert_eq!(
        raw.decode_header::<Outside>().unwrap(),
        Outside { next: "33".into() }
    );
}
