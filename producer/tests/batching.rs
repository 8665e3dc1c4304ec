//! Auto-batching (`ProducerBuilder::batching`) against the real broker:
//! concurrent sends grouped into SEND_BATCH_MESSAGE, each caller answered
//! with its own message id and offset, every message stored exactly once.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::future::join_all;
use rmq_producer::{Message, SendStatus};
use rmq_testkit::env::Env;
use rmq_testkit::wait::{LONG_TEST_TIMEOUT, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sends_are_batched_and_each_caller_gets_its_own_result() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("batching", 4).await;
        let p = env
            .producer_with(|b| b.batching(Duration::from_millis(20), 32, 256 * 1024))
            .await;
        let n = 300usize;
        let sends = (0..n).map(|i| {
            let p = p.clone();
            let msg = Message::new(&topic, format!("batched-{i}")).with_keys([format!("k{i}")]);
            async move { (i, p.send(msg).await) }
        });
        let mut by_id: HashMap<String, (usize, String, i32, i64)> = HashMap::new();
        let mut positions = HashSet::new();
        for (i, r) in join_all(sends).await {
            let r = r.unwrap_or_else(|e| panic!("send {i}: {e}"));
            assert_eq!(r.status, SendStatus::SendOk);
            assert_eq!(r.message_queue.topic, topic);
            assert!(
                positions.insert((r.message_queue.queue_id, r.queue_offset)),
                "two callers were answered with queue {} offset {}",
                r.message_queue.queue_id,
                r.queue_offset
            );
            let prev = by_id.insert(
                r.msg_id.clone(),
                (
                    i,
                    r.offset_msg_id.clone(),
                    r.message_queue.queue_id,
                    r.queue_offset,
                ),
            );
            assert!(prev.is_none(), "message id {} answered twice", r.msg_id);
        }
        assert_eq!(by_id.len(), n);

        let stored = env.pull_topic(&topic, 4, n).await;
        assert_eq!(stored.len(), n, "stored messages");
        let mut seen = HashSet::new();
        for m in &stored {
            assert!(seen.insert(m.msg_id.clone()), "{} stored twice", m.msg_id);
            let (i, offset_id, queue_id, offset) = by_id
                .get(&m.msg_id)
                .unwrap_or_else(|| panic!("stored {} was answered to no caller", m.msg_id));
            assert_eq!(m.message.body.as_ref(), format!("batched-{i}").as_bytes());
            assert_eq!(m.queue_id, *queue_id, "queue of message {i}");
            assert_eq!(m.queue_offset, *offset, "queue offset of message {i}");
            assert_eq!(&m.offset_msg_id, offset_id, "offset id of message {i}");
            assert_eq!(m.message.keys().collect::<Vec<_>>(), vec![format!("k{i}")]);
        }
        p.shutdown().await.expect("producer shutdown");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_send_waits_at_most_the_linger_and_shutdown_flushes() {
    within(LONG_TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("batching_lone", 1).await;
        let p = env
            .producer_with(|b| b.batching(Duration::from_millis(50), 64, 256 * 1024))
            .await;
        let r = p
            .send(Message::new(&topic, "alone"))
            .await
            .expect("a lone batched send");
        assert_eq!(r.status, SendStatus::SendOk);
        // A send pending at shutdown is flushed, not dropped.
        let pending = {
            let p = p.clone();
            let msg = Message::new(&topic, "at shutdown");
            tokio::spawn(async move { p.send(msg).await })
        };
        tokio::task::yield_now().await;
        p.shutdown().await.expect("producer shutdown");
        let outcome = pending.await.expect("send task");
        let stored = env.pull_topic(&topic, 1, 2).await;
        match outcome {
            Ok(_) => assert_eq!(stored.len(), 2, "the flushed send is stored"),
            // Refused because shutdown came first: then it must not be stored.
            Err(e) => {
                assert!(
                    matches!(
                        e.downcast_ref::<rmq_producer::Error>()
                            .map(rmq_producer::Error::inner),
                        Some(rmq_producer::Error::Shutdown)
                    ),
                    "unexpected error: {e}"
                );
                assert_eq!(stored.len(), 1);
            }
        }
    })
    .await;
}
