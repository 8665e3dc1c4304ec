//! The [`OffsetStore`] trait and its argument types.

use std::collections::HashMap;
use std::fmt::Debug;

use futures::future::BoxFuture;
use rmq_protocol::MessageQueue;

use crate::error::Result;

/// Where [`OffsetStore::read_offset`] looks (Java `ReadOffsetType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadOffsetType {
    /// The in-memory table only; never does I/O.
    ReadFromMemory,
    /// The backing store only (broker or file); a value found there also
    /// replaces the in-memory one (unless it is frozen).
    ReadFromStore,
    /// The in-memory table, else the backing store.
    MemoryFirstThenStore,
}

/// How a persist reaches the broker. Local file stores always write (and
/// fsync) the file and ignore the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PersistMode {
    /// UPDATE_CONSUMER_OFFSET as a oneway request: done once it is written
    /// to the connection. What the Java consumer's periodic persist (every
    /// 5 s) does.
    #[default]
    Oneway,
    /// UPDATE_CONSUMER_OFFSET, waiting for the broker's answer: for shutdown
    /// and explicit commits, where the caller must know the offset is stored.
    Sync,
}

/// A consumer group's consume offsets (Java `OffsetStore`): an in-memory
/// table queue → next offset to consume, backed by the broker (clustering,
/// [`RemoteBrokerOffsetStore`](crate::RemoteBrokerOffsetStore)) or by a local
/// file (broadcasting, [`LocalFileOffsetStore`](crate::LocalFileOffsetStore)).
///
/// Memory operations are synchronous and cheap (one short lock, never held
/// across an `.await`); operations that touch the backing store return a
/// boxed future so the trait works as `Arc<dyn OffsetStore>`.
///
/// Offsets are the *next* offset to consume of a queue, as the broker stores
/// them; "no offset" is `None` (Java `-1`).
pub trait OffsetStore: Send + Sync + Debug {
    /// Loads the backing store into memory, once at consumer start. The
    /// broker store has nothing to load; the file store reads its file
    /// (falling back to the backup, then to an empty table, with warnings).
    ///
    /// # Errors
    ///
    /// Implementation-specific; the built-in stores do not fail here.
    fn load(&self) -> BoxFuture<'_, Result<()>>;

    /// Sets the in-memory offset of `mq`. With `increase_only` a smaller
    /// value than the current one is ignored (concurrent consumers pass
    /// `true`, orderly ones and resets `false`). A frozen offset (see
    /// [`update_and_freeze_offset`](Self::update_and_freeze_offset)) is not
    /// changed.
    fn update_offset(&self, mq: &MessageQueue, offset: i64, increase_only: bool);

    /// Sets the in-memory offset of `mq` and freezes it: later
    /// [`update_offset`](Self::update_offset) calls leave it alone until
    /// [`remove_offset`](Self::remove_offset) (Java
    /// `updateAndFreezeOffset`, used after PULL_OFFSET_MOVED so late consume
    /// results cannot move the corrected offset back).
    fn update_and_freeze_offset(&self, mq: &MessageQueue, offset: i64);

    /// The offset of `mq`: from memory, the store or both (see
    /// [`ReadOffsetType`]); `Ok(None)` when there is none (Java `-1`).
    ///
    /// # Errors
    ///
    /// The store could not be asked (broker unreachable, unknown broker,
    /// ...; Java `-2`). "Not found" is `Ok(None)`, never an error.
    fn read_offset<'a>(
        &'a self,
        mq: &'a MessageQueue,
        read_type: ReadOffsetType,
    ) -> BoxFuture<'a, Result<Option<i64>>>;

    /// Writes the in-memory offset of `mq` (if any) to the backing store.
    ///
    /// # Errors
    ///
    /// The write failed ([`Error::Client`](crate::Error::Client),
    /// [`Error::BrokerNotFound`](crate::Error::BrokerNotFound),
    /// [`Error::Io`](crate::Error::Io)); the offset stays in memory.
    fn persist<'a>(&'a self, mq: &'a MessageQueue, mode: PersistMode) -> BoxFuture<'a, Result<()>>;

    /// Writes the in-memory offsets of the queues in `mqs` (the queues this
    /// consumer holds) to the backing store. The broker store also forgets
    /// in-memory offsets of queues not in `mqs` (Java). An empty `mqs` does
    /// nothing at all (Java), so a consumer that holds no queue yet keeps its
    /// table.
    ///
    /// # Errors
    ///
    /// [`Error::Persist`](crate::Error::Persist) naming the queues whose
    /// offsets were not stored (the others were), or the error of a file
    /// write.
    fn persist_all<'a>(
        &'a self,
        mqs: &'a [MessageQueue],
        mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>>;

    /// Forgets the in-memory offset of `mq` (and its frozen flag), e.g.
    /// after the queue was persisted and dropped at rebalance.
    fn remove_offset(&self, mq: &MessageQueue);

    /// A copy of the in-memory offsets, of one topic or (`None`) of all
    /// (Java `cloneOffsetTable`, whose blank topic means all).
    fn offset_table(&self, topic: Option<&str>) -> HashMap<MessageQueue, i64>;

    /// The in-memory offset of `mq`, without I/O: what
    /// [`read_offset`](Self::read_offset) with
    /// [`ReadOffsetType::ReadFromMemory`] answers, for callers on a hot
    /// path (the push consumer reads it before every pull). The default
    /// looks it up in [`offset_table`](Self::offset_table); the built-in
    /// stores read their table directly.
    fn memory_offset(&self, mq: &MessageQueue) -> Option<i64> {
        self.offset_table(Some(&mq.topic)).get(mq).copied()
    }

    /// Stores `offset` for `mq` in the backing store directly, bypassing the
    /// in-memory table (Java `updateConsumeOffsetToBroker`, used by
    /// `PullConsumer.updateConsumeOffset` style APIs and offset resets).
    /// The file store does nothing (Java).
    ///
    /// # Errors
    ///
    /// As [`persist`](Self::persist).
    fn update_consume_offset_to_broker<'a>(
        &'a self,
        mq: &'a MessageQueue,
        offset: i64,
        mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>>;
}
