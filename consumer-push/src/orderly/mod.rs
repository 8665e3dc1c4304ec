//! Orderly consumption (Java `MessageListenerOrderly` and
//! `ConsumeMessageOrderlyService`): the listener, the per-queue consume
//! loops, the decisions after a call and the broker lock renewal.

pub(crate) mod listener;
pub(crate) mod lock_renewal;
pub(crate) mod service;
pub(crate) mod settle;
