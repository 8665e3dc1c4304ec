//! Lite topics, producer side (`Message::with_lite_topic`, RocketMQ 5.5+; the local 5.x broker
//! has `enableLmq=true` and `enableMultiDispatch=true`): a message sent to a `LITE` parent topic
//! with a lite topic is stored in the parent with its `__LITE_TOPIC` and dispatched to the lite
//! topic's own light message queue (`%LMQ%$<parent>$<lite topic>`), where it is read back; a bad
//! lite topic name is refused before sending. A 4.9.x broker has no lite topics: the producer
//! refuses with a typed "needs RocketMQ V5_5_0" error. (Consuming lite topics is the lite
//! consumers'.)

use std::time::Duration;

use rmq_producer::{Message, UnsentExt};
use rmq_protocol::message::property;
use rmq_tests_integration::features::{assert_needs_5x, is_4x};
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lite_messages_reach_their_light_queue() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let producer = env.producer().await;

        // Refused before sending, on any broker: the proxy's name rule.
        let plain = env.topic("lite_bad", 1).await;
        for bad in ["with space", "a/b", &"x".repeat(65)] {
            let e = producer
                .send(Message::new(&plain, "x").with_lite_topic(bad))
                .await
                .expect_err("a bad lite topic name");
            assert_eq!(
                e.kind(),
                rmq_error::ErrorKind::InvalidArgument,
                "{bad}: {e:?}"
            );
            assert!(
                rmq_protocol::ErrorChain(&e)
                    .to_string()
                    .contains("lite topic"),
                "{e}"
            );
            assert!(e.into_message().is_some(), "handed back");
        }

        if is_4x(&env) {
            let e = producer
                .send(Message::new(&plain, "x").with_lite_topic("order-1"))
                .await
                .expect_err("a 4.9.x broker has no lite topics");
            assert_needs_5x(&e, "lite topics", "V5_5_0");
            producer.shutdown().await.expect("producer shutdown");
            return;
        }

        let parent = rmq_testkit::grpc::typed_topic("lite", "LITE").await;
        let lite = rmq_testkit::unique_name("order");
        let mut ids = Vec::new();
        for i in 0..3 {
            let r = producer
                .send(Message::new(&parent, format!("lite {i}")).with_lite_topic(lite.as_str()))
                .await
                .expect("lite message sent");
            ids.push(r.msg_id);
        }
        let other = producer
            .send(Message::new(&parent, "other").with_lite_topic("other-lite"))
            .await
            .expect("lite message sent");

        // In the parent, with the lite topic and the light queue it went to.
        let lmq = format!("%LMQ%${parent}${lite}");
        let mut stored = Vec::new();
        for q in 0..4 {
            stored.extend(env.pull_all(&parent, q).await);
        }
        for id in &ids {
            let m = stored
                .iter()
                .find(|m| &m.msg_id == id)
                .unwrap_or_else(|| panic!("{id} not in the parent: {stored:?}"));
            assert_eq!(m.lite_topic(), Some(lite.as_str()));
            assert_eq!(
                m.property(property::INNER_MULTI_DISPATCH),
                Some(lmq.as_str())
            );
        }

        // In the light queue: this lite topic's messages, in order, and no other.
        let in_lmq = env
            .pull_queue(
                &env.broker.broker_addr,
                &lmq,
                0,
                ids.len(),
                Duration::from_secs(30),
            )
            .await;
        let got: Vec<&str> = in_lmq.iter().map(|m| m.msg_id.as_str()).collect();
        assert_eq!(
            got,
            ids.iter().map(String::as_str).collect::<Vec<_>>(),
            "{in_lmq:?}"
        );
        assert!(!got.contains(&other.msg_id.as_str()));
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
