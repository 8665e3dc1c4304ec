//! The `rmq` binary against the real broker: every command, its output when
//! stdout/stderr are not a terminal, the live-group refusal of `group
//! reset`, and (under tmux) the progress bar on a terminal.
#![allow(unreachable_pub)]

mod basics;
mod consume;
mod group;
mod msg;
mod produce;
mod secure;
mod support;
mod terminal;
mod topic;
