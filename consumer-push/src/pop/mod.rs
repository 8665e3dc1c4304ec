//! Pop mode (Java `clientRebalance=false`, RocketMQ 5): instead of owning
//! queues and pulling them by offset, the consumer asks the brokers which
//! queues to read (QUERY_ASSIGNMENT; with the group's request mode POP
//! every member gets every queue as `queueId -1`), pops messages from them
//! (each hidden from the group for the pop invisible time), hands them to
//! the listener under the same concurrency and flow-control bounds, acks
//! what was consumed and changes the invisible time of what was not (Java
//! `ConsumeMessagePopConcurrentlyService`); orderly consumers pop in order.
//!
//! The pop requests, their answers, acks, invisible-time changes and the
//! DLQ are the pop engine's ([`rmq_consumer_base::engine::pop`]); this
//! folder keeps what is the push consumer's own:
//!
//! - [`assignment`]: the start check and the assignment loop (the
//!   [`pop_loop`]s of each assigned queue).
//! - [`pop_loop`]: popping one assigned queue, several pops in flight.
//! - [`settle`]: listener calls and what follows them (acks through the
//!   engine's batching ack task).
//! - [`orderly`]: orderly pop (`start_orderly` with pop mode): each queue's
//!   messages in offset order, the broker blocking the queue meanwhile.

mod assignment;
mod orderly;
mod pop_loop;
mod settle;

pub(crate) use assignment::start;
pub(crate) use rmq_consumer_base::engine::pop::DELAY_LEVELS;
