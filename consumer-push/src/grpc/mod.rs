//! The push consumer over the RocketMQ 5.x proxy ([`rmq_grpc::Session`]),
//! chosen by [`PushConsumerBuilder::endpoint`](crate::PushConsumerBuilder::endpoint);
//! as the Java gRPC client (`PushConsumerImpl`, `ProcessQueueImpl`,
//! `ConsumeService`), over the gRPC engine
//! ([`rmq_consumer_base::engine::grpc`]: receive, acks, invisible time,
//! DLQ).
//!
//! - [`start`]: the session's settings are a `PUSH_CONSUMER` of the group
//!   with its subscriptions; the proxy answers its own (FIFO or not,
//!   receive batch size, long-polling timeout, the retry backoff); the
//!   consume service follows ([`consume`] or [`fifo`]).
//! - [`state`]: what the handle and the tasks share, shutdown.
//! - [`assignment`]: `QueryAssignment` per subscribed topic, at start and
//!   every rebalance interval (at most 5 s, Java's period); one
//!   [`receive`] loop per assignment (a broker, queue id −1; a queue of a
//!   FIFO group), its messages in hand counted in [`queue`].
//! - [`receive`]: long-polls `ReceiveMessage` (auto-renew: the proxy keeps
//!   the messages hidden while they are consumed) while the assignment
//!   holds less than the flow-control thresholds ([`policy`]), and hands
//!   each batch to the consume service without waiting for it.
//! - [`consume`]: listener calls under the `consume_concurrency` permits;
//!   consumed messages go to the acker, failed ones are hidden for the
//!   backoff of their attempt (or go to the DLQ), in [`settle`].
//! - [`fifo`]: per message group, one call at a time in order; a failed
//!   call is retried here after the backoff, then its messages go to the
//!   DLQ.
//!
//! Shutdown stops the receive loops, lets the listener calls in flight
//! finish (bounded by `shutdown_await_timeout`), acks what they consumed,
//! then ends the session: `NotifyClientTermination` makes the proxy give
//! the messages still held back to the group.

mod assignment;
mod consume;
mod engine;
mod fifo;
mod policy;
mod queue;
mod receive;
mod settle;
mod start;
mod state;

pub(crate) use policy::check_config;
pub(crate) use start::start;
