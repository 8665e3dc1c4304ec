//! Arbitrary bytes into `RemotingCodec::decode`, in a loop until it wants
//! more bytes or fails, then `decode_eof`. Any panic is a bug.
//!
//! `RawCodec` reads the same bytes in lockstep: it must accept and refuse
//! exactly the same frames, and each `RawCommand` must convert into the
//! command `RemotingCodec` made.
//!
//! The first byte picks how the input is fed (whole, or in chunks of
//! 1..=64 bytes) and whether a small maximum frame length is used, so the
//! partial-input paths of the state machine are fuzzed too.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rmq_protocol::{RawCodec, RemotingCodec};
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let mut codec = if mode & 0x80 != 0 {
        RemotingCodec::new().with_max_frame_len(4096)
    } else {
        RemotingCodec::new()
    };
    let mut raw_codec = RawCodec::from(codec.clone());
    let mut raw_src = BytesMut::new();
    let chunk = match usize::from(mode & 0x7f) {
        0 => data.len().max(1),
        n => n.min(64),
    };
    let mut src = BytesMut::new();
    for piece in data.chunks(chunk) {
        src.extend_from_slice(piece);
        raw_src.extend_from_slice(piece);
        loop {
            let raw = raw_codec.decode(&mut raw_src);
            match (codec.decode(&mut src), raw) {
                (Ok(Some(cmd)), Ok(Some(raw))) => {
                    for key in cmd.ext_fields.keys() {
                        assert_eq!(raw.ext_field(key), cmd.ext_field(key));
                    }
                    assert_eq!(raw.into_command(), cmd);
                }
                (Ok(None), Ok(None)) => break,
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string());
                    return;
                }
                (a, b) => panic!("the decoders disagree: {a:?} / {b:?}"),
            }
        }
    }
    let eof = codec.decode_eof(&mut src).map(|c| c.is_some()).map_err(|e| e.to_string());
    let raw_eof = raw_codec.decode_eof(&mut raw_src).map(|c| c.is_some()).map_err(|e| e.to_string());
    assert_eq!(eof, raw_eof);
});
