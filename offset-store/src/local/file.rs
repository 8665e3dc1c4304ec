//! The local offset file: format, crash-safe write, load with fallback.
//!
//! # Format (`offsets.json`)
//!
//! Our own JSON, not Java's (see `DESIGN.md`):
//!
//! ```json
//! {
//!   "format": "rmq-offsets/1",
//!   "clientId": "10.0.0.5@DEFAULT",
//!   "group": "my_group",
//!   "offsets": [
//!     { "topic": "orders", "brokerName": "broker-a", "queueId": 0, "offset": 42 }
//!   ]
//! }
//! ```
//!
//! `format` must be `rmq-offsets/1`; `clientId` and `group` are informative
//! (not checked on read); `offsets` is sorted by queue, a queue appears at
//! most once (on read the last entry wins), offsets are ≥ 0.
//!
//! # Write
//!
//! Under the store's file lock: the previous main file, if it parsed, is
//! copied to `offsets.json.bak` (via `offsets.json.bak.tmp` + fsync +
//! rename); the new content goes to `offsets.json.tmp`, is fsynced and
//! renamed over `offsets.json`; then the directory is fsynced. At every
//! moment both names hold either nothing or a complete file.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rmq_protocol::MessageQueue;
use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::error::{Error, Result};

/// The `format` tag of the current file version.
pub(crate) const FORMAT: &str = "rmq-offsets/1";

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OffsetFile {
    format: String,
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    group: String,
    offsets: Vec<OffsetRecord>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OffsetRecord {
    topic: String,
    broker_name: String,
    queue_id: i32,
    offset: i64,
}

/// The files of one store.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    pub(crate) main: PathBuf,
    pub(crate) backup: PathBuf,
    tmp: PathBuf,
    backup_tmp: PathBuf,
}

impl Paths {
    pub(crate) fn new(main: PathBuf) -> Self {
        let with_suffix = |suffix: &str| {
            let mut name = main.clone().into_os_string();
            name.push(suffix);
            PathBuf::from(name)
        };
        Paths {
            backup: with_suffix(".bak"),
            tmp: with_suffix(".tmp"),
            backup_tmp: with_suffix(".bak.tmp"),
            main,
        }
    }
}

/// What was on disk.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The offsets (from the main file, else the backup, else empty).
    pub(crate) table: HashMap<MessageQueue, i64>,
    /// The main file's bytes, when it exists and parsed: the next write
    /// keeps them as the backup.
    pub(crate) main_bytes: Option<Vec<u8>>,
}

/// Encodes a table (sorted by queue, pretty-printed).
pub(crate) fn encode(
    client_id: &str,
    group: &str,
    table: &HashMap<MessageQueue, i64>,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut entries: Vec<(&MessageQueue, &i64)> = table.iter().collect();
    entries.sort();
    let file = OffsetFile {
        format: FORMAT.to_owned(),
        client_id: client_id.to_owned(),
        group: group.to_owned(),
        offsets: entries
            .into_iter()
            .map(|(mq, offset)| OffsetRecord {
                topic: mq.topic.clone(),
                broker_name: mq.broker_name.clone(),
                queue_id: mq.queue_id,
                offset: *offset,
            })
            .collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Decodes a file's bytes.
pub(crate) fn decode(path: &Path, bytes: &[u8]) -> Result<HashMap<MessageQueue, i64>> {
    let corrupt = |reason: String| Error::Corrupt {
        path: path.to_owned(),
        reason,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(corrupt("the file is empty".to_owned()));
    }
    let file: OffsetFile =
        serde_json::from_slice(bytes).map_err(|e| corrupt(format!("invalid JSON: {e}")))?;
    if file.format != FORMAT {
        return Err(corrupt(format!(
            "unknown format {:?} (expected {FORMAT:?})",
            file.format
        )));
    }
    let mut table = HashMap::with_capacity(file.offsets.len());
    for r in file.offsets {
        if r.offset < 0 {
            return Err(corrupt(format!(
                "negative offset {} for {}@{}#{}",
                r.offset, r.topic, r.broker_name, r.queue_id
            )));
        }
        table.insert(
            MessageQueue::new(r.topic, r.broker_name, r.queue_id),
            r.offset,
        );
    }
    Ok(table)
}

/// Reads and decodes one file (its bytes in `main_bytes`); `Ok(None)` when
/// it does not exist.
fn read_one(path: &Path) -> Result<Option<Loaded>> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", path, e)),
    };
    let table = decode(path, &bytes)?;
    Ok(Some(Loaded {
        table,
        main_bytes: Some(bytes),
    }))
}

/// Reads the main file, else the backup, else nothing; logs a warning for
/// every unusable file. Never fails.
pub(crate) fn load(paths: &Paths) -> Loaded {
    let main_missing = match read_one(&paths.main) {
        Ok(Some(loaded)) => return loaded,
        Ok(None) => true,
        Err(e) => {
            warn!(path = %paths.main.display(), error = %rmq_protocol::ErrorChain(&e), "offset file unusable, trying the backup");
            false
        }
    };
    match read_one(&paths.backup) {
        Ok(Some(Loaded { table, .. })) => {
            if main_missing {
                warn!(
                    path = %paths.main.display(),
                    backup = %paths.backup.display(),
                    "offset file missing but its backup exists (interrupted write?), using the backup"
                );
            }
            Loaded {
                table,
                main_bytes: None,
            }
        }
        Ok(None) => {
            if !main_missing {
                warn!(
                    path = %paths.backup.display(),
                    "no backup offset file either: starting with no offsets"
                );
            }
            Loaded::default()
        }
        Err(e) => {
            warn!(
                path = %paths.backup.display(),
                error = %rmq_protocol::ErrorChain(&e),
                "backup offset file unusable too: starting with no offsets"
            );
            Loaded::default()
        }
    }
}

/// Writes `bytes` to `path` and fsyncs it.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = File::create(path).map_err(|e| Error::io("create", path, e))?;
    file.write_all(bytes)
        .map_err(|e| Error::io("write", path, e))?;
    file.sync_all().map_err(|e| Error::io("fsync", path, e))
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
}

/// Fsyncs the directory so the renames survive a power loss (Unix; a no-op
/// where directories cannot be opened).
fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io("fsync directory", dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Crash-safe write of `bytes` as the main file, keeping `previous_main`
/// (the current main file's content, when it was valid) as the backup.
pub(crate) fn store(paths: &Paths, bytes: &[u8], previous_main: Option<&[u8]>) -> Result<()> {
    let dir = paths.main.parent().unwrap_or_else(|| Path::new("."));
    fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    if let Some(previous) = previous_main {
        write_synced(&paths.backup_tmp, previous)?;
        rename(&paths.backup_tmp, &paths.backup)?;
    }
    write_synced(&paths.tmp, bytes)?;
    rename(&paths.tmp, &paths.main)?;
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> HashMap<MessageQueue, i64> {
        HashMap::from([
            (MessageQueue::new("T", "broker-b", 0), 7),
            (MessageQueue::new("T", "broker-a", 1), 5),
            (MessageQueue::new("T", "broker-a", 0), 3),
        ])
    }

    #[test]
    fn encode_decode_round_trip_sorted() {
        let bytes = encode("c@1", "g", &table()).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains(r#""format": "rmq-offsets/1""#), "{text}");
        let a0 = text.find(r#""queueId": 0"#).unwrap();
        let b0 = text.rfind(r#""queueId": 0"#).unwrap();
        assert!(a0 < b0 && text.find(r#""broker-a""#) < text.find(r#""broker-b""#));
        assert_eq!(decode(Path::new("x"), &bytes).unwrap(), table());
    }

    #[test]
    fn decode_rejects_bad_content() {
        let p = Path::new("offsets.json");
        for (bytes, reason) in [
            (&b""[..], "empty"),
            (&b"  \n"[..], "empty"),
            (&b"{\"format\":"[..], "invalid JSON"),
            (&b"{\"offsetTable\":{}}"[..], "invalid JSON"),
            (
                &br#"{"format":"rmq-offsets/9","offsets":[]}"#[..],
                "unknown format",
            ),
            (
                &br#"{"format":"rmq-offsets/1","offsets":[{"topic":"T","brokerName":"b","queueId":0,"offset":-1}]}"#[..],
                "negative offset",
            ),
        ] {
            match decode(p, bytes) {
                Err(Error::Corrupt { reason: r, .. }) => assert!(r.contains(reason), "{r}"),
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn decode_accepts_minimal_file_and_last_entry_wins() {
        let bytes = br#"{"format":"rmq-offsets/1","offsets":[
            {"topic":"T","brokerName":"b","queueId":0,"offset":1},
            {"topic":"T","brokerName":"b","queueId":0,"offset":2}]}"#;
        let t = decode(Path::new("x"), bytes).unwrap();
        assert_eq!(t, HashMap::from([(MessageQueue::new("T", "b", 0), 2)]));
    }

    #[test]
    fn paths_append_suffixes() {
        let p = Paths::new(PathBuf::from("/a/b/offsets.json"));
        assert_eq!(p.backup, PathBuf::from("/a/b/offsets.json.bak"));
        assert_eq!(p.tmp, PathBuf::from("/a/b/offsets.json.tmp"));
        assert_eq!(p.backup_tmp, PathBuf::from("/a/b/offsets.json.bak.tmp"));
    }
}
