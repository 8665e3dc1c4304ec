//! Recalling a timer message before its delivery time:
//! [`Producer::recall`](crate::Producer::recall) (`call.rs`) and
//! [`RecallError`] (`error.rs`), the refusals it names.

mod call;
mod error;

pub use error::RecallError;
