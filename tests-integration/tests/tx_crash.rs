//! A transactional producer process SIGKILLed after its half messages were stored and before any
//! END_TRANSACTION: a second producer process of the same group, started afterwards, gets the
//! check-backs, and what it decides holds (the commit is consumed once, the rollback never, and
//! neither is checked again).

use std::time::Duration;

use rmq_producer::{Message, TransactionState};
use rmq_tests_integration::tx::{
    Local, TxChildMode, TxLog, events, first_check_within, recording_consumer, spawn_tx_child,
    tx_producer,
};
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_producers_transactions_are_decided_by_another_process_of_its_group() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("tx_crash", 1).await;
        let group = rmq_testkit::unique_name("tx_crash_pg");
        let limit = first_check_within(&env).await * 3 + Duration::from_secs(10);
        let dir = tempfile::tempdir().expect("temp dir");
        let (rec, consumer) = recording_consumer(&env, "tx_crash", &topic).await;

        let bin = env!("CARGO_BIN_EXE_tx-child");
        let mut first = spawn_tx_child(
            bin,
            env.namesrv(),
            &group,
            &topic,
            &dir.path().join("first.txt"),
            TxChildMode::Send,
            &["commit-crash", "rollback-crash"],
        );
        let halves = poll_until(
            Duration::from_secs(60),
            Duration::from_millis(20),
            "the first producer stored both half messages",
            || {
                let first = &first;
                async move {
                    let halves = events(first, "half");
                    if halves.len() == 2 {
                        Ok(halves)
                    } else {
                        Err(halves)
                    }
                }
            },
        )
        .await;
        first.assert_running();
        first.kill();
        let id_of = |body: &str| {
            halves
                .iter()
                .find(|w| w.get(2).is_some_and(|b| b == body))
                .and_then(|w| w.get(1).cloned())
                .unwrap_or_else(|| panic!("no #half line for {body}: {halves:?}"))
        };
        let (commit, rollback) = (id_of("commit-crash"), id_of("rollback-crash"));
        println!("first producer killed with {commit} and {rollback} open");

        let second = spawn_tx_child(
            bin,
            env.namesrv(),
            &group,
            &topic,
            &dir.path().join("second.txt"),
            TxChildMode::Answer,
            &[],
        );
        let checks = poll_until(
            limit,
            Duration::from_millis(50),
            "the second producer answered both checks",
            || {
                let second = &second;
                let ids = [commit.clone(), rollback.clone()];
                async move {
                    let checks = events(second, "check");
                    let answered = ids
                        .iter()
                        .all(|id| checks.iter().any(|w| w.get(1) == Some(id)));
                    if answered { Ok(checks) } else { Err(checks) }
                }
            },
        )
        .await;
        let state_of = |id: &str| {
            checks
                .iter()
                .find(|w| w.get(1).is_some_and(|i| i == id))
                .and_then(|w| w.get(3).cloned())
        };
        assert_eq!(state_of(&commit).as_deref(), Some("commit"));
        assert_eq!(state_of(&rollback).as_deref(), Some("rollback"));

        rec.wait_for(limit, "the committed message consumed", |s| {
            s.counts.contains_key(&commit)
        })
        .await;
        // A later transaction decided only by its check-back: once it is consumed, the broker's
        // check round has passed both of the first producer's half messages again.
        let log = TxLog::new();
        let marker_group = rmq_testkit::unique_name("tx_crash_marker_pg");
        let marker_producer = tx_producer(
            env.namesrv(),
            &marker_group,
            &[&topic],
            &log,
            Duration::from_secs(5),
        )
        .await;
        let (marker, state) = marker_producer
            .send_in_transaction(Message::new(&topic, "commit-marker"), Local::Unknown)
            .await
            .expect("marker send");
        assert_eq!(state, TransactionState::Unknown);
        log.wait_checked(&marker.msg_id, limit).await;
        rec.wait_for(limit, "the marker consumed", |s| {
            s.counts.contains_key(&marker.msg_id)
        })
        .await;

        rec.with(|s| {
            assert_eq!(s.counts.get(&commit), Some(&1), "committed: consumed once");
            assert_eq!(s.counts.get(&rollback), None, "rolled back: never consumed");
        });
        let checks = events(&second, "check");
        for id in [&commit, &rollback] {
            let n = checks.iter().filter(|w| w.get(1) == Some(id)).count();
            assert_eq!(
                n, 1,
                "{id}: the decision held, no further check ({checks:?})"
            );
        }
        marker_producer.shutdown().await.expect("producer shutdown");
        drop(second);
        consumer.shutdown().await.expect("consumer shutdown");
        env.shutdown().await;
    })
    .await;
}
