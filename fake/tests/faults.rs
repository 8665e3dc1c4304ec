//! The fake's fault rules, broker lifecycle and clock, at the protocol level
//! (a raw `RemotingClient`), and the binary.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_fake::{Action, FakeCluster, Fault, FlushPolicy};
use rmq_protocol::body::{
    ConsumerData, ExpressionType, HeartbeatData, LockBatchRequestBody, LockBatchResponseBody,
    SubscriptionData,
};
use rmq_protocol::header::{
    GetMaxOffsetRequestHeader, SendMessageRequestHeaderV2, UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::message::{encode_properties, property};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{ClientOptions, Error, RemotingClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CALL: Duration = Duration::from_secs(5);

fn client() -> RemotingClient {
    RemotingClient::new(ClientOptions::default())
}

fn max_offset(topic: &str) -> RemotingCommand {
    let h = GetMaxOffsetRequestHeader {
        topic: topic.into(),
        queue_id: 0,
        committed: Some(true),
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::GET_MAX_OFFSET, &h)
}

fn send(topic: &str, body: &'static str) -> RemotingCommand {
    let mut props = HashMap::new();
    props.insert(property::TAGS.to_owned(), "t".to_owned());
    let h = SendMessageRequestHeaderV2 {
        producer_group: "faults_pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        born_timestamp: 1,
        properties: Some(encode_properties(&props)),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, &h)
        .with_body(Bytes::from_static(body.as_bytes()))
}

fn heartbeat(client_id: &str, group: &str, topic: &str) -> RemotingCommand {
    let hb = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.into(),
            subscription_data_set: vec![SubscriptionData::build(
                topic,
                "*",
                ExpressionType::Tag,
                1,
            )],
            ..Default::default()
        }],
        ..Default::default()
    };
    RemotingCommand::new_request(RequestCode::HEART_BEAT).with_body(hb.to_json_bytes().unwrap())
}

fn lock(client_id: &str, group: &str, topic: &str) -> RemotingCommand {
    let body = LockBatchRequestBody {
        client_id: client_id.into(),
        consumer_group: group.into(),
        mq_set: [rmq_protocol::MessageQueue::new(topic, "broker-a", 0)]
            .into_iter()
            .collect(),
        only_this_broker: false,
    };
    RemotingCommand::new_request(RequestCode::LOCK_BATCH_MQ)
        .with_body(body.to_json_bytes().unwrap())
}

async fn code(c: &RemotingClient, addr: &str, cmd: RemotingCommand) -> i32 {
    c.invoke(addr, cmd, CALL).await.unwrap().code
}

/// The max offset of queue 0. The first call after a broker restart may still meet the
/// connection to the stopped broker: closed before the request was written (a retry-safe
/// error), or, when the client had not yet seen the close, after it was written into the dead
/// socket. A max-offset query changes nothing, so either way it asks once more, on a new
/// connection.
async fn offset_of(c: &RemotingClient, addr: &str, topic: &str) -> i64 {
    let a = match c.invoke(addr, max_offset(topic), CALL).await {
        Ok(a) => a,
        Err(first) => c
            .invoke(addr, max_offset(topic), CALL)
            .await
            .unwrap_or_else(|e| panic!("max offset of {topic}: {e} (first attempt: {first})")),
    };
    a.ext_field("offset").unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_drop_close_and_intercept() {
    let cluster = FakeCluster::builder().topic("f_t").start().await.unwrap();
    let addr = cluster.first_broker().addr();
    let c = client();

    let id = cluster.add_fault(Fault::on(
        RequestCode::GET_MAX_OFFSET,
        Action::Delay(Duration::from_millis(300)),
    ));
    let t = Instant::now();
    c.invoke(&addr, max_offset("f_t"), CALL).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    assert!(cluster.clear_fault(id));

    cluster.add_fault(Fault::on(RequestCode::GET_MAX_OFFSET, Action::Drop).times(1));
    let e = c
        .invoke(&addr, max_offset("f_t"), Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e}");
    c.invoke(&addr, max_offset("f_t"), CALL)
        .await
        .expect("the rule ran out");

    cluster.add_fault(Fault::on(RequestCode::GET_MAX_OFFSET, Action::CloseConnection).times(1));
    let e = c.invoke(&addr, max_offset("f_t"), CALL).await.unwrap_err();
    assert!(matches!(e, Error::ConnectionClosed { .. }), "{e}");
    c.invoke(&addr, max_offset("f_t"), CALL)
        .await
        .expect("a new connection works");

    // The work is done, the answer lost.
    cluster.add_fault(Fault::on(RequestCode::SEND_MESSAGE_V2, Action::DropResponse).times(1));
    let e = c
        .invoke(
            &addr,
            send("f_t", "lost answer"),
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert!(e.is_timeout());
    assert_eq!(offset_of(&c, &addr, "f_t").await, 1);

    cluster.add_fault(
        Fault::on(
            RequestCode::SEND_MESSAGE_V2,
            Action::DelayResponse(Duration::from_millis(200)),
        )
        .times(1),
    );
    let t = Instant::now();
    let a = c
        .invoke(&addr, send("f_t", "late answer"), CALL)
        .await
        .unwrap();
    assert_eq!(a.code, 0);
    assert!(t.elapsed() >= Duration::from_millis(200));

    cluster.add_fault(
        Fault::on(
            RequestCode::GET_MAX_OFFSET,
            Action::intercept(|req| {
                Some(
                    RemotingCommand::new_response(ResponseCode::SUCCESS, None).with_ext_field(
                        "offset",
                        req.ext_field("topic").map_or(0, str::len).to_string(),
                    ),
                )
            }),
        )
        .broker("broker-a"),
    );
    assert_eq!(
        offset_of(&c, &addr, "f_t").await,
        3,
        "answered by the intercept"
    );
    cluster.clear_faults();
    assert_eq!(offset_of(&c, &addr, "f_t").await, 2);

    cluster.add_fault(Fault::on(
        RequestCode::GET_MAX_OFFSET,
        Action::error_with(ResponseCode::SYSTEM_BUSY, "later"),
    ));
    let a = c.invoke(&addr, max_offset("f_t"), CALL).await.unwrap();
    assert_eq!((a.code, a.remark.as_deref()), (2, Some("later")));
    assert!(cluster.request_count(RequestCode::GET_MAX_OFFSET) >= 7);
    cluster
        .wait_for_requests(RequestCode::SEND_MESSAGE_V2, 2, Duration::from_secs(1))
        .await
        .unwrap();
    assert!(
        cluster
            .wait_for_requests(RequestCode::SEND_MESSAGE_V2, 99, Duration::from_millis(50))
            .await
            .is_err()
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_connection_faults_and_a_partition() {
    let cluster = FakeCluster::builder()
        .brokers(2)
        .topic("p_t")
        .start()
        .await
        .unwrap();
    let a_addr = cluster.broker("broker-a").unwrap().addr();
    let b_addr = cluster.broker("broker-b").unwrap().addr();
    let (one, two) = (client(), client());
    one.invoke(&a_addr, heartbeat("10.0.0.1@one", "p_g", "p_t"), CALL)
        .await
        .unwrap();
    two.invoke(&a_addr, heartbeat("10.0.0.2@two", "p_g", "p_t"), CALL)
        .await
        .unwrap();
    let conns = cluster.connections();
    let one_conn = conns
        .iter()
        .find(|c| c.client_id.as_deref() == Some("10.0.0.1@one"))
        .expect("attributed by its heartbeat");
    cluster.add_fault(Fault::any(Action::error(ResponseCode::SYSTEM_BUSY)).connection(one_conn.id));
    assert_eq!(code(&one, &a_addr, max_offset("p_t")).await, 2);
    assert_eq!(code(&two, &a_addr, max_offset("p_t")).await, 0);
    cluster.clear_faults();

    // Partition "one" from broker-b: its heartbeat there is swallowed (the
    // rule applies to the request that names the client), broker-a is fine.
    let id = cluster.partition("10.0.0.1@one", "broker-b").unwrap();
    let e = one
        .invoke(
            &b_addr,
            heartbeat("10.0.0.1@one", "p_g", "p_t"),
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert!(
        one.invoke(&b_addr, max_offset("p_t"), Duration::from_millis(300))
            .await
            .unwrap_err()
            .is_timeout()
    );
    assert_eq!(code(&one, &a_addr, max_offset("p_t")).await, 0);
    assert_eq!(code(&two, &b_addr, max_offset("p_t")).await, 0);
    cluster.clear_fault(id);
    assert_eq!(code(&one, &b_addr, max_offset("p_t")).await, 0, "healed");
    assert!(cluster.partition("x", "broker-z").is_err());
    assert_eq!(cluster.disconnect_client("10.0.0.2@two"), 1);
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_loses_what_was_not_flushed_a_kill_does_not() {
    let cluster = FakeCluster::builder()
        .topic("c_t")
        .flush(FlushPolicy::Manual)
        .start()
        .await
        .unwrap();
    let broker = cluster.first_broker().clone();
    let addr = broker.addr();
    let c = client();
    c.invoke(&addr, heartbeat("10.0.0.3@c", "c_g", "c_t"), CALL)
        .await
        .unwrap();
    for body in ["a", "b", "c"] {
        assert_eq!(
            c.invoke(&addr, send("c_t", body), CALL).await.unwrap().code,
            0
        );
    }
    let commit = |offset| {
        let h = UpdateConsumerOffsetRequestHeader {
            consumer_group: "c_g".into(),
            topic: "c_t".into(),
            queue_id: 0,
            commit_offset: offset,
            broker_name: None,
        };
        RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, &h)
    };
    c.invoke(&addr, commit(2), CALL).await.unwrap();
    broker.flush();
    for body in ["d", "e"] {
        c.invoke(&addr, send("c_t", body), CALL).await.unwrap();
    }
    c.invoke(&addr, commit(5), CALL).await.unwrap();

    broker.kill().await.unwrap();
    assert!(
        c.invoke(&addr, max_offset("c_t"), Duration::from_millis(500))
            .await
            .is_err()
    );
    broker.restart().await.unwrap();
    assert_eq!(
        offset_of(&c, &addr, "c_t").await,
        5,
        "a kill keeps what was stored"
    );
    assert_eq!(broker.committed_offset("c_g", "c_t", 0), Some(5));
    assert!(
        broker.consumer_ids("c_g").is_empty(),
        "registrations are gone"
    );

    broker.crash().await.unwrap();
    broker.restart().await.unwrap();
    assert_eq!(
        offset_of(&c, &addr, "c_t").await,
        3,
        "a crash loses the unflushed"
    );
    assert_eq!(broker.committed_offset("c_g", "c_t", 0), Some(2));
    let bodies: Vec<Bytes> = broker
        .messages("c_t")
        .into_iter()
        .map(|m| m.message.body)
        .collect();
    assert_eq!(bodies, ["a", "b", "c"]);
    // The lost offsets are used again.
    c.invoke(&addr, send("c_t", "f"), CALL).await.unwrap();
    assert_eq!(broker.max_offset("c_t", 0), 4);
    assert!(broker.kill().await.is_ok());
    assert!(broker.kill().await.is_err(), "not running");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_and_client_expiry_follow_the_clock() {
    let cluster = FakeCluster::builder().topic("l_t").start().await.unwrap();
    let broker = cluster.first_broker().clone();
    let addr = broker.addr();
    let (one, two) = (client(), client());
    let locked = |a: RemotingCommand| {
        LockBatchResponseBody::decode(&a.body)
            .unwrap()
            .lock_ok_mq_set
            .len()
    };
    assert_eq!(
        locked(
            one.invoke(&addr, lock("one", "l_g", "l_t"), CALL)
                .await
                .unwrap()
        ),
        1
    );
    assert_eq!(
        locked(
            two.invoke(&addr, lock("two", "l_g", "l_t"), CALL)
                .await
                .unwrap()
        ),
        0
    );
    cluster.clock().advance(Duration::from_secs(61));
    assert_eq!(
        locked(
            two.invoke(&addr, lock("two", "l_g", "l_t"), CALL)
                .await
                .unwrap()
        ),
        1,
        "expired lease taken over"
    );
    let mq = rmq_protocol::MessageQueue::new("l_t", "broker-a", 0);
    assert_eq!(broker.lock_holder("l_g", &mq).as_deref(), Some("two"));

    one.invoke(&addr, heartbeat("10.0.0.4@one", "l_g", "l_t"), CALL)
        .await
        .unwrap();
    assert_eq!(broker.consumer_ids("l_g"), ["10.0.0.4@one"]);
    cluster.clock().advance(Duration::from_secs(121));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !broker.consumer_ids("l_g").is_empty() {
        assert!(Instant::now() < deadline, "the silent client is expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_frame_closes_only_its_connection() {
    let cluster = FakeCluster::builder().topic("b_t").start().await.unwrap();
    let addr = cluster.first_broker().addr();
    let mut raw = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // A length prefix, then a header word announcing serialize type 9.
    raw.write_all(&[0, 0, 0, 8, 9, 0, 0, 0, 1, 2, 3, 4])
        .await
        .unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(CALL, raw.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0, "the connection is closed");
    let c = client();
    assert_eq!(code(&c, &addr, max_offset("b_t")).await, 0);
    let mut huge = tokio::net::TcpStream::connect(&addr).await.unwrap();
    huge.write_all(&[0x7F, 0xFF, 0xFF, 0xFF]).await.unwrap();
    let n = tokio::time::timeout(CALL, huge.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0, "an oversized frame closes the connection");
    assert_eq!(code(&c, &addr, max_offset("b_t")).await, 0);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_until_killed() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_rmq-fake"))
        .args(["--port", "0", "--brokers", "2", "--topic", "bin_t"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("rmq-fake runs");
    let mut out = child.stdout.take().unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + Duration::from_secs(30);
    while !text.contains("broker-b") {
        assert!(Instant::now() < deadline, "no address printed: {text:?}");
        let n = tokio::time::timeout(Duration::from_secs(30), out.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "exited early: {text:?}");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let namesrv = text
        .lines()
        .find_map(|l| l.strip_prefix("export NAMESRV_ADDR="))
        .expect("NAMESRV_ADDR printed")
        .to_owned();
    let c = client();
    let route = rmq_testkit::admin::query_route(&c, &namesrv, "bin_t")
        .await
        .unwrap();
    let route = rmq_protocol::body::TopicRouteData::decode(&route.body).unwrap();
    assert_eq!(route.broker_datas.len(), 2);
    c.shutdown().await;
    child.kill().await.unwrap();
}
