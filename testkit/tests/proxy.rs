//! The fault proxy against the real RocketMQ: route rewriting, pass-through,
//! and each rule (error, delay, drop, close, response faults, scopes), the
//! request counters, broker → client requests, disconnect and shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmq_protocol::body::{
    ConsumerData, ExpressionType, HeartbeatData, SubscriptionData, TopicRouteData,
};
use rmq_protocol::header::{
    EmptyHeader, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, OffsetResponseHeader,
    SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use rmq_protocol::message::encode_properties;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{ClientOptions, RemotingClient};
use rmq_testkit::proxy::{FaultProxy, ProxyError, Rule, Scope};
use rmq_testkit::{Broker, admin, broker, unique_name};
use tokio::sync::mpsc;

/// Bound on each test's body (the broker start is outside it).
const TEST_TIMEOUT: Duration = Duration::from_secs(90);
const CALL: Duration = Duration::from_secs(5);

async fn within<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(TEST_TIMEOUT, fut)
        .await
        .expect("test did not finish within its timeout")
}

struct Env {
    client: RemotingClient,
    proxy: FaultProxy,
    topic: String,
    /// The broker's proxy address, as the rewritten route gives it.
    via: String,
}

/// A topic with 2 queues, a proxy, and the broker's proxy address taken from
/// a route asked through the proxy.
async fn env(b: &'static Broker, prefix: &str) -> Env {
    let client = RemotingClient::new(ClientOptions::default());
    let topic = unique_name(prefix);
    admin::create_topic(&client, &b.namesrv_addr, &b.broker_addr, &topic, 2)
        .await
        .expect("topic created");
    let proxy = FaultProxy::start(&b.namesrv_addr)
        .await
        .expect("proxy starts");
    let route = route_via(&client, &proxy, &topic).await;
    let via = route
        .broker(&b.broker_name)
        .and_then(|bd| bd.master_addr())
        .expect("the route through the proxy has the broker's master")
        .to_owned();
    Env {
        client,
        proxy,
        topic,
        via,
    }
}

async fn route_via(client: &RemotingClient, proxy: &FaultProxy, topic: &str) -> TopicRouteData {
    let response = admin::query_route(client, proxy.namesrv_addr(), topic)
        .await
        .expect("route query through the proxy");
    assert_eq!(
        response.response_code(),
        ResponseCode::SUCCESS,
        "{:?}",
        response.remark
    );
    TopicRouteData::decode(&response.body).expect("the rewritten route decodes")
}

fn max_offset_request(topic: &str) -> RemotingCommand {
    let header = GetMaxOffsetRequestHeader {
        topic: topic.into(),
        queue_id: 0,
        committed: Some(true),
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::GET_MAX_OFFSET, &header)
}

fn min_offset_request(topic: &str) -> RemotingCommand {
    let header = GetMinOffsetRequestHeader {
        topic: topic.into(),
        queue_id: 0,
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::GET_MIN_OFFSET, &header)
}

/// Queue 0's max offset, asked at `addr` (the broker itself or its proxy).
async fn max_offset(client: &RemotingClient, addr: &str, topic: &str) -> i64 {
    let response = client
        .invoke_expect(
            addr,
            max_offset_request(topic),
            CALL,
            &[ResponseCode::SUCCESS],
        )
        .await
        .expect("GET_MAX_OFFSET answered");
    let header: OffsetResponseHeader = response.decode_header().expect("offset header");
    header.offset
}

/// Waits until queue 0's max offset at `addr` is `expected` (the broker
/// updates it asynchronously after a send), then checks that it stays there
/// briefly; panics with the last value otherwise.
async fn expect_max_offset(client: &RemotingClient, addr: &str, topic: &str, expected: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let offset = max_offset(client, addr, topic).await;
        if offset == expected {
            break;
        }
        assert!(
            offset < expected && Instant::now() < deadline,
            "max offset at {addr} is {offset}, expected {expected}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        max_offset(client, addr, topic).await,
        expected,
        "max offset moved on"
    );
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A SEND_MESSAGE_V2 of one small message to queue 0.
fn send_request(topic: &str) -> RemotingCommand {
    let properties: HashMap<String, String> = [("KEYS".to_owned(), "proxy-test".to_owned())].into();
    let header = SendMessageRequestHeaderV2 {
        producer_group: "rmq_proxy_test".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: now_ms(),
        flag: 0,
        properties: Some(encode_properties(&properties)),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, &header).with_body(&b"hello"[..])
}

#[tokio::test]
async fn route_is_rewritten_and_calls_pass_through() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_pass").await;
        let proxied = e.proxy.broker_proxy_addr(&b.broker_addr);
        assert_eq!(proxied.as_deref(), Some(e.via.as_str()));
        assert!(e.via.starts_with("127.0.0.1:"), "{}", e.via);
        assert_ne!(e.via, b.broker_addr);
        assert_eq!(
            e.proxy.proxy_broker(&b.broker_addr).unwrap(),
            e.via,
            "listener reused"
        );

        // Same route as the name server's, addresses aside.
        let direct = admin::query_route(&e.client, &b.namesrv_addr, &e.topic)
            .await
            .unwrap();
        let direct = TopicRouteData::decode(&direct.body).unwrap();
        let mut via_route = route_via(&e.client, &e.proxy, &e.topic).await;
        for bd in &mut via_route.broker_datas {
            for addr in bd.broker_addrs.values_mut() {
                let upstream = e
                    .proxy
                    .broker_proxies()
                    .into_iter()
                    .find(|(_, p)| p == addr)
                    .map(|(u, _)| u)
                    .expect("every address in the route is a proxy address");
                *addr = upstream;
            }
        }
        assert_eq!(via_route, direct);
        assert_eq!(via_route.publish_queues(&e.topic).len(), 2);

        // Calls through the proxy reach the broker.
        let before = max_offset(&e.client, &e.via, &e.topic).await;
        assert_eq!(
            before,
            max_offset(&e.client, &b.broker_addr, &e.topic).await
        );
        let response = e
            .client
            .invoke_expect(
                &e.via,
                send_request(&e.topic),
                CALL,
                &[ResponseCode::SUCCESS],
            )
            .await
            .expect("send through the proxy");
        let sent: SendMessageResponseHeader = response.decode_header().unwrap();
        assert_eq!(sent.queue_id, 0);
        assert_eq!(sent.queue_offset, before);
        expect_max_offset(&e.client, &b.broker_addr, &e.topic, before + 1).await;
        assert_eq!(max_offset(&e.client, &e.via, &e.topic).await, before + 1);

        assert_eq!(e.proxy.request_count(RequestCode::SEND_MESSAGE_V2), 1);
        assert_eq!(e.proxy.request_count(RequestCode::GET_MAX_OFFSET), 2);
        assert_eq!(
            e.proxy
                .request_count_to(&b.broker_addr, RequestCode::GET_MAX_OFFSET),
            2
        );
        assert_eq!(
            e.proxy.request_count(RequestCode::GET_ROUTEINFO_BY_TOPIC),
            2
        );
        assert_eq!(
            e.proxy
                .request_count_to(&b.namesrv_addr, RequestCode::GET_ROUTEINFO_BY_TOPIC),
            2
        );
        e.proxy.reset_counts();
        assert_eq!(e.proxy.request_count(RequestCode::SEND_MESSAGE_V2), 0);

        // Cluster info passes unchanged (real addresses).
        let cluster = e
            .client
            .invoke_expect(
                e.proxy.namesrv_addr(),
                RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO, &EmptyHeader),
                CALL,
                &[ResponseCode::SUCCESS],
            )
            .await
            .unwrap();
        let cluster = rmq_protocol::body::ClusterInfo::decode(&cluster.body).unwrap();
        let data = cluster.broker_addr_table.get(&b.broker_name).unwrap();
        assert_eq!(data.master_addr(), Some(b.broker_addr.as_str()));

        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn error_rule_answers_without_reaching_the_broker() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_error").await;
        let before = max_offset(&e.client, &b.broker_addr, &e.topic).await;
        e.proxy.set_rule(
            RequestCode::SEND_MESSAGE_V2,
            Rule::error_with(ResponseCode::SYSTEM_ERROR, "injected"),
        );
        for _ in 0..3 {
            let response = e
                .client
                .invoke(&e.via, send_request(&e.topic), CALL)
                .await
                .expect("the proxy answers");
            assert_eq!(response.response_code(), ResponseCode::SYSTEM_ERROR);
            assert_eq!(response.remark.as_deref(), Some("injected"));
        }
        assert_eq!(e.proxy.request_count(RequestCode::SEND_MESSAGE_V2), 3);
        // Other codes pass; the queue did not move.
        assert_eq!(max_offset(&e.client, &e.via, &e.topic).await, before);
        assert_eq!(
            max_offset(&e.client, &b.broker_addr, &e.topic).await,
            before
        );

        e.proxy.clear_rule(RequestCode::SEND_MESSAGE_V2);
        let response = e
            .client
            .invoke_expect(
                &e.via,
                send_request(&e.topic),
                CALL,
                &[ResponseCode::SUCCESS],
            )
            .await
            .expect("send passes once the rule is cleared");
        // The first message stored in the queue: none of the refused ones was.
        let sent: SendMessageResponseHeader = response.decode_header().unwrap();
        assert_eq!(sent.queue_offset, before);
        expect_max_offset(&e.client, &b.broker_addr, &e.topic, before + 1).await;

        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn delay_rules_delay_only_their_code() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_delay").await;
        let delay = Duration::from_millis(800);
        e.proxy
            .set_rule(RequestCode::GET_MAX_OFFSET, Rule::Delay(delay));

        // On the same connection, a request of another code overtakes it.
        let started = Instant::now();
        let (slow, fast) = tokio::join!(
            async {
                let r = e
                    .client
                    .invoke(&e.via, max_offset_request(&e.topic), CALL)
                    .await;
                (r, started.elapsed())
            },
            async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let r = e
                    .client
                    .invoke(&e.via, min_offset_request(&e.topic), CALL)
                    .await;
                (r, started.elapsed())
            },
        );
        assert_eq!(slow.0.unwrap().response_code(), ResponseCode::SUCCESS);
        assert_eq!(fast.0.unwrap().response_code(), ResponseCode::SUCCESS);
        assert!(slow.1 >= delay, "delayed call took {:?}", slow.1);
        assert!(fast.1 < slow.1, "fast {:?} slow {:?}", fast.1, slow.1);

        // A delayed response: the broker answers, the client waits.
        e.proxy
            .set_rule(RequestCode::GET_MAX_OFFSET, Rule::DelayResponse(delay));
        let started = Instant::now();
        let r = e
            .client
            .invoke(&e.via, max_offset_request(&e.topic), CALL)
            .await
            .unwrap();
        assert_eq!(r.response_code(), ResponseCode::SUCCESS);
        assert!(started.elapsed() >= delay, "{:?}", started.elapsed());

        e.proxy.clear_all();
        let started = Instant::now();
        max_offset(&e.client, &e.via, &e.topic).await;
        assert!(
            started.elapsed() < delay,
            "still delayed: {:?}",
            started.elapsed()
        );

        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn drop_rule_makes_the_call_time_out() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_drop").await;
        e.proxy.set_rule(RequestCode::GET_MAX_OFFSET, Rule::Drop);
        let err = e
            .client
            .invoke(
                &e.via,
                max_offset_request(&e.topic),
                Duration::from_millis(700),
            )
            .await
            .expect_err("a dropped request gets no answer");
        assert!(
            matches!(err, rmq_remoting::Error::Timeout { written: true, .. }),
            "{err:?}"
        );
        assert_eq!(e.proxy.request_count(RequestCode::GET_MAX_OFFSET), 1);
        // The connection is intact: other codes work on it.
        let r = e
            .client
            .invoke(&e.via, min_offset_request(&e.topic), CALL)
            .await
            .unwrap();
        assert_eq!(r.response_code(), ResponseCode::SUCCESS);

        e.proxy.clear_rule(RequestCode::GET_MAX_OFFSET);
        max_offset(&e.client, &e.via, &e.topic).await;

        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn drop_response_rule_reaches_the_broker_but_times_out() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_dropresp").await;
        let before = max_offset(&e.client, &b.broker_addr, &e.topic).await;
        e.proxy
            .set_rule(RequestCode::SEND_MESSAGE_V2, Rule::DropResponse);
        let err = e
            .client
            .invoke(&e.via, send_request(&e.topic), Duration::from_millis(1500))
            .await
            .expect_err("the response is swallowed");
        assert!(err.is_timeout(), "{err:?}");
        // The broker stored it all the same.
        expect_max_offset(&e.client, &b.broker_addr, &e.topic, before + 1).await;

        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn close_rule_closes_the_connection() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_close").await;
        max_offset(&e.client, &e.via, &e.topic).await;
        e.proxy
            .set_rule(RequestCode::GET_MAX_OFFSET, Rule::CloseConnection);
        let err = e
            .client
            .invoke(&e.via, max_offset_request(&e.topic), CALL)
            .await
            .expect_err("the connection is closed");
        assert!(
            matches!(err, rmq_remoting::Error::ConnectionClosed { .. }),
            "{err:?}"
        );
        // Every new connection is closed again while the rule holds.
        let err = e
            .client
            .invoke(&e.via, max_offset_request(&e.topic), CALL)
            .await
            .expect_err("closed again");
        assert!(
            matches!(err, rmq_remoting::Error::ConnectionClosed { .. }),
            "{err:?}"
        );

        e.proxy.clear_all();
        max_offset(&e.client, &e.via, &e.topic).await;

        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn scoped_rules_apply_to_their_connections_only() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_scope").await;
        let code = RequestCode::GET_MAX_OFFSET;

        // Another broker's scope: no effect here.
        e.proxy.set_rule_in(
            Scope::Broker("127.0.0.1:1".into()),
            code,
            Rule::error(ResponseCode::SYSTEM_BUSY),
        );
        max_offset(&e.client, &e.via, &e.topic).await;

        // This broker's scope wins over the all-brokers rule.
        e.proxy
            .set_rule(code, Rule::error(ResponseCode::SYSTEM_ERROR));
        e.proxy.set_rule_in(
            Scope::Broker(b.broker_addr.clone()),
            code,
            Rule::error(ResponseCode::SERVICE_NOT_AVAILABLE),
        );
        let r = e
            .client
            .invoke(&e.via, max_offset_request(&e.topic), CALL)
            .await
            .unwrap();
        assert_eq!(r.response_code(), ResponseCode::SERVICE_NOT_AVAILABLE);
        e.proxy
            .clear_rule_in(&Scope::Broker(b.broker_addr.clone()), code);
        let r = e
            .client
            .invoke(&e.via, max_offset_request(&e.topic), CALL)
            .await
            .unwrap();
        assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);

        // Broker rules do not touch the name server, and vice versa.
        e.proxy
            .set_rule(RequestCode::GET_ROUTEINFO_BY_TOPIC, Rule::Drop);
        route_via(&e.client, &e.proxy, &e.topic).await;
        e.proxy.set_rule_in(
            Scope::NameServer,
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            Rule::error(ResponseCode::TOPIC_NOT_EXIST),
        );
        let r = admin::query_route(&e.client, e.proxy.namesrv_addr(), &e.topic)
            .await
            .unwrap();
        assert_eq!(r.response_code(), ResponseCode::TOPIC_NOT_EXIST);
        let r = e
            .client
            .invoke(&e.via, max_offset_request(&e.topic), CALL)
            .await
            .unwrap();
        assert_eq!(r.response_code(), ResponseCode::SYSTEM_ERROR);

        // Everywhere reaches both.
        e.proxy.clear_all();
        e.proxy.set_rule_in(
            Scope::Everywhere,
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
            Rule::error(ResponseCode::SYSTEM_BUSY),
        );
        let r = admin::query_route(&e.client, e.proxy.namesrv_addr(), &e.topic)
            .await
            .unwrap();
        assert_eq!(r.response_code(), ResponseCode::SYSTEM_BUSY);
        e.proxy.clear_all();
        route_via(&e.client, &e.proxy, &e.topic).await;
        max_offset(&e.client, &e.via, &e.topic).await;

        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn wait_for_requests_wakes_on_arrival_and_times_out() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_wait").await;
        let code = RequestCode::GET_MAX_OFFSET;
        e.proxy
            .set_rule(code, Rule::Delay(Duration::from_millis(200)));
        let calls = async {
            for _ in 0..5 {
                max_offset(&e.client, &e.via, &e.topic).await;
            }
        };
        let (seen, ()) = tokio::join!(
            e.proxy.wait_for_requests(code, 5, Duration::from_secs(30)),
            calls
        );
        assert_eq!(seen.unwrap(), 5);
        // Already satisfied: returns at once.
        assert_eq!(
            e.proxy
                .wait_for_requests(code, 3, Duration::ZERO)
                .await
                .unwrap(),
            5
        );

        let started = Instant::now();
        let err = e
            .proxy
            .wait_for_requests(code, 100, Duration::from_millis(300))
            .await
            .expect_err("only 5 arrive");
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(
            matches!(
                err,
                ProxyError::WaitTimeout {
                    wanted: 100,
                    seen: 5,
                    ..
                }
            ),
            "{err:?}"
        );

        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn broker_requests_reach_the_client() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_notify").await;
        let group = unique_name("proxy_notify_group");
        let (tx, mut rx) = mpsc::unbounded_channel();
        e.client.register_handler(
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED,
            std::sync::Arc::new(move |_addr: &str, req: RemotingCommand| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(req);
                    None
                }
            }),
        );
        let heartbeat = |client_id: &str| {
            let data = HeartbeatData {
                client_id: client_id.to_owned(),
                consumer_data_set: vec![ConsumerData {
                    group_name: group.clone(),
                    subscription_data_set: vec![SubscriptionData::build(
                        e.topic.clone(),
                        "*",
                        ExpressionType::Tag,
                        now_ms(),
                    )],
                    ..Default::default()
                }],
                ..Default::default()
            };
            RemotingCommand::request(RequestCode::HEART_BEAT, &EmptyHeader)
                .with_body(data.to_json_bytes().unwrap())
        };
        // This client registers through the proxy; a second one directly.
        e.client
            .invoke_expect(
                &e.via,
                heartbeat("127.0.0.1@proxy-a"),
                CALL,
                &[ResponseCode::SUCCESS],
            )
            .await
            .unwrap();
        let other = RemotingClient::new(ClientOptions::default());
        other
            .invoke_expect(
                &b.broker_addr,
                heartbeat("127.0.0.1@proxy-b"),
                CALL,
                &[ResponseCode::SUCCESS],
            )
            .await
            .unwrap();
        let notify = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let req = rx.recv().await.expect("handler alive");
                if req.ext_field("consumerGroup") == Some(group.as_str()) {
                    return req;
                }
            }
        })
        .await
        .expect("NOTIFY_CONSUMER_IDS_CHANGED reached the client through the proxy");
        assert_eq!(
            notify.request_code(),
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED
        );
        // Broker → client requests are not counted as client requests.
        assert_eq!(
            e.proxy
                .request_count(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED),
            0
        );

        other.shutdown().await;
        e.client.shutdown().await;
        e.proxy.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn disconnect_all_and_shutdown_close_everything() {
    let b = broker().await;
    within(async {
        let e = env(b, "proxy_shutdown").await;
        max_offset(&e.client, &e.via, &e.topic).await;
        assert_eq!(
            e.proxy.active_connections(),
            2,
            "name server and broker connections"
        );

        e.proxy.disconnect_all();
        let deadline = Instant::now() + Duration::from_secs(10);
        while e.proxy.active_connections() > 0 {
            assert!(Instant::now() < deadline, "connections still open");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The client sees the close and reconnects on its next call.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match e
                .client
                .invoke(&e.via, max_offset_request(&e.topic), CALL)
                .await
            {
                Ok(r) if r.response_code() == ResponseCode::SUCCESS => break,
                other => {
                    assert!(Instant::now() < deadline, "no reconnect: {other:?}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }

        let namesrv = e.proxy.namesrv_addr().to_owned();
        e.proxy.shutdown().await;
        assert_eq!(e.proxy.active_connections(), 0);
        assert!(tokio::net::TcpStream::connect(&namesrv).await.is_err());
        assert!(tokio::net::TcpStream::connect(&e.via).await.is_err());
        let err = e
            .client
            .invoke(&e.via, max_offset_request(&e.topic), CALL)
            .await
            .expect_err("the proxy is gone");
        assert!(
            !matches!(err, rmq_remoting::Error::Timeout { .. }),
            "fails fast, not by timeout: {err:?}"
        );
        assert!(matches!(
            e.proxy.proxy_broker("127.0.0.1:2"),
            Err(ProxyError::Shutdown)
        ));
        e.proxy.shutdown().await; // idempotent
        e.client.shutdown().await;
    })
    .await;
}
