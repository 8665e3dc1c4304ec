//! Concurrent consumption (Java `MessageListenerConcurrently` and
//! `ConsumeMessageConcurrentlyService`): the listener, the listener calls of
//! a pulled batch and the decisions after a call.

pub(crate) mod listener;
pub(crate) mod service;
pub(crate) mod settle;
