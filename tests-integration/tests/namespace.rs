//! Namespaces over remoting (`ClientConfig::builder().namespace(..)`, the Java remoting client's
//! `setNamespace`) against the real broker: every producer and consumer kind works in a
//! namespace; the broker sees the wrapped names (`<ns>%<topic>`, `<ns>%<group>`, retries in
//! `%RETRY%<ns>%<group>`, dead letters in `%DLQ%<ns>%<group>`) and the application the plain ones;
//! two namespaces with one topic name are isolated; the official Java client in the same
//! namespace reads what rmq sent and the reverse. Java's `setNamespaceV2` (5.x) wraps nothing in
//! the client: it only tags the requests (`ns`, `nsd`), which the open-source broker ignores;
//! that test shows it, and that the 4.9.x client has no such call.
//!
//! Runs on 5.x and 4.9.x (namespaces are the client's); the pop consumers only on 5.x, and the
//! 4.9.x line gets the pop consumer's typed refusal instead.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_client_core::ClientConfig;
use rmq_consumer_pull::{LitePullConsumer, PullConsumer, PullStatus, SimpleConsumer};
use rmq_consumer_push::{OrderlyResult, PushConsumer, orderly_listener_fn};
use rmq_producer::{Message, Producer, TransactionState, transaction_fn};
use rmq_protocol::message::property;
use rmq_protocol::{MessageExt, MessageQueue};
use rmq_testkit::unique_name;
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::features::{events, is_4x};
use rmq_tests_integration::java_peer::{self, JavaProcess};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, poll_until, within};
use tokio::sync::mpsc;

/// Queues of the test topics.
const QUEUES: i32 = 2;
/// Longest wait for a consumer to see what was sent.
const SEEN_WITHIN: Duration = Duration::from_secs(60);

/// A fresh namespace name.
fn fresh_namespace() -> String {
    unique_name("ns")
}

/// A client configuration of the test broker in `namespace`.
fn config_in(env: &Env, namespace: &str) -> ClientConfig {
    ClientConfig::builder()
        .namesrv_addr(env.namesrv())
        .instance_name(unique_name("ns_it"))
        .persist_consumer_offset_interval(Duration::from_secs(1))
        .namespace(namespace)
        .build()
        .expect("client config with a namespace")
}

/// A fresh topic name and its broker topic `<namespace>%<name>`, created with [`QUEUES`] queues.
async fn topic_in(env: &Env, namespace: &str, prefix: &str) -> (String, String) {
    let name = unique_name(prefix);
    let wrapped = format!("{namespace}%{name}");
    env.topic_on(&wrapped, &env.broker.broker_addr, QUEUES)
        .await;
    (name, wrapped)
}

/// What a consumer handed over: the message's topic, the queue's topic it names, the body.
type Got = (String, String, String);

fn got(m: &MessageExt, queue: &MessageQueue) -> Got {
    (
        m.topic.clone(),
        queue.topic.clone(),
        String::from_utf8_lossy(&m.body).into_owned(),
    )
}

/// Receives from `rx` until `n` distinct bodies came (within [`SEEN_WITHIN`]).
async fn collect(rx: &mut mpsc::UnboundedReceiver<Got>, n: usize, what: &str) -> Vec<Got> {
    let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
    let mut all: Vec<Got> = Vec::new();
    while all.iter().map(|g| &g.2).collect::<BTreeSet<_>>().len() < n {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(g)) => all.push(g),
            Ok(None) => panic!("{what}: the consumer stopped; got {all:?}"),
            Err(_) => panic!("{what}: {n} messages not within {SEEN_WITHIN:?}; got {all:?}"),
        }
    }
    all
}

/// Checks that every message and queue a consumer showed is named `topic` (unwrapped).
fn assert_unwrapped(all: &[Got], topic: &str, what: &str) {
    for (msg_topic, queue_topic, body) in all {
        assert_eq!(
            msg_topic, topic,
            "{what}: the message {body} shows the plain topic"
        );
        assert_eq!(
            queue_topic, topic,
            "{what}: the queue of {body} shows the plain topic"
        );
    }
}

/// The bodies the producer test sends, in order.
const BODIES: [&str; 8] = [
    "send",
    "batch-0",
    "batch-1",
    "callback",
    "oneway",
    "to-queue",
    "selector",
    "tx-commit",
];

/// Every way the producer sends, each into the namespace; checks the send results name the plain
/// topic. Answers the producer group the broker sees.
async fn send_every_way(env: &Env, config: &ClientConfig, ns: &str, topic: &str) -> String {
    let group = unique_name("ns_pg");
    let producer = Producer::builder()
        .group(group.as_str())
        .client_config(config.clone())
        .start()
        .await
        .expect("producer in a namespace starts");
    let wrapped_group = format!("{ns}%{group}");
    assert_eq!(producer.config().group(), wrapped_group);
    assert_eq!(producer.config().namespace().as_str(), ns);

    let r = producer
        .send(Message::new(topic, "send"))
        .await
        .expect("send");
    assert_eq!(
        r.message_queue.topic, topic,
        "the send result's queue is unwrapped"
    );
    let r = producer
        .send_batch(vec![
            Message::new(topic, "batch-0"),
            Message::new(topic, "batch-1"),
        ])
        .await
        .expect("batch send");
    assert_eq!(r.message_queue.topic, topic);
    let (tx, rx) = tokio::sync::oneshot::channel();
    producer.send_with_callback(Message::new(topic, "callback"), move |r| {
        let _ = tx.send(r);
    });
    let r = rx.await.expect("callback called").expect("callback send");
    assert_eq!(r.message_queue.topic, topic);
    producer
        .send_oneway(Message::new(topic, "oneway"))
        .await
        .expect("oneway send");
    let queues = producer
        .publish_queues(topic)
        .await
        .expect("publish queues");
    assert_eq!(queues.len(), usize::try_from(QUEUES).unwrap_or(0));
    assert!(queues.iter().all(|q| q.topic == topic), "{queues:?}");
    let r = producer
        .send_to_queue(Message::new(topic, "to-queue"), &queues[1])
        .await
        .expect("send to a queue");
    assert_eq!(
        (r.message_queue.topic.as_str(), r.message_queue.queue_id),
        (topic, 1)
    );
    let r = producer
        .send_with_selector(Message::new(topic, "selector"), |qs, m| {
            assert!(qs.iter().all(|q| q.topic == m.topic), "{qs:?} {m:?}");
            0
        })
        .await
        .expect("send with a selector");
    assert_eq!(r.message_queue.topic, topic);

    // The broker lists the producer in the wrapped group (the heartbeat that registers it goes
    // out in the background once a route is known: bounded polling).
    let client_id = producer.client_id().to_owned();
    poll_until(
        Duration::from_secs(20),
        Duration::from_millis(100),
        "the producer listed in the wrapped group",
        || {
            let (env, group, id) = (env, &wrapped_group, &client_id);
            async move {
                match env
                    .admin
                    .get_producer_connection_list(&env.broker.broker_addr, group)
                    .await
                {
                    Ok(c) if c.contains_client(id) => Ok(()),
                    other => Err(format!("{other:?}")),
                }
            }
        },
    )
    .await;
    producer.shutdown().await.expect("producer shutdown");

    // Transactions: the half message goes to the wrapped topic, the check-back names the plain
    // one to the listener.
    let checked: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = checked.clone();
    let tx_producer = Producer::builder()
        .group(unique_name("ns_txg"))
        .client_config(config.clone())
        .transaction_listener(transaction_fn(
            |_msg: &Message, commit: bool| {
                let state = if commit {
                    TransactionState::Commit
                } else {
                    TransactionState::Unknown
                };
                Box::pin(async move { state })
            },
            move |msg: &MessageExt| {
                if let Ok(mut s) = seen.lock() {
                    s.push(msg.topic.clone());
                }
                Box::pin(async { TransactionState::Commit })
            },
        ))
        .start()
        .await
        .expect("transactional producer in a namespace starts");
    let (r, state) = tx_producer
        .send_in_transaction(Message::new(topic, "tx-commit"), true)
        .await
        .expect("transactional send");
    assert_eq!(
        (r.message_queue.topic.as_str(), state),
        (topic, TransactionState::Commit)
    );
    let (r, _) = tx_producer
        .send_in_transaction(Message::new(topic, "tx-check"), false)
        .await
        .expect("transactional send left to the check-back");
    assert_eq!(r.message_queue.topic, topic);
    poll_until(
        Duration::from_secs(60),
        Duration::from_millis(200),
        "the check-back of the unknown transaction",
        || {
            let checked = checked.clone();
            async move {
                let topics = checked.lock().map(|s| s.clone()).unwrap_or_default();
                if topics.is_empty() {
                    Err("no check-back yet".to_owned())
                } else {
                    Ok(topics)
                }
            }
        },
    )
    .await
    .iter()
    .for_each(|t| assert_eq!(t, topic, "the check-back shows the plain topic"));
    tx_producer
        .shutdown()
        .await
        .expect("transactional producer shutdown");
    wrapped_group
}

/// Producers of every kind, and the push consumers (concurrent with retry and dead letters,
/// orderly, and on 5.x pop mode), in one namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_and_push_consumers_in_a_namespace() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let ns = fresh_namespace();
        let config = config_in(&env, &ns);
        let (topic, wrapped) = topic_in(&env, &ns, "ns_push").await;
        send_every_way(&env, &config, &ns, &topic).await;

        // The broker stored everything in the wrapped topic, tagged with the namespace.
        let all = BODIES.len() + 1;
        let stored = env.pull_topic(&wrapped, QUEUES, all).await;
        assert_eq!(stored.len(), all, "{stored:?}");
        for m in &stored {
            assert_eq!(m.topic, wrapped);
            if m.property(property::TRAN_MSG).is_none() {
                assert_eq!(
                    m.property(property::INSTANCE_ID),
                    Some(ns.as_str()),
                    "{m:?}"
                );
            }
        }

        // Concurrent: "send" always fails; with max reconsume times 1 it comes back once through
        // `%RETRY%<ns>%<group>`, then goes to `%DLQ%<ns>%<group>`.
        let group = unique_name("ns_cg");
        let wrapped_group = format!("{ns}%{group}");
        let rec = Arc::new(Recorder::new());
        let spec = ConsumerSpec::new(env.namesrv(), &group, &topic).max_reconsume_times(1);
        let concurrent = spec
            .builder()
            .client_config(config_in(&env, &ns))
            .start(consumer::recording(rec.clone(), 0, |m, _| {
                m.body.as_ref() == b"send"
            }))
            .await
            .expect("push consumer in a namespace starts");
        assert_eq!(concurrent.group(), wrapped_group);
        rec.wait_for(SEEN_WITHIN, "every message, the failing one twice", |s| {
            s.distinct() == all && s.deliveries.len() > all
        })
        .await;
        let ids = env.consumer_ids(&wrapped_group).await;
        assert!(ids.contains(&consumer::client_id(&concurrent)), "{ids:?}");
        let retry_shown = format!("%RETRY%{group}");
        rec.with(|seen| {
            for d in &seen.deliveries {
                assert_eq!(d.msg.topic, topic, "plain topic: {d:?}");
                let shown = if d.msg.reconsume_times > 0 {
                    &retry_shown
                } else {
                    &topic
                };
                assert_eq!(&d.queue.topic, shown, "the context's queue: {d:?}");
            }
        });
        let failing = rec.with(|seen| {
            seen.deliveries
                .iter()
                .find(|d| d.msg.body.as_ref() == b"send")
                .map(|d| d.msg.msg_id.clone())
                .expect("the failing message")
        });
        let dlq = format!("%DLQ%{wrapped_group}");
        let dead = poll_until(
            Duration::from_secs(30),
            Duration::from_millis(200),
            "the failing message in the wrapped DLQ",
            || {
                let (env, dlq, id) = (&env, &dlq, &failing);
                async move {
                    if env.admin.refresh_route(dlq).await.is_err() {
                        return Err("no route yet".to_owned());
                    }
                    env.pull_all(dlq, 0)
                        .await
                        .into_iter()
                        .find(|m| &m.msg_id == id)
                        .ok_or_else(|| "not there yet".to_owned())
                }
            },
        )
        .await;
        assert_eq!(dead.topic, dlq);
        let retry = format!("%RETRY%{wrapped_group}");
        env.admin
            .refresh_route(&retry)
            .await
            .unwrap_or_else(|e| panic!("the broker has the wrapped retry topic {retry}: {e}"));
        env.wait_committed_at_max(&wrapped_group, &wrapped, QUEUES, Duration::from_secs(10))
            .await;
        concurrent.shutdown().await.expect("shutdown");

        // Orderly.
        let (tx, mut rx) = mpsc::unbounded_channel();
        let orderly = ConsumerSpec::new(env.namesrv(), &unique_name("ns_og"), &topic)
            .builder()
            .client_config(config_in(&env, &ns))
            .start_orderly(orderly_listener_fn(move |msgs, ctx| {
                for m in msgs {
                    let _ = tx.send(got(m, ctx.queue()));
                }
                Box::pin(async { OrderlyResult::Success })
            }))
            .await
            .expect("orderly consumer in a namespace starts");
        let seen = collect(&mut rx, all, "orderly").await;
        assert_unwrapped(&seen, &topic, "orderly");
        orderly.shutdown().await.expect("shutdown");

        // Pop mode (5.x).
        if !is_4x(&env) {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let pop = ConsumerSpec::new(env.namesrv(), &unique_name("ns_popg"), &topic)
                .pop(Duration::from_secs(30))
                .builder()
                .client_config(config_in(&env, &ns))
                .start(rmq_consumer_push::listener_fn(move |msgs, ctx| {
                    for m in msgs {
                        let _ = tx.send(got(m, ctx.queue()));
                    }
                    Box::pin(async { rmq_consumer_push::ConsumeResult::Success })
                }))
                .await
                .expect("pop-mode consumer in a namespace starts");
            let seen = collect(&mut rx, all, "pop mode").await;
            assert_unwrapped(&seen, &topic, "pop mode");
            pop.shutdown().await.expect("shutdown");
        }
        env.shutdown().await;
    })
    .await;
}

/// The lite pull, explicit pull and (5.x) simple consumers in a namespace; on 4.9.x the simple
/// consumer in a namespace gets the typed "pop needs 5.x" refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_and_simple_consumers_in_a_namespace() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let ns = fresh_namespace();
        let (topic, wrapped) = topic_in(&env, &ns, "ns_pull").await;
        let producer = Producer::builder()
            .group(unique_name("ns_pg"))
            .client_config(config_in(&env, &ns))
            .start()
            .await
            .expect("producer starts");
        let n = 6;
        for i in 0..n {
            producer
                .send(Message::new(&topic, format!("m{i}")))
                .await
                .expect("send");
        }
        producer.shutdown().await.expect("producer shutdown");

        // Lite pull: subscribe, poll, commit.
        let lite_group = unique_name("ns_lg");
        let lite = LitePullConsumer::builder()
            .group(lite_group.as_str())
            .client_config(config_in(&env, &ns))
            .consume_from(rmq_offset_store::ConsumeFrom::FirstOffset)
            .auto_commit(false)
            .subscribe(topic.as_str(), "*")
            .start()
            .await
            .expect("lite pull consumer in a namespace starts");
        let mut polled: Vec<MessageExt> = Vec::new();
        let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
        while polled.len() < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "lite: got {polled:?}"
            );
            polled.extend(lite.poll(Duration::from_secs(1)).await.expect("poll"));
        }
        assert!(polled.iter().all(|m| m.topic == topic), "{polled:?}");
        let assigned = lite.assignment();
        assert!(
            !assigned.is_empty() && assigned.iter().all(|q| q.topic == topic),
            "{assigned:?}"
        );
        lite.commit_messages(&polled).await.expect("commit");
        for q in &assigned {
            lite.committed(q).await.expect("committed offset");
        }
        lite.shutdown().await.expect("shutdown");
        let committed = env
            .committed_offsets(&format!("{ns}%{lite_group}"), &wrapped, QUEUES)
            .await;
        assert!(
            committed.iter().any(|o| o.is_some_and(|o| o > 0)),
            "{committed:?}"
        );

        // Explicit pull: queues, pull, offsets.
        let pull_group = unique_name("ns_xg");
        let pull = PullConsumer::builder()
            .group(pull_group.as_str())
            .client_config(config_in(&env, &ns))
            .register_topic(topic.as_str())
            .start()
            .await
            .expect("pull consumer in a namespace starts");
        let queues = pull.fetch_subscribe_queues(&topic).await.expect("queues");
        assert_eq!(queues.len(), usize::try_from(QUEUES).unwrap_or(0));
        assert!(queues.iter().all(|q| q.topic == topic), "{queues:?}");
        // Bounded polling: a 4.9.x broker serves a message once its consume queue has it.
        let pulled = poll_until(SEEN_WITHIN, Duration::from_millis(200), "the pulls", || {
            let (pull, queues) = (&pull, &queues);
            async move {
                let mut all = Vec::new();
                for q in queues {
                    let r = pull.pull(q, "*", 0, 32).await.map_err(|e| e.to_string())?;
                    if r.status == PullStatus::Found {
                        all.extend(r.messages);
                    }
                }
                if all.len() >= n {
                    Ok(all)
                } else {
                    Err(format!("{} of {n}", all.len()))
                }
            }
        })
        .await;
        for q in &queues {
            let r = pull.pull(q, "*", 0, 32).await.expect("pull");
            pull.update_consume_offset(q, r.next_begin_offset)
                .expect("update offset");
            pull.persist(q).await.expect("persist offset");
            let stored = env
                .committed_offset(&format!("{ns}%{pull_group}"), &env.mq(&wrapped, q.queue_id))
                .await;
            assert_eq!(stored, Some(r.next_begin_offset), "{q}");
        }
        assert_eq!(pulled.len(), n, "{pulled:?}");
        assert!(pulled.iter().all(|m| m.topic == topic), "{pulled:?}");
        pull.shutdown().await.expect("shutdown");

        // Simple (pop) consumer.
        let simple = SimpleConsumer::builder()
            .group(unique_name("ns_sg"))
            .client_config(config_in(&env, &ns))
            .subscribe(topic.as_str(), "*")
            .await_duration(Duration::from_secs(2))
            .start()
            .await;
        if is_4x(&env) {
            let e = simple.expect_err("a 4.9.x broker has no pop");
            assert!(
                e.downcast_ref::<rmq_consumer_pull::Error>()
                    .is_some_and(rmq_consumer_pull::Error::is_pop_not_supported),
                "the typed pop refusal: {e:?}"
            );
        } else {
            let simple = simple.expect("simple consumer in a namespace starts");
            let mut received = Vec::new();
            let deadline = tokio::time::Instant::now() + SEEN_WITHIN;
            while received.len() < n {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "simple: got {received:?}"
                );
                for r in simple
                    .receive(16, Duration::from_secs(30))
                    .await
                    .expect("receive")
                {
                    simple.ack(&r).await.expect("ack");
                    received.push(r.into_message());
                }
            }
            assert!(received.iter().all(|m| m.topic == topic), "{received:?}");
            simple.unsubscribe(&topic);
            simple.shutdown().await.expect("shutdown");
        }
        env.shutdown().await;
    })
    .await;
}

/// One topic name in two namespaces: two topics on the broker, and a group name in each reads only
/// its own namespace's messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_namespaces_with_one_topic_name_are_isolated() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = unique_name("ns_iso");
        let group = unique_name("ns_iso_cg");
        let spaces = [fresh_namespace(), fresh_namespace()];
        for ns in &spaces {
            env.topic_on(&format!("{ns}%{topic}"), &env.broker.broker_addr, QUEUES)
                .await;
            let producer = Producer::builder()
                .group(unique_name("ns_iso_pg"))
                .client_config(config_in(&env, ns))
                .start()
                .await
                .expect("producer starts");
            for i in 0..3 {
                producer
                    .send(Message::new(&topic, format!("{ns}-{i}")))
                    .await
                    .expect("send");
            }
            producer.shutdown().await.expect("producer shutdown");
        }
        for ns in &spaces {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let c: PushConsumer = ConsumerSpec::new(env.namesrv(), &group, &topic)
                .builder()
                .client_config(config_in(&env, ns))
                .start(rmq_consumer_push::listener_fn(move |msgs, ctx| {
                    for m in msgs {
                        let _ = tx.send(got(m, ctx.queue()));
                    }
                    Box::pin(async { rmq_consumer_push::ConsumeResult::Success })
                }))
                .await
                .expect("consumer starts");
            let seen = collect(&mut rx, 3, ns).await;
            assert_unwrapped(&seen, &topic, ns);
            // Its own three, and after a settled queue still nothing of the other namespace.
            env.wait_committed_at_max(
                &format!("{ns}%{group}"),
                &format!("{ns}%{topic}"),
                QUEUES,
                Duration::from_secs(10),
            )
            .await;
            while let Ok(g) = rx.try_recv() {
                assert!(g.2.starts_with(ns.as_str()), "only {ns}'s messages: {g:?}");
            }
            assert!(
                seen.iter().all(|g| g.2.starts_with(ns.as_str())),
                "{seen:?}"
            );
            c.shutdown().await.expect("shutdown");
        }
        env.shutdown().await;
    })
    .await;
}

/// The official Java client with `setNamespace(N)` reads what rmq sent in N, and rmq in N reads
/// what it sent; both name the plain topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_and_rmq_share_a_namespace() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let classpath = java_peer::classpath_for(&env).await;
        let ns = fresh_namespace();
        let (topic, wrapped) = topic_in(&env, &ns, "ns_java").await;
        let home = tempfile::tempdir().expect("temp dir");

        // rmq → Java.
        let producer = Producer::builder()
            .group(unique_name("ns_java_pg"))
            .client_config(config_in(&env, &ns))
            .start()
            .await
            .expect("producer starts");
        for i in 0..3 {
            producer
                .send(Message::new(&topic, format!("rmq-{i}")))
                .await
                .expect("send");
        }
        producer.shutdown().await.expect("producer shutdown");
        let java_group = unique_name("ns_java_cg");
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqbench.NamespacePeer",
            &["consume", "v1", env.namesrv(), &ns, &topic, &java_group],
            home.path(),
        );
        java.wait_for(SEEN_WITHIN, "the Java consumer gets rmq's messages", |l| {
            events(l, "GOT")
                .iter()
                .filter(|w| w.get(3).is_some_and(|b| b.starts_with("rmq-")))
                .count()
                >= 3
        })
        .await;
        let got_by_java = events(&java.lines(), "GOT");
        java.finish(Duration::from_secs(10)).await;
        for w in &got_by_java {
            assert_eq!(w.get(1), Some(&topic), "Java shows the plain topic: {w:?}");
        }
        // The Java consumer's group is the wrapped one on the broker.
        let committed = env
            .committed_offsets(&format!("{ns}%{java_group}"), &wrapped, QUEUES)
            .await;
        assert!(committed.iter().any(Option::is_some), "{committed:?}");

        // Java → rmq.
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqbench.NamespacePeer",
            &[
                "produce",
                "v1",
                env.namesrv(),
                &ns,
                &topic,
                &unique_name("ns_java_pg"),
                "3",
            ],
            home.path(),
        );
        java.wait_for(SEEN_WITHIN, "the Java sends", |l| {
            events(l, "SENT").len() >= 3
        })
        .await;
        let sent = events(&java.lines(), "SENT");
        java.finish(Duration::from_secs(10)).await;
        for w in &sent {
            assert_eq!(
                w.get(2),
                Some(&topic),
                "Java's send result names the plain topic"
            );
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let c = ConsumerSpec::new(env.namesrv(), &unique_name("ns_java_rcg"), &topic)
            .builder()
            .client_config(config_in(&env, &ns))
            .start(rmq_consumer_push::listener_fn(move |msgs, ctx| {
                for m in msgs {
                    let _ = tx.send(got(m, ctx.queue()));
                }
                Box::pin(async { rmq_consumer_push::ConsumeResult::Success })
            }))
            .await
            .expect("consumer starts");
        let seen = collect(&mut rx, 6, "rmq reads both senders").await;
        assert_unwrapped(&seen, &topic, "rmq");
        let bodies: BTreeSet<&str> = seen.iter().map(|g| g.2.as_str()).collect();
        for b in ["rmq-0", "rmq-1", "rmq-2", "java-0", "java-1", "java-2"] {
            assert!(bodies.contains(b), "{b} in {bodies:?}");
        }
        c.shutdown().await.expect("shutdown");
        env.shutdown().await;
    })
    .await;
}

/// Java's `setNamespaceV2` (5.x) wraps nothing in the client: its message is stored in the plain
/// topic, which is why rmq follows `setNamespace`; the 4.9.x client has no `setNamespaceV2`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_namespace_v2_wraps_nothing() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let classpath = java_peer::classpath_for(&env).await;
        let ns = fresh_namespace();
        let topic = env.topic("ns_v2", QUEUES).await;
        let home = tempfile::tempdir().expect("temp dir");
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqbench.NamespacePeer",
            &[
                "produce",
                "v2",
                env.namesrv(),
                &ns,
                &topic,
                &unique_name("ns_v2_pg"),
                "1",
            ],
            home.path(),
        );
        java.wait_for(SEEN_WITHIN, "the Java v2 send", |l| {
            !events(l, "SENT").is_empty() || !events(l, "ERROR").is_empty()
        })
        .await;
        let lines = java.lines();
        java.finish(Duration::from_secs(10)).await;
        if is_4x(&env) {
            assert_eq!(
                events(&lines, "ERROR"),
                [["ERROR", "NoSuchMethodException", "setNamespaceV2"]],
                "the 4.9.x client has no setNamespaceV2: {lines:?}"
            );
            env.shutdown().await;
            return;
        }
        let sent = events(&lines, "SENT").remove(0);
        assert_eq!(sent.get(2), Some(&topic), "{lines:?}");
        let stored = env.pull_topic(&topic, QUEUES, 1).await;
        let m = stored
            .iter()
            .find(|m| Some(&m.msg_id) == sent.get(1))
            .unwrap_or_else(|| panic!("the v2 message in the plain topic: {stored:?}"));
        assert_eq!(m.topic, topic);
        env.shutdown().await;
    })
    .await;
}
