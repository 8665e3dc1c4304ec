//! Property tests for `rmq_protocol::message`: stored-message encode/decode
//! round trips in every variant, no panics on arbitrary or truncated input,
//! the batch layout and the properties string.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::Bytes;
use proptest::collection::{hash_map, vec};
use proptest::prelude::*;
use rmq_protocol::message::{
    self, CompressionType, DecodeOptions, Message, MessageExt, MessageVersion, StoredMessages,
    property, sys_flag,
};

fn host() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::V4(Ipv4Addr::from(ip)), port)),
        (any::<[u8; 16]>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port)),
    ]
}

/// Property names and values that survive the properties string.
fn prop_text() -> impl Strategy<Value = String> {
    "[^\u{1}\u{2}]{1,16}"
}

fn properties() -> impl Strategy<Value = HashMap<String, String>> {
    (
        hash_map(prop_text(), prop_text(), 0..6),
        proptest::option::of("[0-9A-F]{32}"),
    )
        .prop_map(|(mut m, uniq)| {
            if let Some(u) = uniq {
                m.insert(property::UNIQ_KEY.to_owned(), u);
            }
            m
        })
}

fn compression() -> impl Strategy<Value = Option<CompressionType>> {
    prop_oneof![
        Just(None),
        Just(Some(CompressionType::Zlib)),
        Just(Some(CompressionType::Lz4)),
        Just(Some(CompressionType::Zstd)),
    ]
}

/// A message as a broker would store it, with the encoding to use.
#[derive(Debug, Clone)]
struct Stored {
    msg: MessageExt,
    version: MessageVersion,
    compression: Option<CompressionType>,
}

fn stored(max_body: usize) -> impl Strategy<Value = Stored> {
    let topic = prop_oneof![
        "[A-Za-z0-9_%|-]{1,40}",
        "[A-Za-z0-9_%|-]{120,300}",
        "[^\u{0}]{1,20}",
    ];
    let header = (
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
        any::<i64>(),
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
    );
    (
        topic,
        vec(any::<u8>(), 0..max_body),
        properties(),
        header,
        host(),
        host(),
        any::<bool>(),
        compression(),
    )
        .prop_map(
            move |(topic, body, properties, h, born_host, store_host, v2, compression)| {
                let (
                    queue_id,
                    flag,
                    queue_offset,
                    commit_log_offset,
                    sys_flag,
                    born,
                    store,
                    crc,
                    recon,
                    prep,
                ) = h;
                let version = if v2 || topic.len() > 255 {
                    MessageVersion::V2
                } else {
                    MessageVersion::V1
                };
                let msg = MessageExt {
                    message: Message {
                        topic,
                        flag,
                        properties: properties.into(),
                        body: Bytes::from(body),
                    },
                    queue_id,
                    queue_offset,
                    commit_log_offset,
                    // Never an inner-batch container: decode_messages would unwrap it.
                    sys_flag: sys_flag & !sys_flag::NEED_UNWRAP,
                    born_timestamp: born,
                    born_host,
                    store_timestamp: store,
                    store_host,
                    body_crc: crc,
                    reconsume_times: recon,
                    prepared_transaction_offset: prep,
                    ..MessageExt::default()
                };
                Stored {
                    msg,
                    version,
                    compression,
                }
            },
        )
}

fn encode(s: &Stored) -> Bytes {
    message::encode_stored_message(&s.msg, s.version, s.compression).unwrap()
}

/// What decoding `encode(s)` must give.
fn expected(s: &Stored, encoded_len: usize) -> MessageExt {
    let mut want = s.msg.clone();
    want.store_size = i32::try_from(encoded_len).unwrap();
    let mut flag =
        want.sys_flag & !(sys_flag::COMPRESSED | sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
    if let Some(c) = s.compression {
        flag =
            (flag & !sys_flag::COMPRESSION_TYPE_MASK) | (c.sys_flag_bits() & !sys_flag::COMPRESSED);
    }
    if want.born_host.is_ipv6() {
        flag |= sys_flag::BORNHOST_V6;
    }
    if want.store_host.is_ipv6() {
        flag |= sys_flag::STOREHOST_V6;
    }
    // Java keeps bit 0 of an empty compressed body (it never decompresses it);
    // the encoder compresses even an empty body, so it is never empty here.
    want.sys_flag = flag;
    want.offset_msg_id = message::offset_msg_id(want.store_host, want.commit_log_offset);
    want.msg_id = want
        .unique_key()
        .map_or_else(|| want.offset_msg_id.clone(), str::to_owned);
    want
}

/// A hand-written parser of the batch layout (Java `MessageDecoder.encodeMessages`),
/// independent of the crate's decoder.
fn hand_decode_batch(mut b: &[u8]) -> Vec<(i32, Vec<u8>, Vec<u8>)> {
    fn i32_at(b: &[u8], at: usize) -> i32 {
        i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let total = usize::try_from(i32_at(b, 0)).unwrap();
        assert_eq!(i32_at(b, 4), 0, "MAGICCODE");
        assert_eq!(i32_at(b, 8), 0, "BODYCRC");
        let flag = i32_at(b, 12);
        let body_len = usize::try_from(i32_at(b, 16)).unwrap();
        let body = b[20..20 + body_len].to_vec();
        let at = 20 + body_len;
        let props_len =
            usize::try_from(i16::from_be_bytes(b[at..at + 2].try_into().unwrap())).unwrap();
        let props = b[at + 2..at + 2 + props_len].to_vec();
        assert_eq!(total, at + 2 + props_len, "TOTALSIZE");
        out.push((flag, body, props));
        b = &b[total..];
    }
    out
}

/// Names the changes of [`properties_in_place_agree_with_the_map`] use.
const NAMES: [&str; 6] = ["a", "b", "c", "ab", "ba", "bc"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stored_round_trip(records in vec(stored(600), 1..5)) {
        let encoded: Vec<Bytes> = records.iter().map(encode).collect();
        let body = Bytes::from(encoded.concat());
        let got = message::decode_messages(&body).unwrap();
        prop_assert_eq!(got.len(), records.len());
        for ((g, s), e) in got.iter().zip(&records).zip(&encoded) {
            prop_assert_eq!(g, &expected(s, e.len()));
            if s.compression.is_none() && !g.body.is_empty() {
                // Zero copy: the body points into the pull body.
                prop_assert!(body.as_ptr_range().contains(&g.body.as_ptr()));
            }
        }
        // The iterator agrees.
        let iterated: Vec<MessageExt> = StoredMessages::new(&body, DecodeOptions::default())
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert_eq!(iterated, got);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        let b = Bytes::from(bytes);
        let _ = message::decode_messages(&b);
        let _ = message::decode_message(&b);
        let _ = message::decode_batch(&b, "t");
        let _ = message::decode_properties(&b);
    }

    #[test]
    fn corrupted_records_never_panic(
        s in stored(200),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut v = encode(&s).to_vec();
        for (at, x) in flips {
            let i = at.index(v.len());
            v[i] ^= x | 1;
        }
        let b = Bytes::from(v);
        let _ = message::decode_messages(&b);
        let _ = message::decode_messages_with(&b, &DecodeOptions::new().with_verify_body_crc(true));
    }

    #[test]
    fn arbitrary_header_prefix_never_panics(
        magic_v2 in any::<bool>(),
        sys in any::<i32>(),
        tail in vec(any::<u8>(), 0..300),
    ) {
        // A plausible TOTALSIZE, magic and sysFlag (so the decoder gets past
        // the first checks), followed by garbage.
        let mut v = Vec::new();
        let total = i32::try_from(40 + tail.len()).unwrap();
        v.extend_from_slice(&total.to_be_bytes());
        let magic = if magic_v2 { message::MAGIC_CODE_V2 } else { message::MAGIC_CODE_V1 };
        v.extend_from_slice(&magic.to_be_bytes());
        v.extend_from_slice(&[0u8; 28]);
        v.extend_from_slice(&sys.to_be_bytes());
        v.extend_from_slice(&tail);
        let _ = message::decode_messages(&Bytes::from(v));
    }

    #[test]
    fn truncated_records_are_errors(s in stored(100)) {
        let e = encode(&s);
        for cut in 1..e.len() {
            prop_assert!(message::decode_messages(&e.slice(..cut)).is_err(), "cut at {}", cut);
        }
    }

    #[test]
    fn batch_hand_decode_round_trip(
        msgs in vec(
            (vec(any::<u8>(), 0..300), any::<i32>(), properties()),
            1..6,
        )
    ) {
        let msgs: Vec<Message> = msgs
            .into_iter()
            .map(|(body, flag, properties)| Message { topic: "T".to_owned(), flag, properties: properties.into(), body: body.into() })
            .collect();
        let encoded = message::encode_batch(&msgs).unwrap();
        let hand = hand_decode_batch(&encoded);
        prop_assert_eq!(hand.len(), msgs.len());
        for ((flag, body, props), m) in hand.iter().zip(&msgs) {
            prop_assert_eq!(*flag, m.flag);
            prop_assert_eq!(&body[..], &m.body[..]);
            prop_assert_eq!(message::decode_properties(props).unwrap(), m.properties.to_map());
        }
        prop_assert_eq!(message::decode_batch(&encoded, "T").unwrap(), msgs);
    }

    #[test]
    fn properties_round_trip(m in hash_map(prop_text(), prop_text(), 0..20)) {
        message::validate_properties(&m).unwrap();
        let s = message::encode_properties(&m);
        prop_assert!(s.is_empty() || s.ends_with(message::PROPERTY_SEPARATOR), "unterminated");
        prop_assert_eq!(message::decode_properties(s.as_bytes()).unwrap(), m);
    }

    /// Properties read in place agree with the map decoder on any string of
    /// names, values and separators (duplicates, empties, missing 0x01), and
    /// after changes with a map given the same changes: pairs set or removed
    /// in one message, and pairs set in two messages at once (which then
    /// share them).
    #[test]
    fn properties_in_place_agree_with_the_map(
        pieces in vec(prop_oneof![
            Just("\u{1}".to_owned()), Just("\u{2}".to_owned()), "[ab]{0,2}".prop_map(|s| s),
        ], 0..40),
        edits in vec((0..NAMES.len(), 0..3u8, "[xy]{1,2}"), 0..8),
    ) {
        let text: String = pieces.concat();
        let map = message::decode_properties(text.as_bytes()).unwrap();
        let mut maps = [map.clone(), map];
        let props = message::Properties::from_wire(Bytes::from(text)).unwrap();
        let mut props = [props.clone(), props];
        prop_assert_eq!(&props[0], &maps[0]);
        for (name, kind, value) in edits {
            let name = NAMES[name];
            match kind {
                0 => {
                    props[0].insert(name, value.clone());
                    maps[0].insert(name.to_owned(), value);
                }
                1 => prop_assert_eq!(props[0].remove(name), maps[0].remove(name)),
                _ => {
                    let shared = message::SharedValue::from(value.as_str());
                    message::Properties::insert_shared_in(&mut props, &[(name, &shared)]);
                    for map in &mut maps {
                        map.insert(name.to_owned(), value.clone());
                    }
                }
            }
            for (props, map) in props.iter().zip(&maps) {
                prop_assert_eq!(props.len(), map.len());
                prop_assert_eq!(props.to_map(), map.clone());
            }
        }
    }

    #[test]
    fn offset_msg_id_round_trip(h in host(), offset in any::<i64>()) {
        let id = message::offset_msg_id(h, offset);
        prop_assert_eq!(id.len(), if h.is_ipv4() { 32 } else { 56 });
        prop_assert!(id.bytes().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        prop_assert_eq!(message::parse_offset_msg_id(&id).unwrap(), (h, offset));
    }
}
