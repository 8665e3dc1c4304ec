//! Transactional messages against the real broker: commit, rollback, unknown then check-back,
//! a failing local transaction, a slow check that leaves the connection free, the refused sends,
//! and the broker settings the local script gives the check-backs.
//!
//! "Never consumed" is proven with a later transaction of the same broker that stays unknown
//! until checked: the broker checks its half messages in order, so once that later one was
//! checked and consumed, the check round has passed the earlier one.

use std::sync::Arc;
use std::time::Duration;

use rmq_producer::{InvalidMessage, Message, TransactionProducer, TransactionState, UnsentExt};
use rmq_protocol::message::property;
use rmq_tests_integration::tx::{
    self, GATED, Local, TxLog, first_check_within, producer_clients, recording_consumer,
    tx_producer, wait_producer_listed,
};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, within};

/// Longest wait for something that takes a check-back: two check rounds and some slack.
async fn check_limit(env: &Env) -> Duration {
    first_check_within(env).await * 3 + Duration::from_secs(10)
}

/// Upper bound on `execute` in these tests (the hanging one runs into it).
const EXECUTE_TIMEOUT: Duration = Duration::from_millis(500);

struct Setup {
    env: Env,
    topic: String,
    log: Arc<TxLog>,
    producer: TransactionProducer<Local>,
    rec: Arc<Recorder>,
    consumer: rmq_consumer_push::PushConsumer,
    limit: Duration,
}

async fn setup(name: &str) -> Setup {
    let env = Env::new().await;
    let topic = env.topic(name, 2).await;
    let log = TxLog::new();
    let group = rmq_testkit::unique_name(&format!("{name}_pg"));
    let producer = tx_producer(env.namesrv(), &group, &[&topic], &log, EXECUTE_TIMEOUT).await;
    let (rec, consumer) = recording_consumer(&env, name, &topic).await;
    let limit = check_limit(&env).await;
    Setup {
        env,
        topic,
        log,
        producer,
        rec,
        consumer,
        limit,
    }
}

impl Setup {
    async fn send(&self, body: &str, local: Local) -> (String, TransactionState) {
        let (sent, state) = self
            .producer
            .send_in_transaction(Message::new(&self.topic, body.to_owned()), local)
            .await
            .unwrap_or_else(|e| panic!("send_in_transaction({body}): {e}"));
        (sent.msg_id, state)
    }

    /// Waits until `msg_id` was consumed.
    async fn consumed(&self, msg_id: &str) {
        self.rec
            .wait_for(self.limit, &format!("{msg_id} consumed"), |s| {
                s.counts.contains_key(msg_id)
            })
            .await;
    }

    /// A later transaction that is only decided by its check-back (commit), consumed: the broker's
    /// check round has passed every earlier half message of this broker.
    async fn check_round_passed(&self) -> String {
        let (marker, state) = self.send("commit-marker", Local::Unknown).await;
        assert_eq!(state, TransactionState::Unknown);
        self.log.wait_checked(&marker, self.limit).await;
        self.consumed(&marker).await;
        marker
    }

    fn deliveries(&self, msg_id: &str) -> usize {
        self.rec
            .with(|s| s.counts.get(msg_id).copied().unwrap_or(0))
    }

    async fn finish(self) {
        self.consumer.shutdown().await.expect("consumer shutdown");
        self.producer.shutdown().await.expect("producer shutdown");
        self.env.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_broker_checks_back_after_3_seconds() {
    within(TEST_TIMEOUT, async {
        let s = setup("tx_settings").await;
        let env = &s.env;
        // Behaviour first: a transaction that stays unknown is checked once it is older than
        // transactionTimeOut, then once per check round (defaults: 6 s; 30 s on 5.x, 60 s on
        // 4.9.x).
        let sent_at = tokio::time::Instant::now();
        let (id, _) = s.send("unknown-forever", Local::Unknown).await;
        let checks = s.log.wait_checks(&id, 2, Duration::from_secs(30)).await;
        let first = checks[0].at.duration_since(sent_at);
        let gap = checks[1].at.duration_since(checks[0].at);
        println!("first check-back after {first:?}, the next {gap:?} later");
        assert!(first >= Duration::from_millis(2500), "checked at {first:?}");
        assert!(
            gap < Duration::from_secs(10),
            "check rounds every {gap:?}: not the 3 s the script sets"
        );
        let config = tx::broker_config(env).await;
        println!(
            "RocketMQ {}: transactionTimeOut={:?} transactionCheckInterval={:?} transactionCheckMax={:?} \
             transactionOpBatchInterval={:?}",
            env.broker.version,
            config.get("transactionTimeOut"),
            config.get("transactionCheckInterval"),
            config.get("transactionCheckMax"),
            config.get("transactionOpBatchInterval"),
        );
        // scripts/rocketmq-local.sh sets both (defaults: 6 s, and 30 s on 5.x / 60 s on 4.9.x).
        assert_eq!(config.get("transactionTimeOut").map(String::as_str), Some("3000"));
        assert_eq!(
            config.get("transactionCheckInterval").map(String::as_str),
            Some("3000")
        );
        // 5.x batches the records of ended transactions; they must be written before the first
        // check round can see the half message. (4.9.x writes them at once: it has no such
        // setting and only echoes the config file's line.)
        if env.broker.version_at_least(5, 0) {
            assert_eq!(
                config.get("transactionOpBatchInterval").map(String::as_str),
                Some("1000")
            );
        }
        s.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_is_consumed_once_and_rollback_never() {
    within(TEST_TIMEOUT, async {
        let s = setup("tx_commit").await;
        let (committed, state) = s.send("commit-1", Local::Commit).await;
        assert_eq!(state, TransactionState::Commit);
        let (rolled_back, state) = s.send("rollback-1", Local::Rollback).await;
        assert_eq!(state, TransactionState::Rollback);
        s.consumed(&committed).await;
        s.check_round_passed().await;
        assert_eq!(s.deliveries(&committed), 1, "consumed exactly once");
        assert_eq!(
            s.deliveries(&rolled_back),
            0,
            "a rolled-back message is never consumed"
        );
        for id in [&committed, &rolled_back] {
            assert!(
                s.log.checks_of(id).is_empty(),
                "an ended transaction is never checked back"
            );
        }
        s.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_is_checked_back_and_the_check_decides() {
    within(TEST_TIMEOUT, async {
        let s = setup("tx_unknown").await;
        let started = tokio::time::Instant::now();
        let (commit, state) = s.send("commit-after-check", Local::Unknown).await;
        assert_eq!(state, TransactionState::Unknown);
        let (rollback, _) = s.send("rollback-after-check", Local::Unknown).await;
        let check = s.log.wait_checked(&commit, s.limit).await;
        println!(
            "first check-back {:?} after the send",
            check.at.duration_since(started)
        );
        assert_eq!(check.state, TransactionState::Commit);
        assert_eq!(check.topic, s.topic, "the check names the real topic");
        assert_eq!(check.body, "commit-after-check");
        s.consumed(&commit).await;
        assert_eq!(
            s.log.wait_checked(&rollback, s.limit).await.state,
            TransactionState::Rollback
        );
        assert_eq!(s.deliveries(&commit), 1);
        s.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_or_hanging_execute_counts_as_unknown() {
    within(TEST_TIMEOUT, async {
        let s = setup("tx_failing").await;
        let (panicked, state) = s.send("commit-panicked", Local::Panic).await;
        assert_eq!(state, TransactionState::Unknown);
        let started = tokio::time::Instant::now();
        let (hung, state) = s.send("commit-hung", Local::Hang).await;
        assert_eq!(state, TransactionState::Unknown);
        assert!(
            started.elapsed() >= EXECUTE_TIMEOUT,
            "the hanging execute ran until its timeout"
        );
        // Neither was committed by the producer: the broker asks, the check commits.
        for id in [&panicked, &hung] {
            assert_eq!(
                s.log.wait_checked(id, s.limit).await.state,
                TransactionState::Commit
            );
            s.consumed(id).await;
        }
        assert_eq!(s.deliveries(&panicked), 1);
        assert_eq!(s.deliveries(&hung), 1);
        s.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_check_leaves_the_connection_free() {
    within(TEST_TIMEOUT, async {
        let s = setup("tx_slow_check").await;
        let (gated, _) = s.send(&format!("{GATED}-1"), Local::Unknown).await;
        s.log.wait_started(&gated, s.limit).await;
        // The check holds the only check slot; sends on the same connection go on.
        for i in 0..3 {
            let started = tokio::time::Instant::now();
            s.producer
                .producer()
                .send(Message::new(&s.topic, format!("plain-{i}")))
                .await
                .expect("plain send while a check runs");
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "send took {:?} while a check was running",
                started.elapsed()
            );
        }
        let (committed, state) = s.send("commit-meanwhile", Local::Commit).await;
        assert_eq!(state, TransactionState::Commit);
        s.consumed(&committed).await;
        assert!(s.log.checks_of(&gated).is_empty(), "still waiting");
        s.log.open_gate();
        assert_eq!(
            s.log.wait_checked(&gated, s.limit).await.state,
            TransactionState::Commit
        );
        s.consumed(&gated).await;
        s.finish().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_and_batched_transactional_sends_are_refused() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("tx_refused", 1).await;
        let log = TxLog::new();
        let group = rmq_testkit::unique_name("tx_refused_pg");
        let producer = tx_producer(env.namesrv(), &group, &[&topic], &log, EXECUTE_TIMEOUT).await;

        for msg in [
            Message::new(&topic, "x").with_delay_level(3),
            Message::new(&topic, "x").with_property(property::TIMER_DELAY_SEC, "10"),
        ] {
            let e = producer
                .send_in_transaction(msg, Local::Commit)
                .await
                .unwrap_err();
            assert!(
                matches!(
                    e.downcast_ref::<rmq_producer::Error>()
                        .map(rmq_producer::Error::inner),
                    Some(rmq_producer::Error::InvalidMessage(
                        InvalidMessage::TransactionDelay { .. }
                    ))
                ),
                "{e:?}"
            );
            let back = e.into_message().expect("the message is handed back");
            assert!(back.property(property::TRAN_MSG).is_none(), "untouched");
        }

        let batch = vec![
            Message::new(&topic, "a"),
            Message::new(&topic, "b").with_property(property::TRAN_MSG, "true"),
        ];
        let e = producer.producer().send_batch(batch).await.unwrap_err();
        assert!(
            matches!(
                e.downcast_ref::<rmq_producer::Error>()
                    .map(rmq_producer::Error::inner),
                Some(rmq_producer::Error::InvalidMessage(
                    InvalidMessage::TransactionInBatch { index: 1 }
                ))
            ),
            "{e:?}"
        );
        assert!(log.checks().is_empty());
        producer.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_make_a_new_producer_known_before_it_sends() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("tx_topics", 1).await;
        let log = TxLog::new();

        let without = rmq_testkit::unique_name("tx_topics_none_pg");
        let idle = tx_producer(env.namesrv(), &without, &[], &log, EXECUTE_TIMEOUT).await;
        let with = rmq_testkit::unique_name("tx_topics_pg");
        let ready = tx_producer(env.namesrv(), &with, &[&topic], &log, EXECUTE_TIMEOUT).await;
        let client_id = ready.producer().client_id().to_owned();
        let listed = wait_producer_listed(&env, &with, Duration::from_secs(10), |id, _| {
            id == client_id
        })
        .await;
        assert_eq!(listed, client_id);
        // Registration heartbeats at once: by now the other one would be listed too, had it
        // known a broker.
        assert!(
            producer_clients(&env, &without).await.is_empty(),
            "a producer without topics knows no broker before its first send"
        );
        idle.shutdown().await.expect("producer shutdown");
        ready.shutdown().await.expect("producer shutdown");
        env.shutdown().await;
    })
    .await;
}
