//! Consumer offsets (query / update) and queue offsets (min / max / search
//! by time).

use rmq_protocol::header::{
    BoundaryType, QueryConsumerOffsetRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::obs;
use crate::support::{Obs, Target, code_and, run};

fn query(group: &str, topic: &str, queue_id: i32) -> RemotingCommand {
    let h = QueryConsumerOffsetRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        set_zero_if_not_found: None,
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::QUERY_CONSUMER_OFFSET, &h)
}

fn update(group: &str, topic: &str, queue_id: i32, offset: i64) -> RemotingCommand {
    let h = UpdateConsumerOffsetRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        commit_offset: offset,
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, &h)
}

async fn search(t: &Target, topic: &str, ts: i64, boundary: BoundaryType) -> i64 {
    let h = SearchOffsetRequestHeader {
        topic: topic.into(),
        queue_id: 0,
        timestamp: ts,
        boundary_type: Some(boundary),
        broker_name: None,
    };
    let a = t
        .call(RemotingCommand::request(
            RequestCode::SEARCH_OFFSET_BY_TIMESTAMP,
            &h,
        ))
        .await;
    a.ext_field("offset")
        .and_then(|o| o.parse().ok())
        .unwrap_or(-99)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_answer_alike() {
    let topic = rmq_testkit::unique_name("diff_off");
    let group = rmq_testkit::unique_name("diff_off_cg");
    let other = rmq_testkit::unique_name("diff_off_new");
    run("offsets", |t| {
        let (topic, group, other) = (topic.clone(), group.clone(), other.clone());
        async move {
            let mut o = Obs::default();
            t.topic(&topic, 2).await;
            let f = ["offset"];
            // No offset yet, on an empty queue and on one with messages.
            obs!(
                o,
                "new group, empty queue: {}",
                code_and(&t.call(query(&group, &topic, 0)).await, &f)
            );
            let producer = t.producer("diff_off_pg").await;
            let mut stored_at = Vec::new();
            for i in 0..6 {
                let r = producer
                    .send_to_queue(
                        rmq_producer::Message::new(&topic, format!("m{i}")),
                        &t.mq(&topic, 0),
                    )
                    .await
                    .unwrap();
                assert_eq!(r.queue_offset, i);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            producer.shutdown().await.expect("producer shutdown");
            t.wait_max_offset(&topic, 0, 6).await;
            for m in t.pull_all(&topic, 0).await {
                stored_at.push(m.store_timestamp);
            }
            obs!(
                o,
                "new group, queue with messages: {}",
                code_and(&t.call(query(&group, &topic, 0)).await, &f)
            );
            // 5.x refuses offsets of groups and topics it does not know.
            obs!(
                o,
                "update unknown group: code={}",
                t.call(update(&other, &topic, 0, 3)).await.code
            );
            obs!(
                o,
                "query unknown group: {}",
                code_and(&t.call(query(&other, &topic, 0)).await, &f)
            );
            // The group's heartbeat creates it.
            let hb = rmq_protocol::body::HeartbeatData {
                client_id: "diff-offsets-client".into(),
                consumer_data_set: vec![rmq_protocol::body::ConsumerData {
                    group_name: group.clone(),
                    subscription_data_set: vec![rmq_protocol::body::SubscriptionData::build(
                        topic.clone(),
                        "*",
                        rmq_protocol::body::ExpressionType::Tag,
                        1,
                    )],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let a = t
                .call(
                    RemotingCommand::new_request(RequestCode::HEART_BEAT)
                        .with_body(hb.to_json_bytes().unwrap()),
                )
                .await;
            obs!(o, "heartbeat: code={}", a.code);
            obs!(
                o,
                "update: code={}",
                t.call(update(&group, &topic, 0, 4)).await.code
            );
            obs!(
                o,
                "query after update: {}",
                code_and(&t.call(query(&group, &topic, 0)).await, &f)
            );
            obs!(
                o,
                "update unknown topic: code={}",
                t.call(update(&group, "diff_no_such_topic_y", 0, 1))
                    .await
                    .code
            );
            let mut oneway = update(&group, &topic, 1, 9);
            oneway.set_oneway();
            t.client
                .invoke_oneway(&t.broker, oneway, crate::support::CALL)
                .await
                .unwrap();
            // Oneway: poll for it.
            let mut seen = String::new();
            for _ in 0..100 {
                seen = code_and(&t.call(query(&group, &topic, 1)).await, &f);
                if seen.contains("offset=9") {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            obs!(o, "oneway update: {seen}");
            // Queue offsets.
            let max = t
                .admin
                .get_max_offset(&t.broker, &topic, 0, None)
                .await
                .unwrap();
            let min = t
                .admin
                .get_min_offset(&t.broker, &topic, 0, None)
                .await
                .unwrap();
            let max_empty = t
                .admin
                .get_max_offset(&t.broker, &topic, 1, None)
                .await
                .unwrap();
            obs!(o, "max={max} min={min} max of empty={max_empty}");
            let first = stored_at.first().copied().unwrap_or(0);
            let last = stored_at.last().copied().unwrap_or(0);
            let mid = stored_at.get(3).copied().unwrap_or(0);
            for (name, ts) in [
                ("before", first - 60_000),
                ("first", first),
                ("mid", mid),
                ("last", last),
                ("after", last + 3_600_000),
            ] {
                let lower = search(&t, &topic, ts, BoundaryType::Lower).await;
                let upper = search(&t, &topic, ts, BoundaryType::Upper).await;
                obs!(o, "search {name}: lower={lower} upper={upper}");
            }
            t.shutdown().await;
            o
        }
    })
    .await;
}
