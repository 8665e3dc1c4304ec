//! [`LocalFileOffsetStore`]: offsets kept in a local file (broadcasting).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use futures::future::BoxFuture;
use rmq_protocol::MessageQueue;
use tracing::debug;

use crate::error::{Error, Result};
use crate::memory::memory_methods;
use crate::store::{OffsetStore, PersistMode};
use crate::table::OffsetTable;

use super::file;

/// Environment variable naming the root directory of local offset stores
/// (the Java client's system property `rocketmq.client.localOffsetStoreDir`).
pub const OFFSET_STORE_DIR_ENV: &str = "RMQ_OFFSET_STORE_DIR";

/// Directory under the home directory used when no root is configured.
pub const DEFAULT_DIR_NAME: &str = ".rocketmq_offsets";

/// Name of the offset file in a store's directory.
pub const OFFSET_FILE_NAME: &str = "offsets.json";

/// The broadcasting offset store (Java `LocalFileOffsetStore`): an in-memory
/// table persisted to `<root>/<client id>/<group>/offsets.json`.
///
/// * Root: the one given to [`with_root`](Self::with_root), else
///   `$RMQ_OFFSET_STORE_DIR`, else `~/.rocketmq_offsets` (Java's default).
/// * Writes are crash-safe: temp file + fsync + rename, with the previous
///   version kept as `offsets.json.bak`. A corrupt or unreadable main file
///   falls back to the backup with a warning; both unusable → empty table and
///   a warning. Reading never fails and never panics.
/// * File I/O runs on tokio's blocking pool, never on a runtime worker.
/// * The file format is this crate's own JSON (see `DESIGN.md`), not the
///   Java client's.
///
/// ```no_run
/// use rmq_offset_store::{LocalFileOffsetStore, OffsetStore, PersistMode};
/// use rmq_protocol::MessageQueue;
///
/// # async fn demo() -> Result<(), rmq_offset_store::Error> {
/// let store = LocalFileOffsetStore::with_root("/var/lib/app/offsets", "10.0.0.5@app", "my_group")?;
/// store.load().await?;
/// let mq = MessageQueue::new("orders", "broker-a", 0);
/// store.update_offset(&mq, 42, true);
/// store.persist_all(&[mq], PersistMode::Sync).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LocalFileOffsetStore {
    client_id: String,
    group: String,
    paths: file::Paths,
    table: OffsetTable,
    /// Serializes the read-merge-write cycles of this store. A std mutex:
    /// it is only taken inside blocking tasks, never across an `.await`.
    file_lock: Arc<Mutex<()>>,
}

impl LocalFileOffsetStore {
    /// A store under the default root: `$RMQ_OFFSET_STORE_DIR`, else
    /// `~/.rocketmq_offsets`.
    ///
    /// # Errors
    ///
    /// [`Error::NoStoreDir`] when neither variable nor a home directory is
    /// set; [`Error::InvalidName`] as in [`with_root`](Self::with_root).
    pub fn new(client_id: impl Into<String>, group: impl Into<String>) -> Result<Self> {
        Self::with_root(Self::default_root()?, client_id, group)
    }

    /// A store under `root`: its file is `<root>/<client id>/<group>/offsets.json`.
    /// Nothing is read or created until [`load`](OffsetStore::load) or the
    /// first persist.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] when the client id or group is empty, `.` or
    /// `..`, or contains `/`, `\` or NUL.
    pub fn with_root(
        root: impl Into<PathBuf>,
        client_id: impl Into<String>,
        group: impl Into<String>,
    ) -> Result<Self> {
        let client_id = client_id.into();
        let group = group.into();
        check_name("client id", &client_id)?;
        check_name("group", &group)?;
        let main = root
            .into()
            .join(&client_id)
            .join(&group)
            .join(OFFSET_FILE_NAME);
        Ok(LocalFileOffsetStore {
            client_id,
            group,
            paths: file::Paths::new(main),
            table: OffsetTable::default(),
            file_lock: Arc::new(Mutex::new(())),
        })
    }

    /// The default root: `$RMQ_OFFSET_STORE_DIR` when set and not empty,
    /// else `<home>/.rocketmq_offsets` (`HOME`, or `USERPROFILE` on Windows).
    ///
    /// # Errors
    ///
    /// [`Error::NoStoreDir`] when none of these variables is set.
    pub fn default_root() -> Result<PathBuf> {
        let non_empty = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
        if let Some(dir) = non_empty(OFFSET_STORE_DIR_ENV) {
            return Ok(PathBuf::from(dir));
        }
        non_empty("HOME")
            .or_else(|| non_empty("USERPROFILE"))
            .map(|home| PathBuf::from(home).join(DEFAULT_DIR_NAME))
            .ok_or(Error::NoStoreDir)
    }

    /// The offset file.
    pub fn path(&self) -> &Path {
        &self.paths.main
    }

    /// The backup of the previous version of the offset file.
    pub fn backup_path(&self) -> &Path {
        &self.paths.backup
    }

    /// The client id (a directory level of the path).
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The consumer group (a directory level of the path).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Runs `f` with the file lock held on the blocking pool.
    async fn with_files<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&file::Paths) -> T + Send + 'static,
    {
        let lock = Arc::clone(&self.file_lock);
        let paths = self.paths.clone();
        tokio::task::spawn_blocking(move || {
            let _guard = lock.lock().unwrap_or_else(PoisonError::into_inner);
            f(&paths)
        })
        .await
        .map_err(Error::TaskFailed)
    }

    /// Reads the file, merges `offsets` into it and writes it back (Java
    /// also keeps entries of queues not being persisted).
    async fn write_merged(&self, offsets: Vec<(MessageQueue, i64)>) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        let client_id = self.client_id.clone();
        let group = self.group.clone();
        let count = offsets.len();
        self.with_files(move |paths| {
            let mut loaded = file::load(paths);
            loaded.table.extend(offsets);
            let bytes =
                file::encode(&client_id, &group, &loaded.table).map_err(|e| Error::Corrupt {
                    path: paths.main.clone(),
                    reason: format!("could not encode the offset table: {e}"),
                })?;
            file::store(paths, &bytes, loaded.main_bytes.as_deref())
        })
        .await??;
        debug!(group = %self.group, path = %self.paths.main.display(), count, "offsets persisted");
        Ok(())
    }

    /// The offset of `mq` in the file; `None` when it has none.
    async fn fetch_from_file(&self, mq: &MessageQueue) -> Result<Option<i64>> {
        let loaded = self.with_files(file::load).await?;
        Ok(loaded.table.get(mq).copied())
    }

    async fn load_file(&self) -> Result<()> {
        let loaded = self.with_files(file::load).await?;
        let count = loaded.table.len();
        for (mq, offset) in loaded.table {
            self.table.put(mq, offset);
        }
        debug!(group = %self.group, path = %self.paths.main.display(), count, "offsets loaded");
        Ok(())
    }
}

/// Rejects names that would escape or break the store's directory layout.
fn check_name(what: &'static str, value: &str) -> Result<()> {
    let reason = if value.is_empty() {
        Some("it is empty")
    } else if value == "." || value == ".." {
        Some("it is a relative directory name")
    } else if value.contains(['/', '\\', '\0']) {
        Some("it contains a path separator or NUL")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidName {
            what,
            value: value.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

impl OffsetStore for LocalFileOffsetStore {
    memory_methods!(fetch_from_file);

    fn load(&self) -> BoxFuture<'_, Result<()>> {
        self.load_file().boxed()
    }

    fn persist<'a>(
        &'a self,
        mq: &'a MessageQueue,
        _mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>> {
        let offsets: Vec<(MessageQueue, i64)> = self
            .table
            .get(mq)
            .map(|offset| (mq.clone(), offset))
            .into_iter()
            .collect();
        self.write_merged(offsets).boxed()
    }

    fn persist_all<'a>(
        &'a self,
        mqs: &'a [MessageQueue],
        _mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>> {
        let held: HashSet<&MessageQueue> = mqs.iter().collect();
        let offsets = self.table.offsets_of(&held);
        self.write_merged(offsets).boxed()
    }

    fn update_consume_offset_to_broker<'a>(
        &'a self,
        _mq: &'a MessageQueue,
        _offset: i64,
        _mode: PersistMode,
    ) -> BoxFuture<'a, Result<()>> {
        futures::future::ready(Ok(())).boxed()
    }
}
