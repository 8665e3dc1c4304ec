//! rmq-grpc: the RocketMQ 5.x proxy transport (apache.rocketmq.v2 over gRPC).
pub mod proto;
