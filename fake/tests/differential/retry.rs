//! Retry and dead-letter queue through rmq's push consumer: what each
//! delivery looks like (reconsume count, the queue it came from, the topic
//! shown, properties), what the DLQ holds; raw CONSUMER_SEND_MSG_BACK with a
//! negative and an explicit delay level, and for an offset that holds no
//! message.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_consumer_push::{ConsumeFrom, ConsumeResult, MaxReconsume, PushConsumer, listener_fn};
use rmq_producer::Message;
use rmq_protocol::header::ConsumerSendMsgBackRequestHeader;
use rmq_protocol::message::property;
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::obs;
use crate::support::{Labels, Obs, describe, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_and_dead_letters_look_alike() {
    let topic = rmq_testkit::unique_name("diff_retry");
    let group = rmq_testkit::unique_name("diff_retry_cg");
    run("retry", |t| {
        let (topic, group) = (topic.clone(), group.clone());
        async move {
            let mut o = Obs::default();
            let labels = Arc::new(Labels::default());
            t.topic(&topic, 2).await;
            let p = t.producer("diff_retry_pg").await;
            let mut offset_ids = BTreeMap::new();
            for (name, tag, q) in [
                ("once", "once", 0),
                ("always", "always", 1),
                ("fine", "fine", 0),
            ] {
                let r = p
                    .send_to_queue(
                        Message::new(&topic, name).with_tags(tag).with_keys([name]),
                        &t.mq(&topic, q),
                    )
                    .await
                    .unwrap();
                labels.add(&r.msg_id, name);
                labels.add(&r.offset_msg_id, format!("{name}@offset"));
                offset_ids.insert(name, r.offset_msg_id);
            }
            p.shutdown().await.expect("producer shutdown");

            let seen: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
            let changed = Arc::new(tokio::sync::Notify::new());
            let listener = {
                let (seen, changed, labels, group) =
                    (seen.clone(), changed.clone(), labels.clone(), group.clone());
                let t_broker = t.broker.clone();
                let started = t.started;
                let side = t.side;
                listener_fn(move |msgs, ctx| {
                    let mut fail = false;
                    {
                        let mut s = seen.lock().unwrap();
                        for m in msgs {
                            let name = labels.of(&m.msg_id);
                            // A stand-in target for describe(): only addresses and times.
                            let line = {
                                let fake_t = crate::support::DescribeCtx {
                                    broker: &t_broker,
                                    started,
                                    side,
                                };
                                fake_t.delivery(m, &ctx.queue().topic, &labels, &group)
                            };
                            s.entry(name).or_default().push(line);
                            let tag = m.tags().unwrap_or("");
                            fail |= tag == "always" || (tag == "once" && m.reconsume_times == 0);
                        }
                    }
                    changed.notify_waiters();
                    Box::pin(async move {
                        if fail {
                            ConsumeResult::ReconsumeLater
                        } else {
                            ConsumeResult::Success
                        }
                    })
                })
            };
            let c = PushConsumer::builder()
                .group(&group)
                .client_config(t.config("diff_retry_c"))
                .consume_from(ConsumeFrom::FirstOffset)
                .max_reconsume(MaxReconsume::Times(2))
                .subscribe(&topic, "*")
                .start(listener)
                .await
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let done = {
                    let s = seen.lock().unwrap();
                    s.get("once").map_or(0, Vec::len) >= 2
                        && s.get("always").map_or(0, Vec::len) >= 3
                        && s.contains_key("fine")
                };
                if done {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{:?}: deliveries {:?}",
                    t.side,
                    seen.lock().unwrap()
                );
                let _ = tokio::time::timeout(Duration::from_millis(200), changed.notified()).await;
            }
            let dlq = format!("%DLQ%{group}");
            let dead = t.pull_until(&dlq, 0, 1, Duration::from_secs(20)).await;
            // Nothing more comes: the always-failing message is dead.
            tokio::time::sleep(Duration::from_millis(1500)).await;
            c.shutdown().await.unwrap();
            for (name, ds) in seen.lock().unwrap().iter() {
                for (i, d) in ds.iter().enumerate() {
                    obs!(o, "{name} #{i}: {d}");
                }
            }
            for m in &dead {
                obs!(
                    o,
                    "dlq: {}",
                    describe(m, &t, &labels).replace(&group, "<g>")
                );
            }

            // Raw send-backs of "fine" (offset of its stored message).
            let fine = t
                .pull_all(&topic, 0)
                .await
                .into_iter()
                .find(|m| m.message.tags() == Some("fine"))
                .unwrap();
            for (name, level, offset) in [
                ("to dlq (level -1)", -1, fine.commit_log_offset),
                ("level 1", 1, fine.commit_log_offset),
                ("no such offset", 0, 1 << 40),
            ] {
                let h = ConsumerSendMsgBackRequestHeader {
                    offset,
                    group: group.clone(),
                    delay_level: level,
                    origin_msg_id: Some(fine.msg_id.clone()),
                    origin_topic: Some(topic.clone()),
                    unit_mode: Some(false),
                    max_reconsume_times: Some(2),
                    broker_name: None,
                };
                let a = t
                    .call(RemotingCommand::request(
                        RequestCode::CONSUMER_SEND_MSG_BACK,
                        &h,
                    ))
                    .await;
                let remark = a
                    .remark
                    .as_deref()
                    .unwrap_or("")
                    .split(',')
                    .next()
                    .unwrap_or("")
                    .to_owned();
                obs!(o, "send back {name}: code={} remark={remark:?}", a.code);
            }
            for m in t.pull_until(&dlq, 0, 2, Duration::from_secs(20)).await {
                obs!(
                    o,
                    "dlq after: {}",
                    describe(&m, &t, &labels).replace(&group, "<g>")
                );
            }
            let retry = format!("%RETRY%{group}");
            // The level-1 message arrives after its second; the retry queue
            // already holds the consumer's 3 (once 1, always 2).
            let msgs = t.pull_until(&retry, 0, 4, Duration::from_secs(20)).await;
            if let Some(last) = msgs.last() {
                let mut last = last.clone();
                last.message.remove_property(property::MIN_OFFSET);
                last.message.remove_property(property::MAX_OFFSET);
                obs!(
                    o,
                    "retry queue holds {}, last: {}",
                    msgs.len(),
                    describe(&last, &t, &labels).replace(&group, "<g>")
                );
            }
            let _ = offset_ids;
            t.shutdown().await;
            o
        }
    })
    .await;
}
