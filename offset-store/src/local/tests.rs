use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use rmq_protocol::MessageQueue;

use super::file;
use super::store::*;
use crate::{Error, OffsetStore, PersistMode, ReadOffsetType};

fn mq(id: i32) -> MessageQueue {
    MessageQueue::new("T", "broker-a", id)
}

fn store(root: &Path) -> LocalFileOffsetStore {
    LocalFileOffsetStore::with_root(root, "127.0.0.1@test", "g").unwrap()
}

#[tokio::test]
async fn path_layout_and_memory_semantics() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    assert_eq!(
        s.path(),
        dir.path()
            .join("127.0.0.1@test")
            .join("g")
            .join("offsets.json")
    );
    assert_eq!(
        s.backup_path(),
        dir.path().join("127.0.0.1@test/g/offsets.json.bak")
    );
    s.load().await.unwrap();
    assert!(s.offset_table(None).is_empty());
    assert!(!s.path().exists(), "loading creates nothing");

    s.update_offset(&mq(0), 5, true);
    s.update_offset(&mq(0), 3, true);
    assert_eq!(
        s.read_offset(&mq(0), ReadOffsetType::ReadFromMemory)
            .await
            .unwrap(),
        Some(5)
    );
    s.update_offset(&mq(0), 3, false);
    assert_eq!(
        s.read_offset(&mq(0), ReadOffsetType::ReadFromMemory)
            .await
            .unwrap(),
        Some(3)
    );
    assert_eq!(
        s.read_offset(&mq(1), ReadOffsetType::ReadFromMemory)
            .await
            .unwrap(),
        None
    );
    // The synchronous read agrees with ReadFromMemory.
    assert_eq!(s.memory_offset(&mq(0)), Some(3));
    assert_eq!(s.memory_offset(&mq(1)), None);
    assert_eq!(
        s.read_offset(&mq(1), ReadOffsetType::MemoryFirstThenStore)
            .await
            .unwrap(),
        None,
        "no file: not found"
    );
    s.update_and_freeze_offset(&mq(0), 9);
    s.update_offset(&mq(0), 100, false);
    assert_eq!(s.offset_table(Some("T")), HashMap::from([(mq(0), 9)]));
    s.remove_offset(&mq(0));
    assert!(s.offset_table(None).is_empty());
    // The file store has no broker.
    s.update_consume_offset_to_broker(&mq(0), 1, PersistMode::Sync)
        .await
        .unwrap();
}

#[tokio::test]
async fn round_trip_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    s.load().await.unwrap();
    for id in 0..4 {
        s.update_offset(&mq(id), i64::from(id) * 100, false);
    }
    // Only held queues are written; an empty list writes nothing.
    s.persist_all(&[], PersistMode::Oneway).await.unwrap();
    assert!(!s.path().exists());
    s.persist_all(&[mq(0), mq(1), mq(2)], PersistMode::Oneway)
        .await
        .unwrap();
    assert!(!s.backup_path().exists(), "no previous version yet");

    let again = store(dir.path());
    again.load().await.unwrap();
    assert_eq!(
        again.offset_table(None),
        HashMap::from([(mq(0), 0), (mq(1), 100), (mq(2), 200)])
    );

    // A second write keeps the first as the backup and merges: entries of
    // queues not persisted now stay in the file.
    s.update_offset(&mq(1), 150, true);
    s.persist(&mq(1), PersistMode::Sync).await.unwrap();
    s.persist(&mq(7), PersistMode::Sync).await.unwrap(); // no offset: no-op
    let third = store(dir.path());
    assert_eq!(
        third
            .read_offset(&mq(1), ReadOffsetType::ReadFromStore)
            .await
            .unwrap(),
        Some(150)
    );
    assert_eq!(
        third
            .read_offset(&mq(2), ReadOffsetType::MemoryFirstThenStore)
            .await
            .unwrap(),
        Some(200)
    );
    assert_eq!(third.offset_table(None).len(), 2, "reads fill memory");
    let backup = file::decode(s.backup_path(), &fs::read(s.backup_path()).unwrap()).unwrap();
    assert_eq!(backup.get(&mq(1)), Some(&100));
    assert!(
        !dir.path()
            .join("127.0.0.1@test/g/offsets.json.tmp")
            .exists()
    );
    assert!(
        !dir.path()
            .join("127.0.0.1@test/g/offsets.json.bak.tmp")
            .exists()
    );
}

#[tokio::test]
async fn corrupt_main_falls_back_to_the_backup() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    s.update_offset(&mq(0), 10, false);
    s.persist_all(&[mq(0)], PersistMode::Sync).await.unwrap();
    s.update_offset(&mq(0), 20, false);
    s.persist_all(&[mq(0)], PersistMode::Sync).await.unwrap();
    // Backup holds 10, main 20; now damage the main file.
    fs::write(s.path(), b"{\"format\":\"rmq-offsets/1\",\"offs").unwrap();

    let again = store(dir.path());
    again.load().await.unwrap();
    assert_eq!(again.offset_table(None), HashMap::from([(mq(0), 10)]));

    // Writing while the main file is corrupt keeps the good backup.
    again.update_offset(&mq(0), 30, false);
    again
        .persist_all(&[mq(0)], PersistMode::Sync)
        .await
        .unwrap();
    let backup = file::decode(s.backup_path(), &fs::read(s.backup_path()).unwrap()).unwrap();
    assert_eq!(backup.get(&mq(0)), Some(&10));
    let main = file::decode(s.path(), &fs::read(s.path()).unwrap()).unwrap();
    assert_eq!(main.get(&mq(0)), Some(&30));

    // A missing main file (crash between renames) also uses the backup.
    fs::remove_file(s.path()).unwrap();
    let fourth = store(dir.path());
    assert_eq!(
        fourth
            .read_offset(&mq(0), ReadOffsetType::ReadFromStore)
            .await
            .unwrap(),
        Some(10)
    );
}

#[tokio::test]
async fn both_files_corrupt_gives_an_empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    fs::create_dir_all(s.path().parent().unwrap()).unwrap();
    fs::write(s.path(), b"garbage").unwrap();
    fs::write(s.backup_path(), [0xff, 0xfe, 0x00]).unwrap();
    s.load().await.unwrap();
    assert!(s.offset_table(None).is_empty());
    assert_eq!(
        s.read_offset(&mq(0), ReadOffsetType::MemoryFirstThenStore)
            .await
            .unwrap(),
        None
    );
    // A persist recovers: the unusable main file does not become the backup.
    s.update_offset(&mq(0), 1, false);
    s.persist(&mq(0), PersistMode::Sync).await.unwrap();
    assert_eq!(fs::read(s.backup_path()).unwrap(), [0xff, 0xfe, 0x00]);
    let again = store(dir.path());
    again.load().await.unwrap();
    assert_eq!(again.offset_table(None), HashMap::from([(mq(0), 1)]));
}

#[tokio::test]
async fn unreadable_main_file_falls_back() {
    // A directory where the file should be: reading fails with an I/O error
    // other than "not found".
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    fs::create_dir_all(s.path()).unwrap();
    fs::write(
        s.backup_path(),
        file::encode("c", "g", &HashMap::from([(mq(3), 33)])).unwrap(),
    )
    .unwrap();
    s.load().await.unwrap();
    assert_eq!(s.offset_table(None), HashMap::from([(mq(3), 33)]));
}

#[tokio::test]
async fn failed_write_leaves_the_previous_file_intact() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    s.update_offset(&mq(0), 10, false);
    s.persist_all(&[mq(0)], PersistMode::Sync).await.unwrap();
    let before = fs::read(s.path()).unwrap();

    // Make the temp file impossible to create: a directory in its place.
    let tmp = dir.path().join("127.0.0.1@test/g/offsets.json.tmp");
    fs::create_dir(&tmp).unwrap();
    s.update_offset(&mq(0), 20, false);
    let err = s
        .persist_all(&[mq(0)], PersistMode::Sync)
        .await
        .unwrap_err();
    assert!(err.is_file_error(), "{err:?}");
    assert!(
        matches!(&err, Error::Io { path, .. } if *path == tmp),
        "{err:?}"
    );
    assert_eq!(fs::read(s.path()).unwrap(), before, "main file untouched");
    assert_eq!(
        s.offset_table(None),
        HashMap::from([(mq(0), 20)]),
        "memory keeps the offset"
    );

    // Once the obstacle is gone the next persist succeeds.
    fs::remove_dir(&tmp).unwrap();
    s.persist_all(&[mq(0)], PersistMode::Sync).await.unwrap();
    let again = store(dir.path());
    again.load().await.unwrap();
    assert_eq!(again.offset_table(None), HashMap::from([(mq(0), 20)]));
    // A stale temp file from a crash is ignored by load and overwritten.
    fs::write(&tmp, b"partial{").unwrap();
    let third = store(dir.path());
    third.load().await.unwrap();
    assert_eq!(third.offset_table(None), HashMap::from([(mq(0), 20)]));
    third
        .persist_all(&[mq(0)], PersistMode::Sync)
        .await
        .unwrap();
    assert!(!tmp.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_persists_serialize() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(store(dir.path()));
    for id in 0..16 {
        s.update_offset(&mq(id), i64::from(id), false);
    }
    let tasks: Vec<_> = (0..16)
        .map(|id| {
            let s = Arc::clone(&s);
            tokio::spawn(async move { s.persist(&mq(id), PersistMode::Sync).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let again = store(dir.path());
    again.load().await.unwrap();
    assert_eq!(
        again.offset_table(None).len(),
        16,
        "every merge saw the previous write"
    );
}

#[test]
fn names_are_checked() {
    let root = Path::new("/tmp/x");
    for (cid, group) in [
        ("", "g"),
        ("c", ""),
        ("..", "g"),
        ("c", "."),
        ("a/b", "g"),
        ("c", "g\\h"),
    ] {
        let err = LocalFileOffsetStore::with_root(root, cid, group).unwrap_err();
        assert!(
            matches!(err, Error::InvalidName { .. }),
            "{cid:?} {group:?}: {err:?}"
        );
    }
    assert!(LocalFileOffsetStore::with_root(root, "10.0.0.1@12#34", "%RETRY%g_1").is_ok());
}
