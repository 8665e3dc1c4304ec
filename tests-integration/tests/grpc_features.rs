//! The RocketMQ 5.3–5.5 producer features through the 5.5 proxy (`ProducerBuilder::endpoint`):
//! recall (`RecallMessage`, the proxy recalls from `DELAY` topics), priority and lite-topic
//! messages, the topic's message type checked before sending (the route's
//! `accept_message_types`), and messages that look like the official Java gRPC client's
//! (`bench/peers/java-grpc` `rmqgrpc.GrpcPeer`): version-1 ids and the host name as born host.
//! What the proxy stored is read back by remoting pulls of the same broker. The proxy is
//! `RMQ_PROXY_ENDPOINT`; 4.9.x has no proxy, so these are `#[ignore]`d and `scripts/test.sh`
//! runs them on 5.x.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use rmq_producer::{Message, MessageExt, Producer, RecallError, RecallHandle, UnsentExt};
use rmq_protocol::message::{is_message_id_v1, property};
use rmq_testkit::grpc::{fielded_message, grpc_producer, remoting_producer, typed_topic};
use rmq_tests_integration::features::{events, forwarding_consumer, until_body};
use rmq_tests_integration::java_peer::{self, JavaProcess};
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

/// The message `id` as stored in `topic` (any of its 4 queues), read by remoting pulls.
async fn stored(env: &Env, topic: &str, id: &str) -> MessageExt {
    poll_until(
        Duration::from_secs(30),
        Duration::from_millis(100),
        &format!("{id} stored in {topic}"),
        || async {
            for q in 0..4 {
                if let Some(m) = env
                    .pull_all(topic, q)
                    .await
                    .into_iter()
                    .find(|m| m.msg_id == id)
                {
                    return Ok(m);
                }
            }
            Err(())
        },
    )
    .await
}

/// The producer error inside `e`.
fn inner(e: &rmq_error::Error) -> &rmq_producer::Error {
    e.downcast_ref::<rmq_producer::Error>()
        .map(rmq_producer::Error::inner)
        .unwrap_or_else(|| panic!("a producer error: {e:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn recall_through_the_proxy() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = typed_topic("grpc_recall", "DELAY").await;
        let producer = grpc_producer("grpc_recall_pg").await;
        let remoting = remoting_producer("grpc_recall_rpg").await;
        let (consumer, mut rx) = forwarding_consumer(env.namesrv(), "grpc_recall_cg", &topic).await;

        let at = SystemTime::now() + Duration::from_secs(3);
        let send = |body: &'static str, at: SystemTime| {
            let producer = producer.clone();
            let msg = Message::new(&topic, body).deliver_at(at);
            async move { producer.send(msg).await.expect("timer message sent") }
        };
        let recalled = send("recalled", at).await;
        let by_remoting = send("recalled-by-remoting", at).await;
        let kept = send("kept", at).await;
        send("marker", at + Duration::from_secs(1)).await;
        let handle = recalled
            .recall_handle
            .clone()
            .expect("the proxy answers a recall handle");
        assert_eq!(
            RecallHandle::decode(&handle).expect("decodes").message_id,
            recalled.msg_id
        );
        let id = producer.recall(&topic, &handle).await.expect("recalled");
        assert_eq!(id, recalled.msg_id);
        // A handle works from any client, over either transport.
        let id = remoting
            .recall(
                &topic,
                by_remoting.recall_handle.as_deref().expect("a handle"),
            )
            .await
            .expect("recalled over remoting");
        assert_eq!(id, by_remoting.msg_id);

        let seen = until_body(&mut rx, "marker", Duration::from_secs(30)).await;
        let bodies: BTreeSet<String> = seen
            .iter()
            .map(|m| String::from_utf8_lossy(&m.body).into_owned())
            .collect();
        assert_eq!(
            bodies,
            BTreeSet::from(["kept".to_owned(), "marker".to_owned()])
        );

        let e = producer
            .recall(&topic, kept.recall_handle.as_deref().expect("a handle"))
            .await
            .expect_err("delivered already");
        assert!(
            matches!(
                inner(&e),
                rmq_producer::Error::Recall(RecallError::Delivered { .. })
            ),
            "{e:?}"
        );
        let normal = typed_topic("grpc_recall_normal", "NORMAL").await;
        let e = producer
            .recall(&normal, &handle)
            .await
            .expect_err("the proxy recalls from DELAY topics only");
        assert!(
            matches!(
                inner(&e),
                rmq_producer::Error::Recall(RecallError::NotDelayTopic { .. })
            ),
            "{e:?}"
        );
        consumer.shutdown().await.expect("consumer shutdown");
        remoting.shutdown().await.expect("producer shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn priority_and_lite_topic_through_the_proxy() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let producer = grpc_producer("grpc_prio_pg").await;

        let topic = typed_topic("grpc_priority", "PRIORITY").await;
        let sent = producer
            .send(Message::new(&topic, "p2").with_priority(2))
            .await
            .expect("priority message sent");
        let m = stored(&env, &topic, &sent.msg_id).await;
        assert_eq!(m.queue_id, 2, "the broker stores priority 2 in queue 2");
        assert_eq!(m.priority(), Some(2));

        let parent = typed_topic("grpc_lite", "LITE").await;
        let lite = rmq_testkit::unique_name("order");
        let sent = producer
            .send(Message::new(&parent, "lite").with_lite_topic(lite.as_str()))
            .await
            .expect("lite message sent");
        let m = stored(&env, &parent, &sent.msg_id).await;
        assert_eq!(m.lite_topic(), Some(lite.as_str()));
        assert_eq!(
            m.property(property::INNER_MULTI_DISPATCH),
            Some(format!("%LMQ%${parent}${lite}").as_str())
        );
        let e = producer
            .send(Message::new(&parent, "x").with_lite_topic("not ok"))
            .await
            .expect_err("refused before sending");
        assert_eq!(e.kind(), rmq_error::ErrorKind::InvalidArgument, "{e:?}");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn messages_that_do_not_fit_the_topic_type_are_refused() {
    within(TEST_TIMEOUT, async {
        let producer = grpc_producer("grpc_types_pg").await;
        let later = SystemTime::now() + Duration::from_secs(60);
        let cases = [
            ("FIFO", Message::new("", "x").deliver_at(later), "DELAY"),
            ("TRANSACTION", Message::new("", "x"), "NORMAL"),
            ("NORMAL", Message::new("", "x").with_priority(1), "PRIORITY"),
            (
                "NORMAL",
                Message::new("", "x").with_lite_topic("l1"),
                "LITE",
            ),
            ("DELAY", Message::new("", "x").with_tags("t"), "NORMAL"),
        ];
        for (topic_type, mut msg, message_type) in cases {
            let topic = typed_topic("grpc_types", topic_type).await;
            msg.topic.clone_from(&topic);
            let e = producer
                .send(msg)
                .await
                .expect_err("refused before sending");
            assert_eq!(e.kind(), rmq_error::ErrorKind::InvalidArgument, "{e:?}");
            let text = rmq_protocol::ErrorChain(&e).to_string();
            assert!(
                text.contains(&format!("takes {topic_type} messages"))
                    && text.contains(&format!("this is a {message_type} message")),
                "{text}"
            );
            let attempts = match e.downcast_ref::<rmq_producer::Error>() {
                Some(rmq_producer::Error::Send { attempts, .. }) => *attempts,
                other => panic!("{other:?}"),
            };
            assert_eq!(attempts, 0, "refused before any SendMessage");
            assert!(e.into_message().is_some(), "handed back");
        }
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn messages_look_like_the_java_grpc_clients() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = typed_topic("grpc_fidelity", "NORMAL").await;
        let classpath = java_peer::grpc_classpath().await;
        let home = tempfile::tempdir().expect("temp dir");
        let mut java = JavaProcess::spawn(
            &classpath,
            "rmqgrpc.GrpcPeer",
            &["produce", &rmq_testkit::grpc::endpoint(), &topic, "1"],
            home.path(),
        );
        java.wait_for(Duration::from_secs(60), "the Java gRPC send", |l| {
            l.iter().any(|l| l == "DONE")
        })
        .await;
        let java_id = events(&java.lines(), "SENT")[0][1].clone();
        java.finish(Duration::from_secs(10)).await;
        let producer: Producer = grpc_producer("grpc_fidelity_pg").await;
        let sent = producer
            .send(fielded_message(&topic, "java grpc body", 0))
            .await
            .expect("sent");

        let from_java = stored(&env, &topic, &java_id).await;
        let from_rmq = stored(&env, &topic, &sent.msg_id).await;
        assert!(is_message_id_v1(&java_id), "{java_id}");
        assert!(
            is_message_id_v1(&sent.msg_id),
            "a version-1 id: {}",
            sent.msg_id
        );
        assert_eq!(
            from_rmq.property(property::BORN_HOST),
            from_java.property(property::BORN_HOST),
            "the host name as born host"
        );
        let host = from_rmq.property(property::BORN_HOST).expect("a born host");
        assert!(
            host.parse::<std::net::IpAddr>().is_err(),
            "a host name, not an address: {host}"
        );
        let names = |m: &MessageExt| -> BTreeSet<String> {
            m.properties.iter().map(|(k, _)| k.to_owned()).collect()
        };
        assert_eq!(names(&from_rmq), names(&from_java), "the same properties");
        assert_eq!(from_rmq.body, from_java.body);
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn request_reply_needs_remoting() {
    within(TEST_TIMEOUT, async {
        let topic = typed_topic("grpc_request", "NORMAL").await;
        let producer = grpc_producer("grpc_request_pg").await;
        let e = producer
            .request(Message::new(&topic, "q"), Duration::from_secs(3))
            .await
            .expect_err("the proxy has no reply push");
        assert_eq!(e.kind(), rmq_error::ErrorKind::Unsupported, "{e:?}");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
