//! The route of a topic the broker creates on first send (`autoCreateTopicEnable`), while other
//! topics are created through UPDATE_AND_CREATE_TOPIC at the same time.
//!
//! RocketMQ 4.9.x loses such a route. The broker numbers its topic table with a `DataVersion`
//! and registers with the name server either the whole table (`registerBrokerAll`, after an
//! auto-created topic and every 30 s) or one topic (`registerIncrementBrokerData`, after
//! UPDATE_AND_CREATE_TOPIC). Both send the table's *current* version, so an incremental
//! registration that leaves after an auto-created topic bumped the version, and reaches the name
//! server before that topic's full registration, records a version that already counts the
//! auto-created topic without the topic. The 4.9.x name server (`RouteInfoManager.registerBroker`)
//! reads a registration's topics only when its version differs from the recorded one, so the
//! full registration that follows, and every periodic one after it, is skipped: the topic is not
//! routed until the broker's table changes again through a full registration. 5.x reads every
//! topic the name server does not route yet, whatever the version (`isTopicConfigChanged`).
//!
//! The test provokes the race a number of times and asserts, per attempt, one of two outcomes:
//! the topic is routed at once; or (4.9.x only) the name server is in the state above: the broker
//! has the topic, the name server answers QUERY_DATA_VERSION with "unchanged" for the broker's
//! version, has no route for the topic, and one more UPDATE_AND_CREATE_TOPIC of it routes it.
//! rmq's producer, like Java's, sends to an unrouted topic through TBW102's route, so sends keep
//! working; consumers see no queues until the topic is routed. Users of 4.9.x create their topics (and `%RETRY%` topics of groups that retry) with
//! `mqadmin updateTopic` instead of relying on auto-creation.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use rmq_producer::Message;
use rmq_protocol::header::CreateTopicRequestHeader;
use rmq_protocol::message::property;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_testkit::raw::{CALL, RawEnv, RawSend, now_ms, send_request};
use rmq_testkit::wait::within;
use rmq_testkit::{admin, unique_name};
use rmq_tests_integration::Env;

const LIMIT: Duration = Duration::from_secs(120);
/// How long an auto-created topic may take to be routed when its registration is not lost: the
/// broker registers it right after the send.
const ROUTED_AT_ONCE: Duration = Duration::from_secs(3);
const ATTEMPTS: usize = 12;
/// Topics created through UPDATE_AND_CREATE_TOPIC beside each auto-created one.
const BESIDE: usize = 4;
/// QUERY_DATA_VERSION: a broker asks the name server whether its recorded version differs.
const QUERY_DATA_VERSION: RequestCode = RequestCode(322);

fn create_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &CreateTopicRequestHeader::new(topic, 1),
    )
}

/// The broker's topic table: (data version JSON, topic names).
async fn broker_topics(env: &RawEnv) -> (serde_json::Value, Vec<String>) {
    let response = env
        .client
        .invoke_expect(
            &env.broker,
            RemotingCommand::new_request(RequestCode::GET_ALL_TOPIC_CONFIG),
            CALL,
            &[ResponseCode::SUCCESS],
        )
        .await
        .expect("GET_ALL_TOPIC_CONFIG");
    let body: serde_json::Value =
        serde_json::from_slice(&response.body).expect("the topic table is JSON");
    let topics = body["topicConfigTable"]
        .as_object()
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    (body["dataVersion"].clone(), topics)
}

/// Whether the name server's recorded version of the broker differs from `version`.
async fn namesrv_says_changed(env: &RawEnv, cluster: &str, version: &serde_json::Value) -> bool {
    let request = RemotingCommand::new_request(QUERY_DATA_VERSION)
        .with_ext_field("brokerName", env.broker_name.as_str())
        .with_ext_field("brokerAddr", env.broker.as_str())
        .with_ext_field("clusterName", cluster)
        .with_ext_field("brokerId", "0")
        .with_body(version.to_string());
    let response = env
        .client
        .invoke_expect(&env.namesrv, request, CALL, &[ResponseCode::SUCCESS])
        .await
        .expect("QUERY_DATA_VERSION");
    response.ext_field("changed") != Some("false")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_created_topic_beside_admin_created_ones_is_routed_or_the_4_9_name_server_lost_it() {
    within(LIMIT, async {
        let env = RawEnv::new().await;
        let broker = rmq_testkit::broker().await;
        let is_4_9 = broker.version.starts_with("4.");
        let it = Env::new().await;
        let producer = it.producer().await;
        let (mut routed, mut lost) = (0, 0);
        for _ in 0..ATTEMPTS {
            let auto = unique_name("auto_race");
            let send = RawSend {
                topic: &auto,
                queue_id: 0,
                sys_flag: 0,
                flag: 0,
                born_timestamp: now_ms(),
                properties: HashMap::from([(property::WAIT.to_owned(), "true".to_owned())]),
                body: Bytes::from_static(b"auto"),
            };
            let creates = (0..BESIDE).map(|_| {
                let topic = unique_name("beside");
                let client = &env.client;
                let broker = &env.broker;
                async move {
                    client
                        .invoke_expect(broker, create_request(&topic), CALL, &[ResponseCode::SUCCESS])
                        .await
                        .expect("UPDATE_AND_CREATE_TOPIC");
                }
            });
            let (sent, _) = tokio::join!(
                env.client
                    .invoke_expect(&env.broker, send_request(&send), CALL, &[ResponseCode::SUCCESS]),
                futures::future::join_all(creates)
            );
            sent.expect("the broker stores the message and creates the topic");
            if admin::wait_for_route(&env.client, &env.namesrv, &auto, ROUTED_AT_ONCE)
                .await
                .is_ok()
            {
                routed += 1;
                continue;
            }
            // Not routed: only the 4.9.x name server's lost registration explains it.
            let (version, topics) = broker_topics(&env).await;
            assert!(topics.contains(&auto), "the broker created {auto}");
            let changed = namesrv_says_changed(&env, &broker.cluster, &version).await;
            assert!(
                is_4_9 && !changed,
                "RocketMQ {}: {auto} is not routed {ROUTED_AT_ONCE:?} after the broker created it, \
                 and the name server {} the broker's version {version}",
                broker.version,
                if changed { "does not have" } else { "has" },
            );
            lost += 1;
            // The producer sends to it all the same, with TBW102's route (as Java's
            // `tryToFindTopicPublishInfo` does); consumers cannot see its queues until it is routed.
            producer
                .send(Message::new(&auto, "sent while unrouted"))
                .await
                .expect("a send to the unrouted topic goes through TBW102's route");
            // A further registration of the topic with a new version routes it.
            env.client
                .invoke_expect(&env.broker, create_request(&auto), CALL, &[ResponseCode::SUCCESS])
                .await
                .expect("UPDATE_AND_CREATE_TOPIC of the lost topic");
            admin::wait_for_route(&env.client, &env.namesrv, &auto, ROUTED_AT_ONCE)
                .await
                .expect("one more UPDATE_AND_CREATE_TOPIC routes the lost topic");
        }
        println!(
            "auto-created-route: version={} attempts={ATTEMPTS} routed_at_once={routed} lost={lost}",
            broker.version
        );
        producer.shutdown().await.expect("producer shutdown");
        env.client.shutdown().await;
    })
    .await;
}
