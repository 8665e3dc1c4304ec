//! The push consumer's lifecycle over the brokers (remoting pull and pop
//! engines): [`start`], [`stop`] and the [`PushEngine`](crate::engine::PushEngine)
//! the handle talks to ([`engine`]).

pub(crate) mod engine;
pub(crate) mod start;
pub(crate) mod stop;
