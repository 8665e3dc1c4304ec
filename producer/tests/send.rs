//! Every send kind against the real broker: pulled back raw and checked.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use rmq_producer::{Error, InvalidMessage, Message, MessageQueue, SendStatus, hash_index};
use rmq_protocol::message::property;
use rmq_testkit::env::Env;
use rmq_testkit::wait::{LONG_TEST_TIMEOUT, poll_until, within};

fn is_java_id(id: &str) -> bool {
    (id.len() == 32 || id.len() == 56)
        && id
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_send_kind_delivers() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("kinds", 4).await;
        let p = env.producer().await;
        let mut expected: HashMap<String, (Message, Option<MessageQueue>)> = HashMap::new();

        // send: tags, keys, user property.
        let plain = Message::new(&topic, "plain body")
            .with_tags("TagA")
            .with_keys(["k1", "k2"])
            .with_property("color", "red");
        let r = p.send(plain.clone()).await.expect("send");
        assert_eq!(r.status, SendStatus::SendOk);
        assert!(is_java_id(&r.msg_id), "{}", r.msg_id);
        assert_eq!(r.message_queue.topic, topic);
        expected.insert(r.msg_id.clone(), (plain, Some(r.message_queue.clone())));

        // send: a body over the compression threshold.
        let big: Bytes = (0..20_000u32)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<_>>()
            .into();
        let compressed = Message::new(&topic, big.clone()).with_tags("big");
        let r = p.send(compressed.clone()).await.expect("send big");
        expected.insert(
            r.msg_id.clone(),
            (compressed, Some(r.message_queue.clone())),
        );

        // send_to_queue.
        let q2 = MessageQueue::new(&topic, &env.broker.broker_name, 2);
        let to_queue = Message::new(&topic, "to queue 2").with_tags("q2");
        let r = p
            .send_to_queue(to_queue.clone(), &q2)
            .await
            .expect("send_to_queue");
        assert_eq!(r.message_queue, q2);
        expected.insert(r.msg_id.clone(), (to_queue, Some(q2)));

        // send_with_selector: the last queue.
        let selected = Message::new(&topic, "selected").with_keys(["sel"]);
        let r = p
            .send_with_selector(selected.clone(), |qs, _| qs.len() - 1)
            .await
            .expect("send_with_selector");
        assert_eq!(r.message_queue.queue_id, 3);
        expected.insert(r.msg_id.clone(), (selected, Some(r.message_queue.clone())));

        // send_with_callback.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let cb = Message::new(&topic, "callback").with_tags("cb");
        p.send_with_callback(cb.clone(), move |r| {
            let _ = tx.send(r);
        });
        let r = rx.await.expect("callback called").expect("callback send");
        expected.insert(r.msg_id.clone(), (cb, Some(r.message_queue.clone())));

        // send_batch: three messages, one request.
        let batch: Vec<Message> = (0..3)
            .map(|i| {
                Message::new(&topic, format!("batch {i}"))
                    .with_tags("batch")
                    .with_property("i", i.to_string())
            })
            .collect();
        let r = p.send_batch(batch.clone()).await.expect("send_batch");
        let ids: Vec<&str> = r.msg_id.split(',').collect();
        assert_eq!(ids.len(), 3);
        for (id, m) in ids.iter().zip(batch) {
            assert!(is_java_id(id), "{id}");
            expected.insert((*id).to_owned(), (m, Some(r.message_queue.clone())));
        }

        // send_oneway: a user-chosen UNIQ_KEY to find it.
        let oneway_id = "ONEWAY0000000000000000000000000A".to_owned();
        let oneway = Message::new(&topic, "oneway")
            .with_property(property::UNIQ_KEY, oneway_id.clone())
            .with_tags("ow");
        p.send_oneway(oneway.clone()).await.expect("send_oneway");
        expected.insert(oneway_id, (oneway, None));

        let pulled = env.pull_topic(&topic, 4, expected.len()).await;
        assert_eq!(pulled.len(), expected.len(), "pulled {pulled:#?}");
        for m in &pulled {
            let (sent, queue) = expected
                .get(&m.msg_id)
                .unwrap_or_else(|| panic!("unexpected message {}", m.msg_id));
            assert_eq!(m.body, sent.body, "body of {}", m.msg_id);
            assert_eq!(m.tags(), sent.tags());
            assert_eq!(
                m.keys().collect::<Vec<_>>(),
                sent.keys().collect::<Vec<_>>()
            );
            for (k, v) in &sent.properties {
                assert_eq!(m.property(k), Some(v), "property {k} of {}", m.msg_id);
            }
            assert_eq!(m.unique_key(), Some(m.msg_id.as_str()));
            // WAIT=true was sent; 5.x brokers keep it, 4.9.x brokers strip it before storing.
            assert!(matches!(m.property(property::WAIT), Some("true") | None));
            if let Some(q) = queue {
                assert_eq!(m.queue_id, q.queue_id, "queue of {}", m.msg_id);
            }
        }
        let big_msg = pulled
            .iter()
            .find(|m| m.tags() == Some("big"))
            .expect("big");
        assert_eq!(big_msg.body, big);
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_send_keeps_key_order_in_hash_queue() {
    within(LONG_TEST_TIMEOUT, async {
        const KEYS: usize = 100;
        const PER_KEY: usize = 100;
        const TASKS: usize = 10;
        let env = Env::new().await;
        let topic = env.topic("ordered", 8).await;
        let p = env.producer().await;

        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let p = p.clone();
            let topic = topic.clone();
            tasks.push(tokio::spawn(async move {
                let keys: Vec<String> = (t..KEYS)
                    .step_by(TASKS)
                    .map(|k| format!("order-{k}"))
                    .collect();
                for seq in 0..PER_KEY {
                    for key in &keys {
                        let msg = Message::new(&topic, format!("{key}:{seq}")).with_keys([key]);
                        let sel = rmq_producer::select_by_hash(key.clone());
                        p.send_with_selector(msg, sel).await.expect("ordered send");
                    }
                }
            }));
        }
        for t in tasks {
            t.await.expect("sender task");
        }

        let queues = p.publish_queues(&topic).await.expect("publish queues");
        assert_eq!(queues.len(), 8);
        // The broker writes its consume queues after answering the sends: wait until their max
        // offsets count every message before reading them.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut stored = 0;
            for q in &queues {
                stored += env
                    .max_offset_at(&env.broker.broker_addr, &topic, q.queue_id)
                    .await;
            }
            if usize::try_from(stored).is_ok_and(|n| n >= KEYS * PER_KEY) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the consume queues hold {stored} of {} messages after 30 s",
                KEYS * PER_KEY
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut total = 0;
        for q in &queues {
            let want = usize::try_from(
                env.max_offset_at(&env.broker.broker_addr, &topic, q.queue_id)
                    .await,
            )
            .expect("offset");
            let msgs = env
                .pull_queue(
                    &env.broker.broker_addr,
                    &topic,
                    q.queue_id,
                    want,
                    Duration::from_secs(30),
                )
                .await;
            assert_eq!(msgs.len(), want);
            total += msgs.len();
            let mut next: HashMap<String, usize> = HashMap::new();
            for m in msgs {
                let text = std::str::from_utf8(&m.body).expect("utf8").to_owned();
                let (key, seq) = text.split_once(':').expect("key:seq");
                let seq: usize = seq.parse().expect("seq");
                let expect_queue = &queues[hash_index(key, queues.len())];
                assert_eq!(
                    expect_queue.queue_id, q.queue_id,
                    "{key} landed in the wrong queue"
                );
                let n = next.entry(key.to_owned()).or_insert(0);
                assert_eq!(seq, *n, "{key} out of order in queue {}", q.queue_id);
                *n += 1;
            }
            assert!(next.values().all(|n| *n == PER_KEY));
        }
        assert_eq!(total, KEYS * PER_KEY);
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_level_two_arrives_after_its_delay() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("delay", 1).await;
        let p = env.producer().await;
        let sent_at = tokio::time::Instant::now();
        let r = p
            .send(Message::new(&topic, "later").with_delay_level(2))
            .await
            .expect("delayed send");
        let early = env
            .pull_queue(&env.broker.broker_addr, &topic, 0, 0, Duration::ZERO)
            .await;
        assert!(early.is_empty(), "delayed message visible at once");
        let got = env
            .pull_queue(
                &env.broker.broker_addr,
                &topic,
                0,
                1,
                Duration::from_secs(30),
            )
            .await;
        let arrived = sent_at.elapsed();
        assert_eq!(got.len(), 1);
        let m = &got[0];
        assert_eq!(m.msg_id, r.msg_id);
        assert_eq!(&m.body[..], b"later");
        assert!(
            arrived >= Duration::from_secs(1),
            "arrived after {arrived:?}"
        );
        let stored_after = m.store_timestamp - m.born_timestamp;
        assert!(stored_after >= 1000, "stored {stored_after} ms after birth");
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_of_100_lands_contiguously() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("batch", 2).await;
        let p = env.producer().await;
        for q in 0..2 {
            let mq = MessageQueue::new(&topic, &env.broker.broker_name, q);
            p.send_to_queue(Message::new(&topic, "before"), &mq)
                .await
                .expect("before");
        }
        let batch: Vec<Message> = (0..100)
            .map(|i| Message::new(&topic, format!("b{i}")))
            .collect();
        let r = p.send_batch(batch).await.expect("batch");
        let ids: Vec<&str> = r.msg_id.split(',').collect();
        assert_eq!(ids.len(), 100);
        for q in 0..2 {
            let mq = MessageQueue::new(&topic, &env.broker.broker_name, q);
            p.send_to_queue(Message::new(&topic, "after"), &mq)
                .await
                .expect("after");
        }
        let q = r.message_queue.queue_id;
        let msgs = env
            .pull_queue(
                &env.broker.broker_addr,
                &topic,
                q,
                102,
                Duration::from_secs(30),
            )
            .await;
        assert_eq!(msgs.len(), 102);
        let first = usize::try_from(r.queue_offset).expect("offset");
        assert_eq!(first, 1, "one message was in the queue before the batch");
        for (i, m) in msgs[first..first + 100].iter().enumerate() {
            assert_eq!(m.body, format!("b{i}").as_bytes());
            assert_eq!(m.msg_id, ids[i]);
            assert_eq!(
                m.queue_offset,
                r.queue_offset + i64::try_from(i).expect("i")
            );
        }
        assert_eq!(&msgs[101].body[..], b"after");
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_share_one_producer() {
    within(LONG_TEST_TIMEOUT, async {
        const TASKS: usize = 64;
        const EACH: usize = 1000;
        let env = Env::new().await;
        let topic = env.topic("concurrent", 8).await;
        let p = env.producer().await;
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let p = p.clone();
            let topic = topic.clone();
            tasks.push(tokio::spawn(async move {
                let mut failures = Vec::new();
                for i in 0..EACH {
                    if let Err(e) = p.send(Message::new(&topic, format!("{t}-{i}"))).await {
                        failures.push(e.to_string());
                    }
                }
                failures
            }));
        }
        let mut failures = Vec::new();
        for t in tasks {
            failures.extend(t.await.expect("task"));
        }
        assert!(
            failures.is_empty(),
            "{} failures, e.g. {:?}",
            failures.len(),
            failures.first()
        );
        // Every acknowledged send is stored once: the consume queues (written shortly after the
        // sends are answered) reach exactly TASKS * EACH messages, and no more.
        let want = i64::try_from(TASKS * EACH).expect("n");
        let stored = poll_until(
            Duration::from_secs(30),
            Duration::from_millis(20),
            "the consume queues count every acknowledged send",
            || async {
                let mut stored = 0;
                for q in 0..8 {
                    stored += env.max_offset_at(&env.broker.broker_addr, &topic, q).await;
                }
                if stored >= want {
                    Ok(stored)
                } else {
                    Err(stored)
                }
            },
        )
        .await;
        assert_eq!(stored, want);
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_topic_is_auto_created_through_tbw102() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = rmq_testkit::unique_name("auto");
        let p = env.producer().await;
        let r = p
            .send(Message::new(&topic, "first"))
            .await
            .expect("send to a new topic");
        assert_eq!(r.message_queue.topic, topic);
        assert!(r.message_queue.queue_id < 4);
        let addr = p
            .client_instance()
            .expect("a remoting producer")
            .find_broker_addr_in_publish(&r.message_queue.broker_name)
            .expect("broker address");
        let got = env
            .pull_queue(
                &addr,
                &topic,
                r.message_queue.queue_id,
                1,
                Duration::from_secs(10),
            )
            .await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].msg_id, r.msg_id);
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_messages_are_refused_and_handed_back() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("invalid", 1).await;
        let p = env.producer_with(|b| b.max_message_size(1024)).await;

        let check = |e: rmq_error::Error, what: &str| -> Message {
            assert_eq!(e.kind(), rmq_error::ErrorKind::InvalidArgument, "{what}");
            let e = detailed(e);
            let Error::Send { attempts, .. } = &e else {
                panic!("{what}: not a send error: {e}");
            };
            assert_eq!(*attempts, 0, "{what}");
            assert!(
                matches!(e.inner(), Error::InvalidMessage(_)),
                "{what}: {e:?}"
            );
            assert!(!e.is_retryable());
            e.into_message().expect("message handed back")
        };
        let back = check(
            p.send(Message::new("TBW102", "x")).await.unwrap_err(),
            "reserved",
        );
        assert_eq!(back.topic, "TBW102");
        check(
            p.send(Message::new("a/b", "x")).await.unwrap_err(),
            "bad chars",
        );
        check(
            p.send(Message::new(&topic, "")).await.unwrap_err(),
            "empty body",
        );
        let back = check(
            p.send(Message::new(&topic, vec![0u8; 1025]).with_tags("t"))
                .await
                .unwrap_err(),
            "too large",
        );
        assert_eq!(back.body.len(), 1025);
        check(
            p.send(Message::new(&topic, "x").with_property("k", "a\u{2}b"))
                .await
                .unwrap_err(),
            "separator",
        );
        let e = p
            .send_batch(vec![Message::new(&topic, "a"), Message::new("other", "b")])
            .await
            .unwrap_err();
        let e = detailed(e);
        assert!(matches!(
            e.inner(),
            Error::InvalidMessage(InvalidMessage::Batch(_))
        ));
        match e.into_unsent() {
            Some(rmq_producer::Unsent::Batch(b)) => assert_eq!(b.len(), 2),
            other => panic!("batch not handed back: {other:?}"),
        }
        let big: Vec<Message> = (0..10)
            .map(|_| Message::new(&topic, vec![1u8; 200]))
            .collect();
        let e = p.send_batch(big).await.unwrap_err();
        let e = detailed(e);
        assert!(
            matches!(
                e.inner(),
                Error::InvalidMessage(InvalidMessage::TooLarge { .. })
            ),
            "{e:?}"
        );
        let e = p
            .send_to_queue(
                Message::new(&topic, "x"),
                &MessageQueue::new("other", "b", 0),
            )
            .await
            .unwrap_err();
        let e = detailed(e);
        assert!(matches!(
            e.inner(),
            Error::InvalidMessage(InvalidMessage::QueueTopic { .. })
        ));
        let e = p
            .send_with_selector(Message::new(&topic, "x"), |qs, _| qs.len())
            .await
            .unwrap_err();
        let e = detailed(e);
        assert!(
            matches!(e.inner(), Error::BadQueueIndex { index: 1, len: 1 }),
            "{e:?}"
        );

        p.shutdown().await.expect("producer shutdown");
        let e = p.send(Message::new(&topic, "x")).await.unwrap_err();
        let e = detailed(e);
        assert!(matches!(e.inner(), Error::Shutdown));
    })
    .await;
}

/// The producer's own error under the one a call returned.
fn detailed(e: rmq_error::Error) -> Error {
    match e.downcast::<Error>() {
        Ok(e) => e,
        Err(e) => panic!("not a producer error: {e:?}"),
    }
}
