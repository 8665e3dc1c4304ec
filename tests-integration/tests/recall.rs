//! Recall of timer messages (`Producer::recall`, RocketMQ 5.3.2+; the local 5.x broker has
//! `recallMessageEnable=true`): the send result of a timer message carries a recall handle; a
//! recalled message is never delivered; a recall after the delivery time, with a bad handle, of
//! another topic, or while recall is turned off on the broker is a typed error; the official Java
//! client (`bench/peers/java` `rmqbench.FeaturePeer`) recalls what rmq sent and the reverse. A
//! 4.9.x broker has no recall: the producer refuses with a typed "needs RocketMQ V5_3_2" error.

use std::time::{Duration, SystemTime};

use rmq_client_core::now_ms;
use rmq_producer::{Message, RecallError, RecallHandle};
use rmq_tests_integration::features::{
    assert_needs_5x, events, forwarding_consumer, is_4x, until_body, update_broker_config,
};
use rmq_tests_integration::java_peer::{self, JavaProcess};
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

/// The tests of this file one at a time: one of them turns recall off on the broker for a moment.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The refusal inside a recall's error.
fn refusal(e: &rmq_error::Error) -> &RecallError {
    match e
        .downcast_ref::<rmq_producer::Error>()
        .map(rmq_producer::Error::inner)
    {
        Some(rmq_producer::Error::Recall(r)) => r,
        _ => panic!("not a recall refusal: {e:?}"),
    }
}

/// On 4.9.x: a recall (with a handle as a 5.x broker would make it) is refused before sending.
async fn refused_on_4x(env: &Env, topic: &str) {
    let producer = env.producer().await;
    let handle = RecallHandle {
        topic: topic.to_owned(),
        broker_name: env.broker.broker_name.clone(),
        timestamp: (now_ms() + 60_000).to_string(),
        message_id: "7F00000100002A9F0000000000000010".into(),
    }
    .encode();
    let e = producer
        .recall(topic, &handle)
        .await
        .expect_err("a 4.9.x broker has no recall");
    assert_needs_5x(&e, "recalling messages", "V5_3_2");
    producer.shutdown().await.expect("producer shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recalled_timer_message_is_never_delivered() {
    within(TEST_TIMEOUT, async {
        let _one = ONE_AT_A_TIME.lock().await;
        let env = Env::new().await;
        let topic = env.topic("recall", 2).await;
        if is_4x(&env) {
            refused_on_4x(&env, &topic).await;
            return;
        }
        let producer = env.producer().await;
        let (consumer, mut rx) = forwarding_consumer(env.namesrv(), "recall_cg", &topic).await;

        // Two messages due at the same time, one recalled; a marker due a second later.
        let at = SystemTime::now() + Duration::from_secs(3);
        let send = |body: &'static str, at: SystemTime| {
            let producer = producer.clone();
            let msg = Message::new(&topic, body).deliver_at(at);
            async move { producer.send(msg).await.expect("timer message sent") }
        };
        let recalled = send("recalled", at).await;
        let kept = send("kept", at).await;
        send("marker", at + Duration::from_secs(1)).await;
        let handle = recalled
            .recall_handle
            .clone()
            .expect("a 5.3.2+ broker answers a recall handle for a timer message");
        let decoded = RecallHandle::decode(&handle).expect("the broker's handle decodes");
        assert_eq!(decoded.topic, topic);
        assert_eq!(decoded.broker_name, env.broker.broker_name);
        assert_eq!(decoded.message_id, recalled.msg_id);
        let plain = producer
            .send(Message::new(&topic, "plain"))
            .await
            .expect("plain message sent");
        assert_eq!(plain.recall_handle, None, "only timer messages have one");

        // Refused before anything is sent.
        let e = producer
            .recall(&topic, "not-a-handle")
            .await
            .expect_err("not a handle");
        assert_eq!(e.kind(), rmq_error::ErrorKind::InvalidArgument, "{e:?}");
        assert!(
            matches!(refusal(&e), RecallError::InvalidHandle { .. }),
            "{e:?}"
        );
        let e = producer
            .recall(&format!("{topic}_other"), &handle)
            .await
            .expect_err("the handle is of another topic");
        assert!(
            matches!(refusal(&e), RecallError::TopicMismatch { .. }),
            "{e:?}"
        );

        let id = producer.recall(&topic, &handle).await.expect("recalled");
        assert_eq!(id, recalled.msg_id);

        // The kept message and the marker come; the recalled one never does.
        let seen = until_body(&mut rx, "marker", Duration::from_secs(30)).await;
        let bodies: Vec<&[u8]> = seen.iter().map(|m| m.body.as_ref()).collect();
        assert!(bodies.contains(&b"kept".as_slice()), "{bodies:?}");
        assert!(!bodies.contains(&b"recalled".as_slice()), "{bodies:?}");

        // Too late: delivered already.
        let e = producer
            .recall(&topic, kept.recall_handle.as_deref().expect("a handle"))
            .await
            .expect_err("delivered already");
        assert!(
            matches!(refusal(&e), RecallError::Delivered { .. }),
            "{e:?}"
        );
        assert!(!e.is_retryable());

        // Recall turned off on the broker.
        let later = send("later", SystemTime::now() + Duration::from_secs(120)).await;
        let later_handle = later.recall_handle.expect("a handle");
        update_broker_config(&env, "recallMessageEnable", "false").await;
        let off = producer.recall(&topic, &later_handle).await;
        update_broker_config(&env, "recallMessageEnable", "true").await;
        let e = off.expect_err("recall is off");
        assert!(matches!(refusal(&e), RecallError::Disabled { .. }), "{e:?}");
        assert_eq!(e.kind(), rmq_error::ErrorKind::Unsupported, "{e:?}");
        producer
            .recall(&topic, &later_handle)
            .await
            .expect("recalled once recall is on again");

        consumer.shutdown().await.expect("consumer shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_recalls_what_rmq_sent_and_the_reverse() {
    within(TEST_TIMEOUT, async {
        let _one = ONE_AT_A_TIME.lock().await;
        let env = Env::new().await;
        let topic = env.topic("recall_java", 2).await;
        if is_4x(&env) {
            // The Java client of 4.9.x has no recall either.
            refused_on_4x(&env, &topic).await;
            return;
        }
        let classpath = java_peer::classpath_for(&env).await;
        let producer = env.producer().await;
        let (consumer, mut rx) = forwarding_consumer(env.namesrv(), "recall_java_cg", &topic).await;
        let home = tempfile::tempdir().expect("temp dir");
        let group = rmq_testkit::unique_name("recall_java_pg");
        let peer = |command: &str, rest: &[&str]| {
            let mut args = vec![command, env.namesrv(), topic.as_str(), group.as_str()];
            args.extend_from_slice(rest);
            JavaProcess::spawn(&classpath, "rmqbench.FeaturePeer", &args, home.path())
        };

        // rmq sends, Java recalls (the Java peer is started first: a JVM takes seconds).
        let mut java = peer("recall", &[]);
        java.wait_for(Duration::from_secs(60), "the Java producer", |l| {
            l.iter().any(|l| l == "READY")
        })
        .await;
        let rmq_at = SystemTime::now() + Duration::from_secs(10);
        let sent = producer
            .send(Message::new(&topic, "rmq-sent").deliver_at(rmq_at))
            .await
            .expect("timer message sent");
        java.send_line(sent.recall_handle.as_deref().expect("a handle"))
            .await;
        java.wait_for(Duration::from_secs(30), "the Java recall", |l| {
            l.iter()
                .any(|l| l.starts_with("RECALLED ") || l.starts_with("ERROR "))
        })
        .await;
        let lines = java.lines();
        assert_eq!(
            events(&lines, "RECALLED"),
            [vec!["RECALLED".to_owned(), sent.msg_id.clone()]],
            "{lines:?}"
        );
        java.finish(Duration::from_secs(10)).await;

        // Java sends (due in 10 s), rmq recalls.
        let mut java = peer("timer", &["java-sent", "10000"]);
        java.wait_for(Duration::from_secs(60), "the Java timer send", |l| {
            l.iter().any(|l| l.starts_with("SENT "))
        })
        .await;
        let sent_by_java = events(&java.lines(), "SENT").remove(0);
        let (java_id, java_handle) = (&sent_by_java[1], &sent_by_java[3]);
        assert_ne!(java_handle, "-", "the Java send result has a recall handle");
        let id = producer
            .recall(&topic, java_handle)
            .await
            .expect("rmq recalls what Java sent");
        assert_eq!(&id, java_id);
        java.finish(Duration::from_secs(10)).await;

        // Neither comes; a marker due a second after both does.
        let java_due = RecallHandle::decode(java_handle)
            .ok()
            .and_then(|h| h.deliver_time_ms())
            .and_then(|ms| u64::try_from(ms).ok())
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
            .expect("the handle's delivery time");
        let marker_at = rmq_at.max(java_due) + Duration::from_secs(1);
        producer
            .send(Message::new(&topic, "marker").deliver_at(marker_at))
            .await
            .expect("marker sent");
        let seen = until_body(&mut rx, "marker", Duration::from_secs(60)).await;
        assert_eq!(seen.len(), 1, "only the marker: {seen:?}");

        consumer.shutdown().await.expect("consumer shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
