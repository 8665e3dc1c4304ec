//! [`Properties`]: a message's name → value pairs, read in place from the
//! properties string of a stored record until one is changed.
//!
//! | file | what |
//! |---|---|
//! | `properties.rs` | [`Properties`]: the three layers (stored string, shared pairs, edits), lookups and changes |
//! | `wire.rs` | reading a stored properties string (Java `string2messageProperties` rules) |
//! | `shared.rs` | [`SharedValue`] and the pair lists many messages share ([`Properties::insert_shared_in`]) |
//! | `iter.rs` | [`Iter`]: the pairs, each name once |
//! | `convert.rs` | `Debug`, equality, collecting, and conversions from and to `HashMap` |

mod convert;
mod iter;
mod properties;
mod shared;
#[cfg(test)]
mod testing;
mod wire;

pub use iter::Iter;
pub use properties::Properties;
pub use shared::SharedValue;
