//! Delivery-time (timer) messages: `Message::deliver_at` / `deliver_after`. A 5.x broker delivers
//! them no earlier than asked and within 1 s after; a 4.9.x broker has no timer, so the producer
//! refuses the send with a typed error (it would otherwise be delivered at once).

use std::time::{Duration, SystemTime};

use rmq_consumer_push::{ConsumeResult, listener_fn};
use rmq_producer::{Message, UnsentExt};
use rmq_tests_integration::consumer::ConsumerSpec;
use rmq_tests_integration::{Env, TEST_TIMEOUT, within};

/// How late after the asked time a delivery may reach the listener.
const LATE: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_time_is_honoured_on_5x_and_refused_on_4x() {
    within(TEST_TIMEOUT, async {
        const N: usize = 5;
        let env = Env::new().await;
        let topic = env.topic("deliver_at", 2).await;
        let producer = env.producer().await;

        if env.broker.major_version() == Some(4) {
            let e = producer
                .send(Message::new(&topic, "later").deliver_after(Duration::from_secs(2)))
                .await
                .expect_err("a 4.9.x broker has no timer messages");
            assert_eq!(e.kind(), rmq_error::ErrorKind::Unsupported, "typed: {e:?}");
            assert!(
                e.downcast_ref::<rmq_producer::Error>()
                    .is_some_and(rmq_producer::Error::is_unsupported),
                "typed: {e:?}"
            );
            assert!(!e.is_retryable());
            let text = rmq_protocol::ErrorChain(&e).to_string();
            assert!(text.contains("does not support delivery-time"), "{text}");
            assert!(text.contains("V4_9"), "names the broker's version: {text}");
            assert!(
                e.into_message().is_some_and(|m| m.is_timer()),
                "handed back"
            );
            producer.shutdown().await.expect("producer shutdown");
            return;
        }

        let group = rmq_testkit::unique_name("deliver_at_cg");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let consumer = ConsumerSpec::new(env.namesrv(), &group, &topic)
            .builder()
            .start(listener_fn(move |msgs, _ctx| {
                let now = SystemTime::now();
                for m in msgs.iter() {
                    let _ = tx.send((m.message.clone(), now));
                }
                Box::pin(async { ConsumeResult::Success })
            }))
            .await
            .expect("consumer starts");

        // Staggered times over 2..4 s from now, sent at once: even ones with deliver_at, odd ones
        // with deliver_after.
        let start = SystemTime::now();
        let mut asked = Vec::new();
        for i in 0..N {
            let at = start + Duration::from_millis(2_000 + 500 * i as u64);
            let msg = if i % 2 == 0 {
                Message::new(&topic, i.to_string()).deliver_at(at)
            } else {
                let after = at.duration_since(SystemTime::now()).unwrap_or_default();
                Message::new(&topic, i.to_string()).deliver_after(after)
            };
            asked.push(msg.deliver_time().expect("a timer message"));
            producer
                .send(msg)
                .await
                .expect("a 5.x broker takes timer messages");
        }
        for _ in 0..N {
            let (msg, seen) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .expect("every timer message is delivered within 30 s")
                .expect("listener alive");
            let i: usize = std::str::from_utf8(&msg.body).unwrap().parse().unwrap();
            let at = asked[i];
            assert!(
                seen >= at,
                "message {i} delivered {:?} early",
                at.duration_since(seen)
            );
            let late = seen.duration_since(at).unwrap_or_default();
            println!("message {i}: delivered {late:?} after the asked time");
            assert!(
                late <= LATE,
                "message {i} delivered {late:?} after the asked time"
            );
        }
        consumer.shutdown().await.expect("clean shutdown");
        producer.shutdown().await.expect("producer shutdown");
    })
    .await;
}
