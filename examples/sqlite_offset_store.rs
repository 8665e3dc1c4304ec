//! [`SqliteOffsetStore`]: a consumer group's offsets in a SQLite table, an
//! [`OffsetStore`] of one's own for `.offset_store(..)` of the push, lite and
//! explicit pull consumers.
//!
//! The in-memory half is rmq's [`OffsetTable`] (increase-only updates,
//! frozen offsets, as the built-in stores); this file only adds the backing
//! table `offsets(consumer_group, topic, broker_name, queue_id, next_offset)`.
//! SQLite calls block, so they run on tokio's blocking pool.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rmq::MessageQueue;
use rmq::offset_store::{Error, OffsetStore, OffsetTable, PersistMode, ReadOffsetType, Result};
use rusqlite::{Connection, OptionalExtension, params};

/// Offsets of one consumer group kept in a SQLite database file.
#[derive(Debug, Clone)]
pub(crate) struct SqliteOffsetStore {
    group: String,
    db: Arc<Mutex<Connection>>,
    table: Arc<OffsetTable>,
}

impl SqliteOffsetStore {
    /// Opens (creating if needed) the database at `path` for `group`.
    ///
    /// # Errors
    ///
    /// The file cannot be opened or the table created.
    pub(crate) fn open(path: impl AsRef<Path>, group: &str) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS offsets (
                consumer_group TEXT NOT NULL,
                topic TEXT NOT NULL,
                broker_name TEXT NOT NULL,
                queue_id INTEGER NOT NULL,
                next_offset INTEGER NOT NULL,
                PRIMARY KEY (consumer_group, topic, broker_name, queue_id)
            )",
        )?;
        Ok(SqliteOffsetStore {
            group: group.to_owned(),
            db: Arc::new(Mutex::new(conn)),
            table: Arc::new(OffsetTable::default()),
        })
    }

    /// Every stored offset of the group (what a restarted consumer resumes
    /// from).
    ///
    /// # Errors
    ///
    /// The query failed.
    pub(crate) fn stored(&self) -> rusqlite::Result<HashMap<MessageQueue, i64>> {
        let db = self.db.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stmt = db.prepare(
            "SELECT topic, broker_name, queue_id, next_offset FROM offsets
             WHERE consumer_group = ?1",
        )?;
        let rows = stmt.query_map(params![self.group], |r| {
            let mq = MessageQueue::new(r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?);
            Ok((mq, r.get::<_, i64>(3)?))
        })?;
        rows.collect()
    }

    /// Runs `f` on the connection on the blocking pool.
    async fn with_db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, &str) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T> {
        let db = self.db.clone();
        let group = self.group.clone();
        let done = tokio::task::spawn_blocking(move || {
            let db = db.lock().unwrap_or_else(PoisonError::into_inner);
            f(&db, &group)
        })
        .await
        .map_err(Error::TaskFailed)?;
        done.map_err(|e| Error::Corrupt {
            path: "offsets.sqlite".into(),
            reason: e.to_string(),
        })
    }

    async fn write(&self, offsets: Vec<(MessageQueue, i64)>) -> Result<()> {
        self.with_db(move |db, group| {
            for (mq, offset) in &offsets {
                db.execute(
                    "INSERT INTO offsets (consumer_group, topic, broker_name, queue_id, next_offset)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT DO UPDATE SET next_offset = excluded.next_offset",
                    params![group, mq.topic, mq.broker_name, mq.queue_id, offset],
                )?;
            }
            Ok(())
        })
        .await
    }

    async fn read_stored(&self, mq: &MessageQueue) -> Result<Option<i64>> {
        let mq = mq.clone();
        self.with_db(move |db, group| {
            db.query_row(
                "SELECT next_offset FROM offsets
                 WHERE consumer_group = ?1 AND topic = ?2 AND broker_name = ?3 AND queue_id = ?4",
                params![group, mq.topic, mq.broker_name, mq.queue_id],
                |r| r.get(0),
            )
            .optional()
        })
        .await
    }
}

impl OffsetStore for SqliteOffsetStore {
    fn load(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let this = self.clone();
            let stored = tokio::task::spawn_blocking(move || this.stored())
                .await
                .map_err(Error::TaskFailed)?
                .map_err(|e| Error::Corrupt {
                    path: "offsets.sqlite".into(),
                    reason: e.to_string(),
                })?;
            for (mq, offset) in stored {
                self.table.put(mq, offset);
            }
            Ok(())
        })
    }

    fn update_offset(&self, mq: &MessageQueue, offset: i64, increase_only: bool) {
        self.table.update(mq, offset, increase_only);
    }

    fn update_and_freeze_offset(&self, mq: &MessageQueue, offset: i64) {
        self.table.update_and_freeze(mq, offset);
    }

    fn read_offset<'a>(
        &'a self,
        mq: &'a MessageQueue,
        read_type: ReadOffsetType,
    ) -> BoxFuture<'a, Result<Option<i64>>> {
        Box::pin(async move {
            if read_type != ReadOffsetType::ReadFromStore {
                if let Some(offset) = self.table.get(mq) {
                    return Ok(Some(offset));
                }
                if read_type == ReadOffsetType::ReadFromMemory {
                    return Ok(None);
                }
            }
            let stored = self.read_stored(mq).await?;
            if let Some(offset) = stored {
                self.table.update(mq, offset, false);
            }
            Ok(stored)
        })
    }

    fn persist<'a>(
        &'a self,
        mq: &'a MessageQueue,
        _mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            match self.table.get(mq) {
                Some(offset) => self.write(vec![(mq.clone(), offset)]).await,
                None => Ok(()),
            }
        })
    }

    fn persist_all<'a>(
        &'a self,
        mqs: &'a [MessageQueue],
        _mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            if mqs.is_empty() {
                return Ok(());
            }
            let held = mqs.iter().collect();
            self.write(self.table.offsets_of(&held)).await
        })
    }

    fn remove_offset(&self, mq: &MessageQueue) {
        self.table.remove(mq);
    }

    fn offset_table(&self, topic: Option<&str>) -> HashMap<MessageQueue, i64> {
        self.table.snapshot(topic)
    }

    fn update_consume_offset_to_broker<'a>(
        &'a self,
        mq: &'a MessageQueue,
        offset: i64,
        _mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.write(vec![(mq.clone(), offset)]))
    }
}
