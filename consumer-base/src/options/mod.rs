//! [`GroupOptions`]: the settings every consumer of a group has (group,
//! message model, where new queues start, allocation, offset store), and
//! the macros that give each consumer's builder and config their setters
//! and getters, defined and documented once in [`macros`].

mod group;
mod macros;

pub use group::GroupOptions;
