//! Arbitrary bytes into `RemotingCodec::decode`, in a loop until it wants
//! more bytes or fails, then `decode_eof`. Any panic is a bug.
//!
//! The first byte picks how the input is fed (whole, or in chunks of
//! 1..=64 bytes) and whether a small maximum frame length is used, so the
//! partial-input paths of the state machine are fuzzed too.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rmq_protocol::RemotingCodec;
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
    let chunk = match usize::from(mode & 0x7f) {
        0 => data.len().max(1),
        n => n.min(64),
    };
    let mut src = BytesMut::new();
    for piece in data.chunks(chunk) {
        src.extend_from_slice(piece);
        loop {
            match codec.decode(&mut src) {
                Ok(Some(cmd)) => {
                    // Touch the decoded command so nothing is optimized away.
                    std::hint::black_box(&cmd);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    let _ = codec.decode_eof(&mut src);
});
