//! The memory side of the built-in stores: what [`OffsetStore`](crate::OffsetStore) answers
//! from the [`OffsetTable`] alone, the same in both; each store adds its
//! backing storage.

use std::future::Future;

use rmq_protocol::MessageQueue;

use crate::error::Result;
use crate::store::ReadOffsetType;
use crate::table::OffsetTable;

impl OffsetTable {
    /// What [`OffsetStore::read_offset`](crate::OffsetStore::read_offset) answers for `read_type`: the
    /// in-memory offset (unless `ReadFromStore`), else what `fetch` finds in
    /// the backing store, which then replaces the in-memory one (unless it
    /// is frozen).
    pub(crate) async fn read_through<Fut>(
        &self,
        mq: &MessageQueue,
        read_type: ReadOffsetType,
        fetch: impl FnOnce() -> Fut,
    ) -> Result<Option<i64>>
    where
        Fut: Future<Output = Result<Option<i64>>>,
    {
        if read_type != ReadOffsetType::ReadFromStore {
            if let Some(offset) = self.get(mq) {
                return Ok(Some(offset));
            }
            if read_type == ReadOffsetType::ReadFromMemory {
                return Ok(None);
            }
        }
        let found = fetch().await?;
        if let Some(offset) = found {
            self.update(mq, offset, false);
        }
        Ok(found)
    }
}

/// The [`OffsetStore`](crate::OffsetStore) methods that only touch memory,
/// and `read_offset` (through [`OffsetTable::read_through`] with the store's
/// method `$fetch`, `async fn(&self, &MessageQueue) -> Result<Option<i64>>`),
/// for a store with an [`OffsetTable`] field `table` and a `group` field
/// (logged).
macro_rules! memory_methods {
    ($fetch:ident) => {
        fn read_offset<'a>(
            &'a self,
            mq: &'a ::rmq_protocol::MessageQueue,
            read_type: crate::store::ReadOffsetType,
        ) -> ::futures::future::BoxFuture<'a, crate::error::Result<Option<i64>>> {
            ::futures::FutureExt::boxed(self.table.read_through(mq, read_type, move || {
                self.$fetch(mq)
            }))
        }

        fn update_offset(
            &self,
            mq: &::rmq_protocol::MessageQueue,
            offset: i64,
            increase_only: bool,
        ) {
            self.table.update(mq, offset, increase_only);
        }

        fn update_and_freeze_offset(&self, mq: &::rmq_protocol::MessageQueue, offset: i64) {
            self.table.update_and_freeze(mq, offset);
        }

        fn remove_offset(&self, mq: &::rmq_protocol::MessageQueue) {
            if self.table.remove(mq).is_some() {
                ::tracing::debug!(group = %self.group, %mq, "offset removed");
            }
        }

        fn offset_table(
            &self,
            topic: Option<&str>,
        ) -> ::std::collections::HashMap<::rmq_protocol::MessageQueue, i64> {
            self.table.snapshot(topic)
        }

        fn memory_offset(&self, mq: &::rmq_protocol::MessageQueue) -> Option<i64> {
            self.table.get(mq)
        }
    };
}

pub(crate) use memory_methods;
