//! `rmq produce TOPIC`: messages from arguments, lines of stdin or a file
//! (raw or `--json`), or generated (`--size`) for load; rate limit,
//! concurrency, progress, and a latency summary.

mod args;
mod input;
mod message;
mod run;
mod send;
#[cfg(test)]
mod tests;

pub(crate) use args::ProduceArgs;
pub(crate) use input::spawn_generated;
pub(crate) use run::run;
pub(crate) use send::{Sent, finish, send_all};
