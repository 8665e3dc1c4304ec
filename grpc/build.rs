//! Compiles grpc/proto (apache.rocketmq.v2) with protox, a protobuf compiler in pure Rust, so that
//! `cargo build` needs no `protoc` on the machine; tonic-prost-build generates the messages and the
//! client. The encoded descriptor set is written beside the generated code
//! (`$OUT_DIR/apache.rocketmq.v2.bin`) for grpc/proto-check/check.sh.

use std::path::PathBuf;

use prost::Message as _;

const FILES: [&str; 3] = [
    "proto/apache/rocketmq/v2/definition.proto",
    "proto/apache/rocketmq/v2/service.proto",
    "proto/apache/rocketmq/v2/admin.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(FILES, ["proto"])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("apache.rocketmq.v2.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .bytes(".apache.rocketmq.v2.Message.body")
        .compile_fds(fds)?;
    Ok(())
}
