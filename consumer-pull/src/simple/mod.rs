//! [`SimpleConsumer`]: pop consumption (RocketMQ 5.x). The broker picks the
//! queue and hides each received message for an invisible time; the
//! application acks it, hides it longer, or lets the time lapse (then it is
//! delivered again, to any member of the group). No queue belongs to a
//! member, so any number of consumers share a group without a rebalance.
//!
//! The receive / ack / change-invisible calls go through a
//! [`SimpleTransport`]; the remoting one (POP_MESSAGE, ACK_MESSAGE,
//! BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME to the brokers) is the
//! one [`namesrv_addr`](SimpleConsumerBuilder::namesrv_addr) starts; the
//! gRPC one (ReceiveMessage, AckMessage, ChangeInvisibleDuration to a
//! RocketMQ 5.x proxy) the one [`endpoint`](SimpleConsumerBuilder::endpoint)
//! starts.

mod builder;
mod config;
mod consumer;
mod engine;
mod grpc;
mod message;
mod pop;
mod subscriptions;
mod transport;

pub use builder::SimpleConsumerBuilder;
pub use config::SimpleConsumerConfig;
pub use consumer::SimpleConsumer;
pub use message::{ReceiptHandle, ReceivedMessage};
pub use transport::{ReceiveRequest, SimpleTransport};
