//! The name server: routes (standard and fastjson's non-standard JSON), an
//! unknown topic, cluster info, the topic list.

use rmq_protocol::header::GetRouteInfoRequestHeader;
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::obs;
use crate::support::{Obs, Target, run};

fn route_request(topic: &str, version: i32, standard: Option<bool>) -> RemotingCommand {
    let h = GetRouteInfoRequestHeader {
        topic: topic.into(),
        accept_standard_json_only: standard,
    };
    let mut cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &h);
    cmd.version = version;
    cmd
}

/// A body with this run's addresses and names replaced.
fn normalized(t: &Target, body: &[u8], topic: &str) -> String {
    String::from_utf8_lossy(body)
        .replace(&t.broker, "<broker>")
        .replace(topic, "<topic>")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_name_server_answers_alike() {
    let topic = rmq_testkit::unique_name("diff_ns");
    run("namesrv", |t| {
        let topic = topic.clone();
        async move {
            let mut o = Obs::default();
            t.topic(&topic, 3).await;
            for (name, version, standard) in [
                ("go client (317, non-standard)", 317, None),
                ("401", 401, None),
                ("317 + acceptStandardJsonOnly", 317, Some(true)),
            ] {
                let a = t.call_ns(route_request(&topic, version, standard)).await;
                obs!(
                    o,
                    "route {name}: code={} {}",
                    a.code,
                    normalized(&t, &a.body, &topic)
                );
            }
            let a = t
                .call_ns(route_request("diff_no_such_topic_z", 401, Some(true)))
                .await;
            let remark = a
                .remark
                .as_deref()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
                .replace("diff_no_such_topic_z", "<t>");
            obs!(
                o,
                "unknown topic: code={} remark={remark:?} body={}",
                a.code,
                a.body.len()
            );
            let a = t
                .call_ns(RemotingCommand::new_request(
                    RequestCode::GET_BROKER_CLUSTER_INFO,
                ))
                .await;
            let info =
                rmq_protocol::body::ClusterInfo::decode(&a.body).expect("cluster info decodes");
            let broker = info
                .broker_addr_table
                .get(&t.broker_name)
                .expect("broker listed");
            obs!(
                o,
                "cluster info: code={} clusters={:?} broker-a master={}",
                a.code,
                info.cluster_addr_table.keys().collect::<Vec<_>>(),
                broker.master_addr() == Some(t.broker.as_str())
            );
            let a = t
                .call_ns(RemotingCommand::new_request(RequestCode(206)))
                .await;
            let text = String::from_utf8_lossy(&a.body);
            obs!(
                o,
                "topic list: code={} has topic={} has TBW102={}",
                a.code,
                text.contains(&topic),
                text.contains("TBW102")
            );
            // 4.9.x's name server does not answer a code it does not know.
            let a = t
                .client
                .invoke(
                    &t.namesrv,
                    RemotingCommand::new_request(RequestCode(9999)),
                    std::time::Duration::from_millis(1500),
                )
                .await;
            match a {
                Ok(a) => obs!(o, "unknown code: code={} remark={:?}", a.code, a.remark),
                Err(e) => obs!(o, "unknown code: no answer (timeout: {})", e.is_timeout()),
            }
            let a = t
                .call(RemotingCommand::new_request(RequestCode(9999)))
                .await;
            obs!(
                o,
                "unknown code at the broker: code={} remark={:?}",
                a.code,
                a.remark
            );
            t.shutdown().await;
            o
        }
    })
    .await;
}
