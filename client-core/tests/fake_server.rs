//! ClientInstance against a scripted name server + broker on 127.0.0.1:0:
//! name-server failover, heartbeat timing and UNREGISTER_CLIENT at
//! shutdown, observed on the wire.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use rmq_client_core::{ClientConfig, ClientInstance};
use rmq_protocol::body::HeartbeatData;
use rmq_protocol::header::UnregisterClientRequestHeader;
use rmq_protocol::{RemotingCodec, RemotingCommand, RequestCode, ResponseCode};
use rmq_testkit::client::within;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

/// Serves name-server and broker requests on one address: a route for
/// topic `T` pointing at itself, SUCCESS for everything else. Every
/// request is reported on the returned channel.
async fn fake_server() -> (String, mpsc::UnboundedReceiver<RemotingCommand>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::unbounded_channel();
    let own = addr.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let tx = tx.clone();
            let own = own.clone();
            tokio::spawn(async move {
                let mut framed = Framed::new(socket, RemotingCodec::new());
                while let Some(Ok(request)) = framed.next().await {
                    let response = answer(&own, &request);
                    let _ = tx.send(request);
                    if let Some(r) = response {
                        if framed.send(r).await.is_err() {
                            break;
                        }
                    }
                }
            });
        }
    });
    (addr, rx)
}

fn answer(own: &str, request: &RemotingCommand) -> Option<RemotingCommand> {
    if request.is_oneway() {
        return None;
    }
    let ok = RemotingCommand::response_to(request, ResponseCode::SUCCESS, None);
    if request.request_code() == RequestCode::GET_ROUTEINFO_BY_TOPIC {
        if request.ext_field("topic") != Some("T") {
            return Some(RemotingCommand::response_to(
                request,
                ResponseCode::TOPIC_NOT_EXIST,
                None,
            ));
        }
        let route = format!(
            r#"{{"brokerDatas":[{{"brokerAddrs":{{"0":"{own}"}},"brokerName":"fake","cluster":"C"}}],
               "queueDatas":[{{"brokerName":"fake","perm":6,"readQueueNums":4,"writeQueueNums":4}}]}}"#
        );
        return Some(ok.with_body(route));
    }
    Some(ok)
}

/// The next request with `code`, skipping others.
async fn next_of(
    rx: &mut mpsc::UnboundedReceiver<RemotingCommand>,
    code: RequestCode,
) -> RemotingCommand {
    loop {
        let request = rx.recv().await.expect("server running");
        if request.request_code() == code {
            return request;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_heartbeats_and_unregister_on_the_wire() {
    within(60, "fake server test", async {
        let (addr, mut rx) = fake_server().await;
        // The first name server refuses connections: the second answers.
        let config = ClientConfig::builder()
            .namesrv_addrs(["127.0.0.1:1".to_owned(), addr.clone()])
            .client_ip("127.0.0.1")
            .instance_name("fake-server")
            .heartbeat_broker_interval(Duration::from_millis(300))
            .build()
            .unwrap();
        let i = ClientInstance::get_or_start(config).unwrap();
        let route = i.route("T").await.unwrap();
        assert_eq!(route.publish_queues().len(), 4);
        assert_eq!(
            i.find_broker_addr_in_publish("fake").as_deref(),
            Some(addr.as_str())
        );
        assert!(matches!(
            i.route("nope").await,
            Err(rmq_client_core::Error::RouteNotFound { .. })
        ));

        i.register_producer("PG").await.unwrap();
        let hb = next_of(&mut rx, RequestCode::HEART_BEAT).await;
        let data = HeartbeatData::decode(&hb.body).unwrap();
        assert_eq!(data.client_id, "127.0.0.1@fake-server");
        assert_eq!(data.producer_data_set.len(), 1);
        assert_eq!(data.producer_data_set[0].group_name, "PG");
        assert!(data.consumer_data_set.is_empty());

        // Periodic heartbeats keep coming.
        for _ in 0..2 {
            within(
                5,
                "periodic heartbeat",
                next_of(&mut rx, RequestCode::HEART_BEAT),
            )
            .await;
        }

        i.release().await;
        let mut unregistered = Vec::new();
        while let Ok(request) = rx.try_recv() {
            if request.request_code() == RequestCode::UNREGISTER_CLIENT {
                unregistered.push(
                    request
                        .decode_header::<UnregisterClientRequestHeader>()
                        .unwrap(),
                );
            }
        }
        assert_eq!(
            unregistered,
            [UnregisterClientRequestHeader {
                client_id: "127.0.0.1@fake-server".into(),
                producer_group: Some("PG".into()),
                consumer_group: None,
            }]
        );
        assert!(i.remoting().is_shutdown());
    })
    .await;
}
