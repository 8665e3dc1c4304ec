//! Paused-time tests of the pop engine's settle calls.

use super::*;

#[tokio::test(start_paused = true)]
async fn acks_go_per_checkpoint_in_one_batch_or_one_by_one_without_batches() {
    let hs: Vec<PopHandle> = [10, 12, 13]
        .into_iter()
        .map(|o| PopHandle {
            topic: "T".into(),
            ck: ck(o, 10),
        })
        .collect();
    let refs: Vec<&PopHandle> = hs.iter().collect();
    let script = Script::default();
    assert!(ack_all(&script, "G", &refs).await.is_empty());
    assert_eq!(script.calls(), [Call::BatchAck(vec![(10, vec![0, 2, 3])])]);
    assert!(ack_all(&script, "G", &refs[..1]).await.is_empty());
    assert_eq!(script.calls(), [Call::Ack(10)]);
    let old = Script {
        no_batch: true,
        ..Script::default()
    };
    assert!(ack_all(&old, "G", &refs).await.is_empty());
    assert_eq!(old.calls(), [Call::Ack(10), Call::Ack(12), Call::Ack(13)]);
    let bad = PopHandle {
        topic: "T".into(),
        ck: ck(5, 10),
    };
    let failed = ack_all(&script, "G", &[&hs[0], &bad]).await;
    assert!(matches!(
        failed.as_slice(),
        [AckFailure {
            count: 2,
            error: PopCallError::BeforeCheckpoint { offset: 5, .. }
        }]
    ));
}

#[tokio::test(start_paused = true)]
async fn the_acker_batches_what_is_queued_and_drains_when_dropped() {
    let script = Arc::new(Script::default());
    let tasks = TaskTracker::new();
    let reported = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = reported.clone();
    let report: AckReport = Arc::new(move |ok, failed| {
        seen.lock().expect("report lock").push((ok, failed));
    });
    let acker = PopAcker::spawn(script.clone(), "G".into(), &tasks, report);
    for o in [10, 11, 12] {
        assert!(
            acker
                .ack(PopHandle {
                    topic: "T".into(),
                    ck: ck(o, 10),
                })
                .await
        );
    }
    drop(acker);
    tasks.close();
    tasks.wait().await;
    assert_eq!(script.calls(), [Call::BatchAck(vec![(10, vec![0, 1, 2])])]);
    assert_eq!(
        *reported.lock().expect("report lock"),
        [(3, 0)],
        "one batch, every ack taken"
    );
}

#[tokio::test(start_paused = true)]
async fn a_change_renews_the_checkpoint_for_the_message_alone() {
    let script = Script::default();
    let h = PopHandle {
        topic: "T".into(),
        ck: ck(12, 10),
    };
    let renewed = change_invisible(&script, "G", &h, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(script.calls(), [Call::Change(12, 30_000)]);
    assert_eq!(
        (
            renewed.ck.ck_queue_offset,
            renewed.ck.pop_time,
            renewed.ck.revive_qid
        ),
        (12, 500, 2)
    );
}

#[test]
fn a_message_to_consume_again_waits_its_next_delay_level() {
    assert_eq!(retry_delay(0, 0), Duration::from_secs(10));
    assert_eq!(retry_delay(0, 2), Duration::from_secs(60));
    assert_eq!(retry_delay(1, 5), Duration::from_secs(1));
    assert_eq!(retry_delay(40, 0), Duration::from_secs(7200));
}

#[test]
fn the_dlq_header_names_the_original_message() {
    let mut msg = popped_msg("T", 10, "a", 3);
    msg.msg_id = "m1".into();
    msg.commit_log_offset = 77;
    let h = dlq_header("G", 16, &msg, "T", "b");
    assert_eq!(
        (
            h.offset,
            h.delay_level,
            h.origin_msg_id.as_deref(),
            h.origin_topic.as_deref()
        ),
        (77, -1, Some("m1"), Some("T"))
    );
    assert_eq!(
        (h.max_reconsume_times, h.broker_name.as_deref()),
        (Some(16), Some("b"))
    );
    let _ = RequestCode::POP_MESSAGE;
}
