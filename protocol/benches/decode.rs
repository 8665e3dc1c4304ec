//! Decoding throughput of the two hot paths of a consumer: the remoting frame
//! (`RemotingCodec::decode`, header JSON included) and the pull body
//! (`decode_messages`), in messages/s and bytes/s.
//!
//! ```sh
//! cargo bench -p rmq-protocol --bench decode
//! ```
//!
//! Inputs: a PULL_MESSAGE response like the benchmark harness's (32 stored
//! messages of 1 KiB with the properties the producer sets), and the pull
//! frame captured from a real 5.5.0 broker (`tests/data/v5-pull-found.bin`).

use std::collections::HashMap;
use std::hint::black_box;
use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rmq_protocol::header::{CommandHeader, PullMessageResponseHeader};
use rmq_protocol::message::{MessageVersion, body_crc, decode_messages, encode_stored_message};
use rmq_protocol::{Message, MessageExt, RemotingCodec, RemotingCommand, ResponseCode};
use tokio_util::codec::{Decoder, Encoder};

/// One stored message as a rmq producer's 1 KiB send is stored.
fn stored(i: usize, size: usize) -> Bytes {
    let body: Bytes = (0..size)
        .map(|j| b'a' + u8::try_from((i + j) % 26).unwrap())
        .collect::<Vec<u8>>()
        .into();
    let mut properties = HashMap::new();
    properties.insert(
        "UNIQ_KEY".to_owned(),
        format!("7F000001{:024X}", i as u128 * 7919),
    );
    properties.insert("WAIT".to_owned(), "true".to_owned());
    properties.insert("TAGS".to_owned(), "bench".to_owned());
    let host: SocketAddr = "127.0.0.1:10911".parse().unwrap();
    let msg = MessageExt {
        message: Message {
            topic: "bench_drain_20250101000000".to_owned(),
            flag: 0,
            properties: properties.into(),
            body: body.clone(),
        },
        queue_id: 3,
        queue_offset: i64::try_from(i).unwrap(),
        born_timestamp: 1_700_000_000_000,
        store_timestamp: 1_700_000_000_001,
        born_host: "127.0.0.1:40000".parse().unwrap(),
        store_host: host,
        commit_log_offset: i64::try_from(i * 1300).unwrap(),
        body_crc: body_crc(&body),
        ..MessageExt::default()
    };
    encode_stored_message(&msg, MessageVersion::V1, None).unwrap()
}

/// A pull body of `n` stored messages of `size` bytes.
fn pull_body(n: usize, size: usize) -> Bytes {
    let mut b = BytesMut::new();
    for i in 0..n {
        b.extend_from_slice(&stored(i, size));
    }
    b.freeze()
}

/// The whole PULL_MESSAGE response frame (length prefix included) for `body`.
fn pull_frame(body: Bytes) -> Bytes {
    let header = PullMessageResponseHeader {
        suggest_which_broker_id: 0,
        next_begin_offset: 32,
        min_offset: 0,
        max_offset: 200_000,
        ..PullMessageResponseHeader::default()
    };
    let mut cmd = RemotingCommand::new_response(ResponseCode::SUCCESS, None).with_body(body);
    header.write_to(&mut cmd.ext_fields);
    let mut out = BytesMut::new();
    RemotingCodec::new().encode(cmd, &mut out).unwrap();
    out.freeze()
}

fn golden_pull_frame() -> Bytes {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/v5-pull-found.bin");
    Bytes::from(std::fs::read(path).unwrap())
}

fn bench_pull_body(c: &mut Criterion) {
    let mut g = c.benchmark_group("pull_body");
    for (n, size) in [(32usize, 1024usize), (32, 128), (1, 1024)] {
        let body = pull_body(n, size);
        assert_eq!(decode_messages(&body).unwrap().len(), n);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(
            BenchmarkId::new("decode_messages/msgs", format!("{n}x{size}B")),
            &body,
            |b, body| b.iter(|| decode_messages(black_box(body)).unwrap()),
        );
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_with_input(
            BenchmarkId::new("decode_messages/bytes", format!("{n}x{size}B")),
            &body,
            |b, body| b.iter(|| decode_messages(black_box(body)).unwrap()),
        );
    }
    // The real broker's frame: 4 messages, two of them zlib-compressed 5 400-byte bodies.
    let golden = golden_pull_frame();
    let mut buf = BytesMut::from(&golden[..]);
    let cmd = RemotingCodec::new().decode(&mut buf).unwrap().unwrap();
    let n = decode_messages(&cmd.body).unwrap().len() as u64;
    g.throughput(Throughput::Elements(n));
    g.bench_function("decode_messages/msgs/golden-v5.5.0", |b| {
        b.iter(|| decode_messages(black_box(&cmd.body)).unwrap())
    });
    g.finish();
}

fn bench_frame(c: &mut Criterion) {
    let mut g = c.benchmark_group("frame");
    for (label, frame) in [
        ("pull-32x1KiB", pull_frame(pull_body(32, 1024))),
        ("pull-golden-v5.5.0", golden_pull_frame()),
    ] {
        g.throughput(Throughput::Bytes(frame.len() as u64));
        // The copy into a fresh read buffer happens in the (untimed) setup.
        g.bench_with_input(BenchmarkId::new("decode/bytes", label), &frame, |b, f| {
            b.iter_batched(
                || BytesMut::from(&f[..]),
                |mut buf| RemotingCodec::new().decode(&mut buf).unwrap().unwrap(),
                BatchSize::SmallInput,
            )
        });
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(BenchmarkId::new("decode/frames", label), &frame, |b, f| {
            b.iter_batched(
                || BytesMut::from(&f[..]),
                |mut buf| RemotingCodec::new().decode(&mut buf).unwrap().unwrap(),
                BatchSize::SmallInput,
            )
        });
    }
    // Frame + header + pull body: everything a consumer does per pull response.
    let frame = pull_frame(pull_body(32, 1024));
    g.throughput(Throughput::Elements(32));
    g.bench_function("decode+header+body/msgs/pull-32x1KiB", |b| {
        b.iter_batched(
            || BytesMut::from(&frame[..]),
            |mut buf| {
                let cmd = RemotingCodec::new().decode(&mut buf).unwrap().unwrap();
                let h: PullMessageResponseHeader = cmd.decode_header().unwrap();
                black_box(h);
                decode_messages(&cmd.body).unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench_pull_body, bench_frame);
criterion_main!(benches);
