//! Request-reply (`Producer::request`, `request_with_callback`, `create_reply_message`; brokers
//! 4.6+, so both lines): a replier consuming the request topic answers with
//! `create_reply_message` and an ordinary send, the broker pushes the reply to the requester
//! (PUSH_REPLY_MESSAGE_TO_CLIENT) and the request returns it; no reply in time is a typed timeout;
//! a late reply is dropped and leaves nothing behind; a reply to a requester that is gone is a
//! typed error; rmq and the official Java client (`bench/peers/java` `rmqbench.FeaturePeer`)
//! answer each other's requests.

use std::time::{Duration, Instant};

use rmq_consumer_push::{ConsumeResult, PushConsumer, listener_fn};
use rmq_producer::{Message, Producer, create_reply_message};
use rmq_protocol::message::property;
use rmq_tests_integration::consumer::ConsumerSpec;
use rmq_tests_integration::features::events;
use rmq_tests_integration::java_peer::{self, JavaProcess};
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

/// Time for a request whose replier is running (the replier's consumer may still be starting).
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// An rmq replier of `topic`: a push consumer that answers every request with
/// `rmq reply to <body>`, sent by a producer of its own.
async fn rmq_replier(env: &Env, topic: &str) -> (PushConsumer, Producer) {
    let producer = env.producer().await;
    let sender = producer.clone();
    let group = rmq_testkit::unique_name("replier_cg");
    let consumer = ConsumerSpec::new(env.namesrv(), &group, topic)
        .builder()
        .start(listener_fn(move |msgs, _ctx| {
            let sender = sender.clone();
            Box::pin(async move {
                for m in msgs {
                    let body = format!("rmq reply to {}", String::from_utf8_lossy(&m.body));
                    let reply = create_reply_message(&m.message, body).expect("a request");
                    if let Err(e) = sender.send(reply).await {
                        println!("reply to {} failed: {e}", m.msg_id);
                    }
                }
                ConsumeResult::Success
            })
        }))
        .await
        .expect("replier starts");
    (consumer, producer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_get_their_replies() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("request", 2).await;
        let (replier, reply_producer) = rmq_replier(&env, &topic).await;
        let requester = env.producer().await;

        let reply = requester
            .request(Message::new(&topic, "ping"), REPLY_TIMEOUT)
            .await
            .expect("the reply");
        assert_eq!(reply.body.as_ref(), b"rmq reply to ping");
        assert_eq!(
            reply.message.topic,
            format!("{}_REPLY_TOPIC", env.broker.cluster)
        );
        assert_eq!(reply.property(property::MSG_TYPE), Some("reply"));
        assert_eq!(
            reply.property(property::REPLY_TO_CLIENT),
            Some(requester.client_id())
        );
        assert!(reply.property(property::CORRELATION_ID).is_some());
        assert!(
            reply
                .property(property::REPLY_MESSAGE_ARRIVE_TIME)
                .is_some()
        );

        // Several at once, in the background.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..5 {
            let tx = tx.clone();
            requester.request_with_callback(
                Message::new(&topic, format!("q{i}")),
                REPLY_TIMEOUT,
                move |r| {
                    let _ = tx.send(r.map(|m| String::from_utf8_lossy(&m.body).into_owned()));
                },
            );
        }
        drop(tx);
        let mut bodies = Vec::new();
        while let Some(r) = rx.recv().await {
            bodies.push(r.expect("a reply"));
        }
        bodies.sort();
        assert_eq!(
            bodies,
            (0..5)
                .map(|i| format!("rmq reply to q{i}"))
                .collect::<Vec<_>>()
        );
        let instance = requester.client_instance().expect("remoting");
        assert_eq!(instance.pending_replies(), 0, "every request is finished");

        replier.shutdown().await.expect("replier shutdown");
        reply_producer.shutdown().await.expect("producer shutdown");
        requester.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reply_is_a_typed_timeout_and_a_late_reply_is_dropped() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("request_late", 1).await;
        let requester = env.producer().await;
        let timeout = Duration::from_secs(2);
        let started = Instant::now();
        let e = requester
            .request(Message::new(&topic, "anyone?"), timeout)
            .await
            .expect_err("nobody replies");
        let took = started.elapsed();
        assert!(
            took >= timeout && took < timeout + Duration::from_secs(2),
            "{took:?}"
        );
        assert!(e.is_timeout(), "{e:?}");
        assert_eq!(e.kind(), rmq_error::ErrorKind::Timeout);
        assert!(
            matches!(
                e.downcast_ref::<rmq_producer::Error>(),
                Some(rmq_producer::Error::RequestTimeout { .. })
            ),
            "{e:?}"
        );
        let instance = requester.client_instance().expect("remoting").clone();
        assert_eq!(instance.pending_replies(), 0);

        // The reply comes now, late: the broker pushes it, the requester drops it.
        let stored = env.pull_topic(&topic, 1, 1).await;
        let request = stored.first().expect("the request is stored");
        assert_eq!(
            request.property(property::CLUSTER),
            Some(env.broker.cluster.as_str())
        );
        assert_eq!(request.property(property::TTL), Some("2000"));
        let replier = env.producer().await;
        let reply = create_reply_message(&request.message, "too late").expect("a request");
        replier
            .send(reply.clone())
            .await
            .expect("the broker pushed the late reply to the requester");
        assert_eq!(instance.pending_replies(), 0, "nothing kept for it");

        // The requester is gone: the broker cannot push the reply.
        requester.shutdown().await.expect("producer shutdown");
        let e = poll_until(
            Duration::from_secs(20),
            Duration::from_millis(200),
            "the broker notices the requester is gone",
            || {
                let replier = replier.clone();
                let reply = reply.clone();
                async move {
                    match replier.send(reply).await {
                        Err(e)
                            if matches!(
                                e.downcast_ref::<rmq_producer::Error>()
                                    .map(rmq_producer::Error::inner),
                                Some(rmq_producer::Error::ReplyNotDelivered { .. })
                            ) =>
                        {
                            Ok(e)
                        }
                        other => Err(other.map(|r| r.msg_id)),
                    }
                }
            },
        )
        .await;
        assert!(!e.is_retryable(), "{e:?}");
        assert!(
            rmq_protocol::ErrorChain(&e)
                .to_string()
                .contains("not delivered"),
            "{e}"
        );
        replier.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_and_rmq_answer_each_others_requests() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let classpath = java_peer::classpath_for(&env).await;
        let home = tempfile::tempdir().expect("temp dir");

        // An rmq request, a Java replier.
        let topic = env.topic("request_java", 2).await;
        let group = rmq_testkit::unique_name("java_replier_cg");
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqbench.FeaturePeer",
            &["replier", env.namesrv(), &topic, &group],
            home.path(),
        );
        java.wait_for(Duration::from_secs(60), "the Java replier", |l| {
            l.iter().any(|l| l == "READY")
        })
        .await;
        let requester = env.producer().await;
        let reply = requester
            .request(Message::new(&topic, "ping"), REPLY_TIMEOUT)
            .await
            .expect("the Java replier's reply");
        assert_eq!(reply.body.as_ref(), b"java reply to ping");
        let cid = reply
            .property(property::CORRELATION_ID)
            .expect("correlation id")
            .to_owned();
        java.wait_for(Duration::from_secs(10), "the Java replier's line", |l| {
            !events(l, "REPLIED").is_empty()
        })
        .await;
        assert_eq!(events(&java.lines(), "REPLIED")[0][1], cid);
        java.finish(Duration::from_secs(20)).await;
        requester.shutdown().await.expect("producer shutdown");

        // A Java request, an rmq replier.
        let topic = env.topic("request_from_java", 2).await;
        let (replier, reply_producer) = rmq_replier(&env, &topic).await;
        let group = rmq_testkit::unique_name("java_requester_pg");
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqbench.FeaturePeer",
            &["request", env.namesrv(), &topic, &group, "hello", "30000"],
            home.path(),
        );
        java.wait_for(Duration::from_secs(60), "the Java request", |l| {
            l.iter()
                .any(|l| l.starts_with("REPLY ") || l.starts_with("ERROR "))
        })
        .await;
        let lines = java.lines();
        let reply = events(&lines, "REPLY");
        assert_eq!(reply.len(), 1, "{lines:?}");
        assert_eq!(reply[0][2..].join(" "), "rmq reply to hello", "{lines:?}");
        java.finish(Duration::from_secs(10)).await;
        replier.shutdown().await.expect("replier shutdown");
        reply_producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
