//! The pop calls against the real broker: POP_MESSAGE with its extra info,
//! ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME (5.x), and
//! the refusal of a 4.x broker.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use bytes::Bytes;
use rmq_client_core::{ClientInstance, PopStatus, is_pop_unsupported, now_ms};
use rmq_protocol::MessageExt;
use rmq_protocol::body::{BatchAck, BatchAckMessageRequestBody};
use rmq_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, PopMessageRequestHeader,
};
use rmq_protocol::pop::{ExtraInfo, POP_CK, pop_retry_origin};
use rmq_testkit::client::{create_topic, instance, send_header, within};

fn pop_header(
    group: &str,
    topic: &str,
    invisible_ms: i64,
    poll_ms: i64,
) -> PopMessageRequestHeader {
    PopMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id: -1,
        max_msg_nums: 32,
        invisible_time: invisible_ms,
        poll_time: poll_ms,
        born_time: now_ms(),
        init_mode: 0,
        exp_type: Some("TAG".into()),
        exp: Some("*".into()),
        order: Some(false),
        attempt_id: None,
        broker_name: None,
    }
}

fn ck(m: &MessageExt) -> ExtraInfo {
    ExtraInfo::parse(m.property(POP_CK).expect("popped messages carry POP_CK")).unwrap()
}

fn body(m: &MessageExt) -> String {
    String::from_utf8_lossy(&m.message.body).into_owned()
}

/// Pops until `want` messages came (or `secs` passed).
async fn pop_n(
    i: &ClientInstance,
    addr: &str,
    broker: &str,
    group: &str,
    topic: &str,
    invisible_ms: i64,
    want: usize,
) -> Vec<MessageExt> {
    let mut got = Vec::new();
    while got.len() < want {
        let r = i
            .pop_message(
                addr,
                broker,
                pop_header(group, topic, invisible_ms, 2_000),
                None,
            )
            .await
            .unwrap();
        got.extend(r.messages);
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_ack_batch_ack_change_invisible() {
    within(120, "pop calls test", async {
        let broker = rmq_testkit::broker().await;
        let addr = broker.broker_addr.as_str();
        let name = broker.broker_name.as_str();
        let i = instance("calls-pop").await;
        let topic = rmq_testkit::unique_name("pop");
        let group = rmq_testkit::unique_name("GID_pop");
        create_topic(&i, &topic, 2).await;

        if broker.major_version() == Some(4) {
            let e = i
                .pop_message(addr, name, pop_header(&group, &topic, 10_000, 0), None)
                .await
                .unwrap_err();
            assert!(is_pop_unsupported(&e), "{e:?}");
            return;
        }
        for n in 0..3 {
            let header = send_header(&topic, n % 2, &format!("UNIQ-pop-{n}"), name);
            i.send_message(
                addr,
                name,
                header,
                Bytes::from(format!("m{n}")),
                Duration::from_secs(3),
            )
            .await
            .unwrap();
        }
        let popped = pop_n(&i, addr, name, &group, &topic, 3_000, 3).await;
        assert_eq!(popped.len(), 3);
        let by_body: HashMap<String, &MessageExt> = popped.iter().map(|m| (body(m), m)).collect();
        for m in &popped {
            let c = ck(m);
            assert_eq!(c.broker_name, name);
            assert_eq!(c.queue_id, m.queue_id);
            assert_eq!(c.queue_offset, m.queue_offset);
            assert_eq!(c.invisible_time, 3_000);
            assert_eq!(m.reconsume_times, 0);
        }
        // m0: ACK_MESSAGE; m1: BATCH_ACK_MESSAGE; m2: hidden longer, then
        // left to come back.
        let m0 = by_body["m0"];
        let c0 = ck(m0);
        i.ack_message(
            addr,
            AckMessageRequestHeader {
                consumer_group: group.clone(),
                topic: c0.real_topic(&topic, &group),
                queue_id: c0.queue_id,
                extra_info: c0.to_string(),
                offset: c0.queue_offset,
                broker_name: Some(name.into()),
            },
        )
        .await
        .unwrap();
        let c1 = ck(by_body["m1"]);
        let bits: BTreeSet<u32> = [u32::try_from(c1.queue_offset - c1.ck_queue_offset).unwrap()]
            .into_iter()
            .collect();
        let batch = BatchAckMessageRequestBody {
            broker_name: name.into(),
            acks: vec![BatchAck {
                consumer_group: group.clone(),
                topic: topic.clone(),
                retry: c1.retry.as_str().into(),
                start_offset: c1.ck_queue_offset,
                queue_id: c1.queue_id,
                revive_queue_id: c1.revive_qid,
                pop_time: c1.pop_time,
                invisible_time: c1.invisible_time,
                bit_set: bits,
            }],
        };
        i.batch_ack_message(addr, &batch).await.unwrap();
        let c2 = ck(by_body["m2"]);
        let changed = i
            .change_invisible_time(
                addr,
                ChangeInvisibleTimeRequestHeader {
                    consumer_group: group.clone(),
                    topic: c2.real_topic(&topic, &group),
                    queue_id: c2.queue_id,
                    extra_info: c2.to_string(),
                    offset: c2.queue_offset,
                    invisible_time: 4_000,
                    broker_name: Some(name.into()),
                },
            )
            .await
            .unwrap();
        assert_eq!(changed.invisible_time, 4_000);
        assert!(changed.pop_time >= c2.pop_time);
        let changed_at = now_ms();

        // Only m2 comes back, from the retry topic, with reconsume times 1,
        // not before its new invisible time.
        let again = pop_n(&i, addr, name, &group, &topic, 10_000, 1).await;
        let back_after = now_ms() - changed_at;
        assert_eq!(
            again.len(),
            1,
            "{:?}",
            again.iter().map(body).collect::<Vec<_>>()
        );
        let m = &again[0];
        assert_eq!(body(m), "m2");
        assert_eq!(m.reconsume_times, 1);
        let shown = pop_retry_origin(&m.topic, &group).unwrap_or(&m.topic);
        assert_eq!(shown, topic);
        assert!(back_after >= 3_900, "came back after {back_after} ms");
        let c = ck(m);
        assert_ne!(c.retry, rmq_protocol::pop::RetryFlag::Normal);
        i.ack_message(
            addr,
            AckMessageRequestHeader {
                consumer_group: group.clone(),
                topic: c.real_topic(&topic, &group),
                queue_id: c.queue_id,
                extra_info: c.to_string(),
                offset: c.queue_offset,
                broker_name: Some(name.into()),
            },
        )
        .await
        .unwrap();
        let none = i
            .pop_message(addr, name, pop_header(&group, &topic, 10_000, 5_000), None)
            .await
            .unwrap();
        assert_eq!(
            none.status,
            PopStatus::NoNewMsg,
            "{:?}",
            none.messages.iter().map(body).collect::<Vec<_>>()
        );
        eprintln!("m2 came back {back_after} ms after its change to 4000 ms");
    })
    .await;
}
