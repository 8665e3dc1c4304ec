//! Arbitrary bytes as a PULL_MESSAGE response body into
//! `rmq_protocol::message::decode_messages`. Any panic is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let body = bytes::Bytes::copy_from_slice(data);
    let _ = rmq_protocol::message::decode_messages(&body);
});
