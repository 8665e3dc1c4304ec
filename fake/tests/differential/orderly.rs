//! Orderly consumption through rmq's push consumer: per-queue order, a
//! suspended queue redelivering the same message, the broker lock held
//! against another client, a message past its reconsume limit in the DLQ.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_consumer_push::{
    ConsumeFrom, MaxReconsume, OrderlyResult, PushConsumer, orderly_listener_fn,
};
use rmq_producer::{Message, select_by_hash};
use rmq_protocol::body::{LockBatchRequestBody, LockBatchResponseBody};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::obs;
use crate::support::{Labels, Obs, Target, describe, run};

async fn foreign_lock(t: &Target, group: &str, topic: &str) -> usize {
    let body = LockBatchRequestBody {
        client_id: "10.9.9.9@intruder".into(),
        consumer_group: group.into(),
        mq_set: (0..2).map(|q| t.mq(topic, q)).collect(),
        only_this_broker: false,
    };
    let cmd = RemotingCommand::new_request(RequestCode::LOCK_BATCH_MQ)
        .with_body(body.to_json_bytes().unwrap());
    let a = t.call(cmd).await;
    LockBatchResponseBody::decode(&a.body)
        .map(|b| b.lock_ok_mq_set.len())
        .unwrap_or(99)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orderly_consumption_goes_alike() {
    let topic = rmq_testkit::unique_name("diff_ord");
    let group = rmq_testkit::unique_name("diff_ord_cg");
    run("orderly", |t| {
        let (topic, group) = (topic.clone(), group.clone());
        async move {
            let mut o = Obs::default();
            t.topic(&topic, 2).await;
            let p = t.producer("diff_ord_pg").await;
            let labels = Labels::default();
            for key in ["k0", "k1", "k2", "k3"] {
                for seq in 0..3 {
                    let body = if key == "k2" && seq == 1 {
                        format!("{key}-poison")
                    } else {
                        format!("{key}-{seq}")
                    };
                    let r = p
                        .send_with_selector(
                            Message::new(&topic, body.clone()).with_keys([key]),
                            select_by_hash(key),
                        )
                        .await
                        .unwrap();
                    labels.add(&r.msg_id, body);
                }
            }
            p.shutdown().await.expect("producer shutdown");
            // queue id -> bodies with their reconsume counts, in delivery order
            let seen: Arc<Mutex<BTreeMap<i32, Vec<String>>>> = Arc::default();
            let listener = {
                let seen = seen.clone();
                orderly_listener_fn(move |msgs, ctx| {
                    let mut result = OrderlyResult::Success;
                    {
                        let mut s = seen.lock().unwrap();
                        for m in msgs {
                            let body = String::from_utf8_lossy(&m.body).to_string();
                            s.entry(ctx.queue().queue_id)
                                .or_default()
                                .push(format!("{body}/{}", m.reconsume_times));
                            if body.ends_with("-1") && m.reconsume_times == 0
                                || body.ends_with("poison")
                            {
                                result = OrderlyResult::SuspendCurrentQueueAMoment;
                            }
                        }
                    }
                    Box::pin(async move { result })
                })
            };
            let c = PushConsumer::builder()
                .group(&group)
                .client_config(t.config("diff_ord_c"))
                .consume_from(ConsumeFrom::FirstOffset)
                .max_reconsume(MaxReconsume::Times(2))
                .suspend_current_queue_time(Duration::from_millis(100))
                .subscribe(&topic, "*")
                .start_orderly(listener)
                .await
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let n: usize = seen.lock().unwrap().values().map(Vec::len).sum();
                // 12 messages, 3 of them once again (-1), the poison three times.
                if n >= 12 + 3 + 2 {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{:?}: deliveries {:?}",
                    t.side,
                    seen.lock().unwrap()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            obs!(
                o,
                "another client locks 0,1 while consuming: {} granted",
                foreign_lock(&t, &group, &topic).await
            );
            let dlq = format!("%DLQ%{group}");
            for m in t.pull_until(&dlq, 0, 1, Duration::from_secs(20)).await {
                obs!(
                    o,
                    "dlq: {}",
                    describe(&m, &t, &labels).replace(&group, "<g>")
                );
            }
            c.shutdown().await.unwrap();
            for (q, ds) in seen.lock().unwrap().iter() {
                obs!(o, "queue {q}: {}", ds.join(" "));
            }
            obs!(
                o,
                "another client locks 0,1 after shutdown: {} granted",
                foreign_lock(&t, &group, &topic).await
            );
            t.shutdown().await;
            o
        }
    })
    .await;
}
