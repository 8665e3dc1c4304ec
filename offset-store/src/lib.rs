//! Consumer offset stores for rmq: where a consumer group remembers how far
//! it consumed each queue.
//!
//! * [`OffsetStore`]: the trait the consumers use (as `Arc<dyn OffsetStore>`).
//! * [`RemoteBrokerOffsetStore`]: clustering consumers; the broker keeps the
//!   offsets (UPDATE_CONSUMER_OFFSET / QUERY_CONSUMER_OFFSET).
//! * [`LocalFileOffsetStore`]: broadcasting consumers; a crash-safe local
//!   file under `~/.rocketmq_offsets/<client id>/<group>/`.
//! * [`offset_store_for`]: the one of the two a consumer's message model
//!   calls for.
//! * [`ConsumeFrom`] and [`start_fallback`]: where a queue without a stored
//!   offset starts.
//!
//! ```
//! use rmq_offset_store::{LocalFileOffsetStore, OffsetStore, PersistMode, ReadOffsetType};
//! use rmq_protocol::MessageQueue;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), rmq_offset_store::Error> {
//! # let dir = std::env::temp_dir().join(format!("rmq-offset-doc-{}", std::process::id()));
//! let store = LocalFileOffsetStore::with_root(&dir, "10.0.0.5@DEFAULT", "my_group")?;
//! store.load().await?;
//! let mq = MessageQueue::new("orders", "broker-a", 0);
//! store.update_offset(&mq, 42, true);
//! store.update_offset(&mq, 40, true); // increase-only: ignored
//! store.persist_all(&[mq.clone()], PersistMode::Sync).await?;
//!
//! // A new store (e.g. after a restart) reads the file.
//! let again = LocalFileOffsetStore::with_root(&dir, "10.0.0.5@DEFAULT", "my_group")?;
//! assert_eq!(again.read_offset(&mq, ReadOffsetType::MemoryFirstThenStore).await?, Some(42));
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(()) }
//! ```
//!
//! See `DESIGN.md` in the crate for the file format, locks and the
//! non-obvious behaviours taken from the Java client.
#![warn(missing_docs)]

mod error;
mod local;
mod memory;
mod model;
mod remote;
mod start;
mod store;
mod table;

pub use error::{Error, Result};
pub use local::{DEFAULT_DIR_NAME, LocalFileOffsetStore, OFFSET_FILE_NAME, OFFSET_STORE_DIR_ENV};
pub use model::offset_store_for;
pub use remote::RemoteBrokerOffsetStore;
pub use start::{ConsumeFrom, StartFallback, start_fallback};
pub use store::{OffsetStore, PersistMode, ReadOffsetType};
pub use table::OffsetTable;
