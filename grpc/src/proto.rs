//! The apache.rocketmq.v2 messages and the `MessagingService` client, generated from grpc/proto.

#![allow(
    missing_docs,
    unreachable_pub,
    clippy::all,
    clippy::pedantic,
    missing_debug_implementations
)]
#![allow(rust_2018_idioms)]

tonic::include_proto!("apache.rocketmq.v2");

/// The encoded `FileDescriptorSet` of grpc/proto (apache.rocketmq.v2 and the well-known types it imports).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/apache.rocketmq.v2.bin"));
