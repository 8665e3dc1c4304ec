//! The local file offset store (broadcasting): the store and its file
//! format.

mod file;
mod store;
#[cfg(test)]
mod tests;

pub use store::{DEFAULT_DIR_NAME, LocalFileOffsetStore, OFFSET_FILE_NAME, OFFSET_STORE_DIR_ENV};
