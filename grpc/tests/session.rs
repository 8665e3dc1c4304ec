//! The gRPC session against the real RocketMQ 5.x proxy (`RMQ_PROXY_ENDPOINT`,
//! started by `RMQ_PROXY=1 scripts/rocketmq-local.sh start`; `scripts/test.sh`
//! runs these on 5.x with `--ignored`: 4.9.x has no proxy).

use std::time::Duration;

use rmq_client_core::ClientInstance;
use rmq_grpc::{ClientSettings, Error, GrpcConfig, Session, proto, resource};
use rmq_testkit::client::{instance as test_instance, within};
use rmq_testkit::{broker, unique_name};

const NEEDS_PROXY: &str =
    "needs the 5.x proxy: RMQ_PROXY=1 scripts/rocketmq-local.sh start, export RMQ_PROXY_ENDPOINT";

fn endpoint() -> String {
    std::env::var("RMQ_PROXY_ENDPOINT")
        .unwrap_or_else(|_| panic!("RMQ_PROXY_ENDPOINT is not set: {NEEDS_PROXY}"))
}

/// Creates `topic` (4 queues) with its 5.x message type (`NORMAL`, `FIFO`, `DELAY`).
async fn create_typed_topic(instance: &ClientInstance, topic: &str, message_type: &str) {
    let b = broker().await;
    rmq_testkit::admin::create_typed_topic(
        instance.remoting(),
        &b.namesrv_addr,
        &b.broker_addr,
        topic,
        4,
        message_type,
    )
    .await
    .expect("topic created and routed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn route_heartbeat_and_send() {
    within(60, "session test", async {
        let instance = test_instance("grpc-session").await;
        let topic = unique_name("GrpcSession");
        create_typed_topic(&instance, &topic, "NORMAL").await;

        let config = GrpcConfig::new(&endpoint()).unwrap();
        let session = Session::start(
            config,
            ClientSettings::producer(std::slice::from_ref(&topic), 4 << 20),
            None,
        )
        .await
        .expect("session started");
        assert!(
            session.server_settings().is_some(),
            "the proxy answered the settings"
        );
        session.heartbeat().await.expect("heartbeat");

        let queues = session.query_route(&topic).await.expect("route");
        assert_eq!(queues.len(), 4, "{queues:?}");
        assert!(
            queues
                .iter()
                .all(|q| q.topic.as_ref().map(|t| t.name.as_str()) == Some(topic.as_str()))
        );

        let missing = session
            .query_route(&unique_name("GrpcNoSuchTopic"))
            .await
            .unwrap_err();
        assert_eq!(
            missing.proxy_code(),
            Some(proto::Code::TopicNotFound),
            "{missing}"
        );

        let msg = proto::Message {
            topic: Some(resource("", &topic)),
            user_properties: [("k".to_owned(), "v".to_owned())].into(),
            system_properties: Some(proto::SystemProperties {
                tag: Some("t".into()),
                message_id: "0123456789ABCDEF0123456789ABCDEF".into(),
                body_encoding: proto::Encoding::Identity as i32,
                message_type: proto::MessageType::Normal as i32,
                born_timestamp: Some(rmq_grpc::timestamp_ms(rmq_client_core::now_ms())),
                born_host: "127.0.0.1".into(),
                queue_id: queues[0].id,
                ..Default::default()
            }),
            body: bytes::Bytes::from_static(b"hello over gRPC"),
        };
        let entries = session.send_message(vec![msg]).await.expect("sent");
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!(
            e.status.as_ref().map(|s| s.code),
            Some(proto::Code::Ok as i32),
            "{e:?}"
        );
        assert_eq!(e.message_id, "0123456789ABCDEF0123456789ABCDEF");
        session.shutdown().await;
        assert!(matches!(session.heartbeat().await, Err(Error::Shutdown)));
        instance.release().await;
    })
    .await;
}

#[tokio::test]
async fn unreachable_proxy_is_a_typed_error() {
    within(30, "unreachable proxy", async {
        // A port in this process' own range that nothing listens on.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let config = GrpcConfig::new(&format!("127.0.0.1:{port}"))
            .unwrap()
            .with_request_timeout(Duration::from_secs(2));
        let e = Session::start(config, ClientSettings::producer(&[], 1024), None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Rpc {
                    code: tonic::Code::Unavailable,
                    ..
                } | Error::Timeout { .. }
            ),
            "{e}"
        );
    })
    .await;
}
