//! The explicit pull consumer against the real broker: walking every queue
//! from min to max offset, long polling, consume offsets, tag re-check,
//! send-back, broadcasting offsets in a local file.

use std::time::{Duration, Instant, SystemTime};

use rmq_consumer_pull::{Expression, MessageModel, PullConsumer, PullStatus};
use rmq_producer::Message;
use rmq_testkit::env::{Env, body, count_once, send_batches, send_to};
use rmq_testkit::wait::{TEST_TIMEOUT, within};

const MESSAGES: usize = 5000;
const QUEUES: i32 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walks_every_queue_min_to_max_and_long_polls() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("pull_walk", QUEUES).await;
        let producer = env.producer().await;
        let sent = send_batches(&producer, &topic, "w", MESSAGES).await;

        let pull = PullConsumer::builder()
            .group(rmq_testkit::unique_name("pull_walk"))
            .namesrv_addr(env.namesrv())
            .start()
            .await
            .expect("pull consumer starts");
        let queues = pull.fetch_subscribe_queues(&topic).await.expect("queues");
        assert_eq!(queues.len(), usize::try_from(QUEUES).unwrap());

        // The consume queues are written shortly after the send returns:
        // wait until the max offsets account for every message.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut ranges = Vec::new();
        loop {
            ranges.clear();
            for q in &queues {
                let min = pull.min_offset(q).await.expect("min offset");
                let max = pull.max_offset(q).await.expect("max offset");
                ranges.push((q.clone(), min, max));
            }
            let total: i64 = ranges.iter().map(|(_, min, max)| max - min).sum();
            if total == i64::try_from(MESSAGES).unwrap() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "max offsets sum to {total}, want {MESSAGES}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            ranges.iter().all(|(_, _, max)| *max > 0),
            "every queue got messages: {ranges:?}"
        );

        let mut received = Vec::new();
        for (queue, min, max) in &ranges {
            let mut offset = *min;
            while offset < *max {
                let result = pull.pull(queue, "*", offset, 32).await.expect("pull");
                assert_eq!(result.status, PullStatus::Found, "at {offset} of {queue}");
                assert_eq!((result.min_offset, result.max_offset), (*min, *max));
                assert!(!result.messages.is_empty());
                for (i, m) in result.messages.iter().enumerate() {
                    assert_eq!(m.queue_offset, offset + i64::try_from(i).unwrap());
                    assert_eq!(m.queue_id, queue.queue_id);
                    assert_eq!(m.broker_name, queue.broker_name);
                }
                received.extend(result.messages.iter().map(body));
                offset = result.next_begin_offset;
            }
            assert_eq!(offset, *max);
            let end = pull
                .pull(queue, "*", offset, 32)
                .await
                .expect("pull at end");
            assert_eq!(end.status, PullStatus::NoNewMsg);
            assert!(end.messages.is_empty());
            assert_eq!(end.next_begin_offset, *max);
        }
        let counts = count_once(&received);
        assert_eq!(received.len(), MESSAGES, "every message once");
        assert!(counts.values().all(|&n| n == 1));
        assert!(
            sent.iter().all(|b| counts.contains_key(b)),
            "nothing missing"
        );

        // Long polling: a pull at the end of a queue returns as soon as a
        // message arrives, well before its 10 s timeout.
        let (queue, _, max) = ranges[0].clone();
        let hold = Duration::from_secs(10);
        let started = Instant::now();
        let blocked = {
            let pull = pull.clone();
            let queue = queue.clone();
            tokio::spawn(async move { pull.pull_blocking(&queue, "*", max, 32, hold).await })
        };
        // Give the request time to reach the broker and be held there; the
        // assertions hold either way (an early pull would simply wait less).
        tokio::time::sleep(Duration::from_millis(500)).await;
        let sent_at = Instant::now();
        producer
            .send_to_queue(Message::new(topic.as_str(), "late"), &queue)
            .await
            .expect("send late");
        let result = blocked.await.expect("join").expect("pull_blocking");
        let waited = started.elapsed();
        let after_send = sent_at.elapsed();
        assert_eq!(result.status, PullStatus::Found);
        assert_eq!(result.messages.len(), 1);
        assert_eq!(body(&result.messages[0]), "late");
        assert!(
            waited < hold / 2,
            "pull_blocking returned after {waited:?}, {after_send:?} after the send; \
             expected well before the {hold:?} timeout"
        );
        eprintln!("pull_blocking: {waited:?} in all, {after_send:?} after the send");

        // Nothing new: the blocking pull times out with NoNewMsg.
        let started = Instant::now();
        let idle = pull
            .pull_blocking(&queue, "*", max + 1, 32, Duration::from_millis(800))
            .await
            .expect("idle pull_blocking");
        assert_eq!(idle.status, PullStatus::NoNewMsg);
        assert!(
            started.elapsed() >= Duration::from_millis(700),
            "held for its timeout"
        );

        pull.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
        assert!(
            pull.pull(&queue, "*", 0, 1)
                .await
                .unwrap_err()
                .is_shutdown()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_offsets_tags_search_and_send_back() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("pull_offsets", 1).await;
        let queue = env.queues(&topic, 1).remove(0);
        let producer = env.producer().await;
        let before = SystemTime::now() - Duration::from_secs(1);
        for i in 0..20 {
            let tag = if i % 2 == 0 { "even" } else { "odd" };
            producer
                .send_to_queue(
                    Message::new(topic.as_str(), format!("t-{i}")).with_tags(tag),
                    &queue,
                )
                .await
                .expect("send");
        }
        let group = rmq_testkit::unique_name("pull_offsets");
        let pull = PullConsumer::builder()
            .group(group.as_str())
            .namesrv_addr(env.namesrv())
            .register_topic(topic.as_str())
            .start()
            .await
            .expect("start");

        // Tag filter: the broker filters by hash, the client re-checks.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut odd = Vec::new();
        let mut offset = 0;
        while odd.len() < 10 {
            assert!(Instant::now() < deadline, "only {} odd messages", odd.len());
            let r = pull
                .pull(&queue, "odd", offset, 32)
                .await
                .expect("pull odd");
            odd.extend(
                r.messages
                    .iter()
                    .map(|m| (m.tags().map(str::to_owned), body(m))),
            );
            offset = r.next_begin_offset;
            if r.status == PullStatus::NoNewMsg {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        assert!(
            odd.iter().all(|(t, _)| t.as_deref() == Some("odd")),
            "{odd:?}"
        );
        let sql_or_tag = pull
            .pull(&queue, Expression::tag("even || odd"), 0, 32)
            .await
            .expect("pull both");
        assert_eq!(sql_or_tag.messages.len(), 20);

        assert_eq!(pull.search_offset(&queue, before).await.expect("search"), 0);
        let future = SystemTime::now() + Duration::from_secs(3600);
        // Past the last message: 5.x brokers answer the max offset (20),
        // 4.9.x brokers the offset of the last message (19).
        let found = pull.search_offset(&queue, future).await.expect("search");
        assert!(
            found == 20 || found == 19,
            "search past the end gave {found}"
        );

        // Consume offsets: none yet (the broker answers 0 for a new group on
        // a young queue), then set, persisted, read back.
        let none = pull
            .fetch_consume_offset(&queue, true)
            .await
            .expect("fetch");
        assert!(matches!(none, None | Some(0)), "{none:?}");
        pull.update_consume_offset(&queue, 7).expect("update");
        assert_eq!(
            pull.fetch_consume_offset(&queue, false)
                .await
                .expect("fetch"),
            Some(7)
        );
        pull.persist(&queue).await.expect("persist");
        pull.update_consume_offset(&queue, 12).expect("update");
        assert!(pull.update_consume_offset(&queue, -1).is_err());
        pull.shutdown().await.expect("shutdown persists");

        // A new consumer of the group sees the offset persisted at shutdown.
        let again = PullConsumer::builder()
            .group(group.as_str())
            .namesrv_addr(env.namesrv())
            .start()
            .await
            .expect("restart");
        assert_eq!(
            again
                .fetch_consume_offset(&queue, true)
                .await
                .expect("fetch"),
            Some(12)
        );

        // Send-back: the broker accepts the message for a retry.
        let first = again.pull(&queue, "*", 0, 1).await.expect("pull one");
        again
            .send_back(&first.messages[0], 1)
            .await
            .expect("send back");
        again.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcasting_offsets_live_in_a_local_file() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("pull_bcast", 2).await;
        let queues = env.queues(&topic, 2);
        let dir = tempfile::tempdir().expect("tempdir");
        let group = rmq_testkit::unique_name("pull_bcast");
        let start = || {
            PullConsumer::builder()
                .group(group.as_str())
                .namesrv_addr(env.namesrv())
                .message_model(MessageModel::Broadcasting)
                .offset_store_dir(dir.path())
                .start()
        };
        let pull = start().await.expect("start");
        pull.update_consume_offset(&queues[0], 3).expect("update");
        pull.update_consume_offset(&queues[1], 5).expect("update");
        pull.persist_all().await.expect("persist all");
        pull.shutdown().await.expect("shutdown");

        let again = start().await.expect("restart");
        assert_eq!(
            again.fetch_consume_offset(&queues[0], true).await.unwrap(),
            Some(3)
        );
        assert_eq!(
            again.fetch_consume_offset(&queues[1], true).await.unwrap(),
            Some(5)
        );
        again.shutdown().await.expect("shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_side_reset_replaces_the_consume_offset() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("pull_reset", 1).await;
        let queue = env.queues(&topic, 1).remove(0);
        let producer = env.producer().await;
        send_to(&producer, &queue, "r", 10).await;
        let group = rmq_testkit::unique_name("pull_reset");
        let pull = PullConsumer::builder()
            .group(group.as_str())
            .namesrv_addr(env.namesrv())
            .register_topic(topic.as_str())
            .start()
            .await
            .expect("start");
        pull.update_consume_offset(&queue, 10).expect("offset");
        pull.persist(&queue).await.expect("persist");
        assert_eq!(
            pull.fetch_consume_offset(&queue, true).await.expect("read"),
            Some(10)
        );

        // mqadmin resetOffsetByTime with force: 5.x keeps the offsets on the
        // broker, 4.9.x sends them to the online consumer.
        let admin = rmq_testkit::client::instance("pull_reset_admin").await;
        admin
            .invoke_broker_to_reset_offset(
                &env.broker.broker_addr,
                rmq_protocol::header::ResetOffsetRequestHeader {
                    topic: topic.clone(),
                    group: group.clone(),
                    timestamp: 0,
                    is_force: true,
                    queue_id: None,
                    offset: None,
                },
            )
            .await
            .expect("the broker resets the group");
        admin.shutdown().await;

        // The stored offset is the reset one on both lines, and stays so
        // across the consumer's own persist.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let stored = pull.fetch_consume_offset(&queue, true).await.expect("read");
            if stored == Some(0) {
                break;
            }
            assert!(Instant::now() < deadline, "stored offset {stored:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        pull.persist_all().await.expect("persist");
        assert_eq!(
            pull.fetch_consume_offset(&queue, true).await.expect("read"),
            Some(0)
        );
        pull.shutdown().await.expect("shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
