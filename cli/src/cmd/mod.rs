//! The subcommands, one file each, and what they share.

pub(crate) mod bench;
pub(crate) mod cluster;
mod confirm;
pub(crate) mod consume;
pub(crate) mod group;
pub(crate) mod msg;
mod outcome;
pub(crate) mod produce;
pub(crate) mod topic;

pub(crate) use confirm::confirm;
pub(crate) use outcome::Outcome;
