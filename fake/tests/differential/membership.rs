//! Consumer membership: heartbeats, GET_CONSUMER_LIST_BY_GROUP,
//! NOTIFY_CONSUMER_IDS_CHANGED to the group on joins, subscription changes,
//! unregistering and closed connections; producer connections.

use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::body::{
    ConsumerData, ExpressionType, HeartbeatData, ProducerData, SubscriptionData,
};
use rmq_protocol::header::UnregisterClientRequestHeader;
use rmq_protocol::{RemotingCommand, RequestCode};
use rmq_remoting::{ClientOptions, RemotingClient};
use tokio::sync::mpsc;

use crate::obs;
use crate::support::{CALL, Obs, Target, run};

struct Member {
    id: String,
    client: RemotingClient,
    notified: mpsc::UnboundedReceiver<String>,
}

impl Member {
    fn new(id: &str) -> Member {
        let client = RemotingClient::new(ClientOptions::default());
        let (tx, rx) = mpsc::unbounded_channel();
        client.register_handler(
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
            Arc::new(move |_addr: &str, req: RemotingCommand| {
                let _ = tx.send(req.ext_field("consumerGroup").unwrap_or("").to_owned());
                async { None }
            }),
        );
        Member {
            id: id.to_owned(),
            client,
            notified: rx,
        }
    }

    async fn heartbeat(&self, t: &Target, group: &str, topics: &[&str]) -> RemotingCommand {
        let hb = HeartbeatData {
            client_id: self.id.clone(),
            consumer_data_set: vec![ConsumerData {
                group_name: group.to_owned(),
                subscription_data_set: topics
                    .iter()
                    .map(|topic| SubscriptionData::build(*topic, "*", ExpressionType::Tag, 1))
                    .collect(),
                ..Default::default()
            }],
            producer_data_set: vec![ProducerData {
                group_name: format!("{group}_pg"),
            }],
            ..Default::default()
        };
        let cmd = RemotingCommand::new_request(RequestCode::HEART_BEAT)
            .with_body(hb.to_json_bytes().unwrap());
        self.client.invoke(&t.broker, cmd, CALL).await.unwrap()
    }

    /// Whether a notification for `group` arrives within 3 s.
    async fn was_notified(&mut self, group: &str) -> bool {
        loop {
            match tokio::time::timeout(Duration::from_secs(3), self.notified.recv()).await {
                Ok(Some(g)) if g == group => return true,
                Ok(Some(_)) => continue,
                _ => return false,
            }
        }
    }

    /// Whether any notification arrives within `d` (then drained).
    async fn quiet_for(&mut self, d: Duration) -> bool {
        tokio::time::timeout(d, self.notified.recv()).await.is_err()
    }
}

async fn list(t: &Target, group: &str) -> String {
    let cmd = RemotingCommand::new_request(RequestCode::GET_CONSUMER_LIST_BY_GROUP)
        .with_ext_field("consumerGroup", group);
    let a = t.call(cmd).await;
    if a.code != 0 {
        return format!(
            "code={} remark={:?}",
            a.code,
            a.remark.map(|r| r.replace(group, "<g>"))
        );
    }
    let mut ids = rmq_protocol::body::ConsumerListBody::decode(&a.body)
        .unwrap()
        .consumer_id_list;
    ids.sort();
    format!("code=0 {ids:?}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_changes_are_told_alike() {
    let topic = rmq_testkit::unique_name("diff_mem");
    let topic2 = rmq_testkit::unique_name("diff_mem2");
    let group = rmq_testkit::unique_name("diff_mem_cg");
    run("membership", |t| {
        let (topic, topic2, group) = (topic.clone(), topic2.clone(), group.clone());
        async move {
            let mut o = Obs::default();
            t.topic(&topic, 2).await;
            t.topic(&topic2, 2).await;
            obs!(o, "before: {}", list(&t, &group).await);
            let mut a = Member::new("10.1.1.1@diff-a");
            let mut b = Member::new("10.1.1.1@diff-b");
            let r = a.heartbeat(&t, &group, &[&topic]).await;
            obs!(
                o,
                "heartbeat a: code={} v2={:?} sub_change={:?}",
                r.code,
                r.ext_field("IS_SUPPORT_HEART_BEAT_V2"),
                r.ext_field("IS_SUB_CHANGE")
            );
            obs!(
                o,
                "a told of its own join: {}",
                a.was_notified(&group).await
            );
            obs!(o, "after a: {}", list(&t, &group).await);
            b.heartbeat(&t, &group, &[&topic]).await;
            obs!(
                o,
                "b joins, a told: {}, b told: {}",
                a.was_notified(&group).await,
                b.was_notified(&group).await
            );
            obs!(o, "after b: {}", list(&t, &group).await);
            a.heartbeat(&t, &group, &[&topic]).await;
            obs!(
                o,
                "same heartbeat again, b quiet: {}",
                b.quiet_for(Duration::from_millis(500)).await
            );
            b.heartbeat(&t, &group, &[&topic, &topic2]).await;
            obs!(
                o,
                "b subscribes more, a told: {}",
                a.was_notified(&group).await
            );
            let _ = b.quiet_for(Duration::from_millis(200)).await;
            let h = UnregisterClientRequestHeader {
                client_id: b.id.clone(),
                producer_group: None,
                consumer_group: Some(group.clone()),
            };
            let r = b
                .client
                .invoke(
                    &t.broker,
                    RemotingCommand::request(RequestCode::UNREGISTER_CLIENT, &h),
                    CALL,
                )
                .await
                .unwrap();
            obs!(
                o,
                "unregister b: code={}, a told: {}",
                r.code,
                a.was_notified(&group).await
            );
            obs!(o, "after unregister: {}", list(&t, &group).await);
            // Producer connections of a's producer group.
            let cmd = RemotingCommand::new_request(RequestCode(204))
                .with_ext_field("producerGroup", format!("{group}_pg"));
            let r = t.call(cmd).await;
            let body = String::from_utf8_lossy(&r.body).to_string();
            obs!(
                o,
                "producer connections: code={} has a={} language RUST={}",
                r.code,
                body.contains("diff-a"),
                body.contains("\"RUST\"")
            );
            // b heartbeats again, then its connection closes: a is told.
            b.heartbeat(&t, &group, &[&topic]).await;
            let _ = a.was_notified(&group).await;
            b.client.shutdown().await;
            obs!(
                o,
                "b's connection closes, a told: {}",
                a.was_notified(&group).await
            );
            obs!(o, "after close: {}", list(&t, &group).await);
            a.client.shutdown().await;
            // The real broker sees the close asynchronously.
            let mut last = String::new();
            for _ in 0..50 {
                last = list(&t, &group).await;
                if last.starts_with("code=1") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            obs!(o, "all gone: {last}");
            t.shutdown().await;
            o
        }
    })
    .await;
}
