//! The official Java `TransactionMQProducer` (of the broker's version, `bench/peers/java`
//! `rmqbench.TxPeer`) and rmq's `TransactionProducer` in the same groups answer each other's
//! check-backs.
//!
//! * group A: an rmq producer and the Java sender. The Java sender begins two transactions that it
//!   leaves unknown and leaves the group; the broker checks them back on the rmq producer, which
//!   commits one and rolls the other back.
//! * group B: the Java answerer and an rmq producer. The rmq producer begins two transactions that
//!   it leaves unknown and leaves the group; the Java answerer gets the check-backs and decides.
//!
//! The sender leaves so that each check-back can only go to the other client (the broker picks a
//! producer channel of the group round-robin). Both sides decide by body (`commit*`/`rollback*`).

use std::collections::HashSet;
use std::time::Duration;

use rmq_producer::{Message, TransactionState};
use rmq_tests_integration::java_peer::{self, JavaProcess};
use rmq_tests_integration::tx::{
    Local, TxLog, first_check_within, recording_consumer, tx_producer, wait_producer_listed,
};
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

/// Words of the Java peer's lines starting with `event`.
fn events(lines: &[String], event: &str) -> Vec<Vec<String>> {
    lines
        .iter()
        .map(|l| l.split(' ').map(str::to_owned).collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|e| e == event))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_and_rmq_producers_answer_each_others_check_backs() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let classpath = java_peer::classpath_for(&env).await;
        let topic = env.topic("tx_java", 1).await;
        let group_a = rmq_testkit::unique_name("tx_java_a_pg");
        let group_b = rmq_testkit::unique_name("tx_java_b_pg");
        let limit = first_check_within(&env).await * 3 + Duration::from_secs(10);
        let (rec, consumer) = recording_consumer(&env, "tx_java", &topic).await;

        // Group A: the rmq member stays.
        let log_a = TxLog::new();
        let rmq_a = tx_producer(
            env.namesrv(),
            &group_a,
            &[&topic],
            &log_a,
            Duration::from_secs(5),
        )
        .await;

        let home = tempfile::tempdir().expect("temp dir");
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqbench.TxPeer",
            &[
                env.namesrv(),
                &topic,
                &group_a,
                &group_b,
                "commit-from-java,rollback-from-java",
            ],
            home.path(),
        );
        java.wait_for(
            Duration::from_secs(90),
            "the Java sender's transactions begun",
            |l| l.iter().any(|l| l == "READY"),
        )
        .await;
        let lines = java.lines();
        let java_id = |body: &str| {
            events(&lines, "SENT")
                .into_iter()
                .find(|w| w.get(2).is_some_and(|b| b == body))
                .and_then(|w| w.get(1).cloned())
                .unwrap_or_else(|| panic!("no SENT line for {body}: {lines:?}"))
        };
        let (java_commit, java_rollback) =
            (java_id("commit-from-java"), java_id("rollback-from-java"));
        for w in events(&lines, "SENT") {
            assert_eq!(w.get(3).map(String::as_str), Some("unknown"), "{w:?}");
        }

        // Group B: the Java answerer must be known to the broker (it heartbeats every 30 s, the
        // first time about 1 s after it started) before the rmq member leaves.
        let answerer = events(&lines, "STARTED")
            .first()
            .and_then(|w| w.get(1).cloned())
            .expect("STARTED line");
        wait_producer_listed(&env, &group_b, Duration::from_secs(40), |id, _| {
            id == answerer
        })
        .await;
        let log_b = TxLog::new();
        let rmq_b = tx_producer(
            env.namesrv(),
            &group_b,
            &[&topic],
            &log_b,
            Duration::from_secs(5),
        )
        .await;
        let mut rmq_ids = Vec::new();
        for body in ["commit-from-rmq", "rollback-from-rmq"] {
            let (sent, state) = rmq_b
                .send_in_transaction(Message::new(&topic, body), Local::Unknown)
                .await
                .unwrap_or_else(|e| panic!("send_in_transaction({body}): {e}"));
            assert_eq!(state, TransactionState::Unknown);
            rmq_ids.push(sent.msg_id);
        }
        rmq_b.shutdown().await.expect("producer shutdown");
        let (rmq_commit, rmq_rollback) = (rmq_ids[0].clone(), rmq_ids[1].clone());

        // rmq answers Java's transactions ...
        assert_eq!(
            log_a.wait_checked(&java_commit, limit).await.state,
            TransactionState::Commit
        );
        assert_eq!(
            log_a.wait_checked(&java_rollback, limit).await.state,
            TransactionState::Rollback
        );
        // ... and Java answers rmq's.
        let answered = |lines: &[String], id: &str| {
            events(lines, "CHECK")
                .into_iter()
                .find(|w| w.get(1).is_some_and(|i| i == id))
                .and_then(|w| w.get(3).cloned())
        };
        java.wait_for(
            limit,
            "the Java answerer decided both rmq transactions",
            |l| answered(l, &rmq_commit).is_some() && answered(l, &rmq_rollback).is_some(),
        )
        .await;
        let lines = java.lines();
        assert_eq!(answered(&lines, &rmq_commit).as_deref(), Some("commit"));
        assert_eq!(answered(&lines, &rmq_rollback).as_deref(), Some("rollback"));
        assert!(
            log_b.checks().is_empty(),
            "the rmq member of group B left before any check-back"
        );

        for id in [&java_commit, &rmq_commit] {
            rec.wait_for(limit, &format!("{id} consumed"), |s| {
                s.counts.contains_key(id)
            })
            .await;
        }
        // A later transaction decided only by its check-back: once it is consumed, the broker's
        // check round has passed all four half messages again.
        let (marker, _) = rmq_a
            .send_in_transaction(Message::new(&topic, "commit-marker"), Local::Unknown)
            .await
            .expect("marker send");
        log_a.wait_checked(&marker.msg_id, limit).await;
        rec.wait_for(limit, "the marker consumed", |s| {
            s.counts.contains_key(&marker.msg_id)
        })
        .await;
        rec.with(|s| {
            let consumed: HashSet<&str> = s.counts.keys().map(String::as_str).collect();
            let expected: HashSet<&str> = [
                java_commit.as_str(),
                rmq_commit.as_str(),
                marker.msg_id.as_str(),
            ]
            .into();
            assert_eq!(
                consumed, expected,
                "the commits (once each), never the rollbacks"
            );
            assert!(s.counts.values().all(|n| *n == 1), "{:?}", s.counts);
        });
        for id in [&java_commit, &java_rollback] {
            assert_eq!(log_a.checks_of(id).len(), 1, "{id} decided once");
        }

        java.finish(Duration::from_secs(20)).await;
        rmq_a.shutdown().await.expect("producer shutdown");
        consumer.shutdown().await.expect("consumer shutdown");
        env.shutdown().await;
    })
    .await;
}
