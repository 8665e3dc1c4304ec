//! LOCK_BATCH_MQ / UNLOCK_BATCH_MQ between two clients, and what a group
//! holding locks does to a send to its retry topic (straight to the DLQ).

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::body::{LockBatchRequestBody, LockBatchResponseBody};
use rmq_protocol::header::SendMessageRequestHeaderV2;
use rmq_protocol::message::{encode_properties, property};
use rmq_protocol::{MessageQueue, RemotingCommand, RequestCode};

use crate::obs;
use crate::support::{Labels, Obs, Target, describe, run};

fn body(group: &str, client: &str, mqs: &[MessageQueue]) -> Bytes {
    LockBatchRequestBody {
        client_id: client.into(),
        consumer_group: group.into(),
        mq_set: mqs.iter().cloned().collect(),
        only_this_broker: false,
    }
    .to_json_bytes()
    .unwrap()
    .into()
}

async fn lock(t: &Target, group: &str, client: &str, ids: &[i32], topic: &str) -> String {
    let mqs: Vec<MessageQueue> = ids.iter().map(|i| t.mq(topic, *i)).collect();
    let cmd = RemotingCommand::new_request(RequestCode::LOCK_BATCH_MQ)
        .with_body(body(group, client, &mqs));
    let a = t.call(cmd).await;
    let locked: BTreeSet<i32> = LockBatchResponseBody::decode(&a.body)
        .map(|b| b.lock_ok_mq_set.iter().map(|q| q.queue_id).collect())
        .unwrap_or_default();
    format!("code={} locked={locked:?}", a.code)
}

async fn unlock(t: &Target, group: &str, client: &str, ids: &[i32], topic: &str) -> i32 {
    let mqs: Vec<MessageQueue> = ids.iter().map(|i| t.mq(topic, *i)).collect();
    let cmd = RemotingCommand::new_request(RequestCode::UNLOCK_BATCH_MQ)
        .with_body(body(group, client, &mqs));
    t.call(cmd).await.code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_are_granted_alike() {
    let topic = rmq_testkit::unique_name("diff_lock");
    let group = rmq_testkit::unique_name("diff_lock_cg");
    run("locks", |t| {
        let (topic, group) = (topic.clone(), group.clone());
        async move {
            let mut o = Obs::default();
            t.topic(&topic, 4).await;
            obs!(
                o,
                "a locks 0,1: {}",
                lock(&t, &group, "a", &[0, 1], &topic).await
            );
            obs!(
                o,
                "b locks 1,2: {}",
                lock(&t, &group, "b", &[1, 2], &topic).await
            );
            obs!(
                o,
                "a renews 0,1,2: {}",
                lock(&t, &group, "a", &[0, 1, 2], &topic).await
            );
            obs!(
                o,
                "b unlocks 1 (a's): code={}",
                unlock(&t, &group, "b", &[1], &topic).await
            );
            obs!(
                o,
                "b locks 1: {}",
                lock(&t, &group, "b", &[1], &topic).await
            );
            obs!(
                o,
                "a unlocks 0,1: code={}",
                unlock(&t, &group, "a", &[0, 1], &topic).await
            );
            obs!(
                o,
                "b locks 0,1,3: {}",
                lock(&t, &group, "b", &[0, 1, 3], &topic).await
            );
            obs!(
                o,
                "a locks a queue of no topic: {}",
                lock(&t, &group, "a", &[0], "diff_no_topic_q").await
            );

            // The group holds locks: a message sent to its retry topic (the
            // orderly consumer's fallback) is put into the DLQ at once.
            let retry = format!("%RETRY%{group}");
            let mut props = std::collections::HashMap::new();
            props.insert(
                property::UNIQ_KEY.to_owned(),
                "7F0000010000000000000000000000AA".to_owned(),
            );
            props.insert(property::RETRY_TOPIC.to_owned(), topic.clone());
            let h = SendMessageRequestHeaderV2 {
                producer_group: "CLIENT_INNER_PRODUCER".into(),
                topic: retry.clone(),
                default_topic: "TBW102".into(),
                default_topic_queue_nums: 4,
                queue_id: 0,
                sys_flag: 0,
                born_timestamp: 1_700_000_000_000,
                flag: 0,
                properties: Some(encode_properties(&props)),
                reconsume_times: Some(1),
                max_reconsume_times: Some(16),
                ..Default::default()
            };
            let a = t
                .call(
                    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, &h)
                        .with_body(Bytes::from_static(b"retry")),
                )
                .await;
            obs!(
                o,
                "send to the retry topic while locked: code={} queueId={:?}",
                a.code,
                a.ext_field("queueId")
            );
            // 5.x: into the DLQ; 4.9.x has no such rule: into the retry topic.
            let labels = Labels::default();
            labels.add("7F0000010000000000000000000000AA", "sent");
            for topic in [format!("%DLQ%{group}"), retry.clone()] {
                let (code, msgs) = t
                    .raw_pull_until_found(&topic, 0, Duration::from_secs(3))
                    .await;
                obs!(o, "{}: code={code}", topic.replace(&group, "<g>"));
                for m in &msgs {
                    obs!(o, "  {}", describe(m, &t, &labels).replace(&group, "<g>"));
                }
            }
            t.shutdown().await;
            o
        }
    })
    .await;
}
