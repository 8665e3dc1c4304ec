//! rmq-remoting against the REAL Apache RocketMQ broker: route queries, raw
//! SEND_MESSAGE_V2 and PULL_MESSAGE decoded field by field, not-found and
//! offset-moved pulls, unsupported codes, and 200 concurrent invokes on one
//! connection.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::body::TopicRouteData;
use rmq_protocol::header::SendMessageResponseHeader;
use rmq_protocol::message::{CompressionType, decode_messages, property, sys_flag};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::Error;
use rmq_testkit::raw::{CALL, RawEnv, RawSend, now_ms, raw_pull, raw_send, send_request};
use rmq_testkit::{admin, unique_name};

const TEST_TIMEOUT: Duration = Duration::from_secs(120);

async fn max_offset(env: &RawEnv, topic: &str, queue_id: i32) -> i64 {
    rmq_testkit::raw::max_offset(&env.client, &env.broker, topic, queue_id).await
}

/// Ignored in the normal run: on RocketMQ 4.9.x the name server loses the registration of a
/// topic the broker auto-created when other topics are created at the same moment (in the full
/// suite, by the tests beside this one), and then never routes it: it skips every later
/// registration with the same topic-table version. The cause and the evidence are in
/// `tests-integration/tests/auto_created_route.rs`, which runs on both lines. `scripts/test.sh`
/// runs this test explicitly against 5.x, whose name server reads every topic it does not route
/// yet; route decoding itself is covered on 4.9.x by the golden frames and by every other test
/// here, which create their topics explicitly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "4.9.x name server loses an auto-created topic created beside others (tests-integration/tests/auto_created_route.rs); scripts/test.sh runs it on 5.x"]
async fn route_query_for_an_auto_created_topic() {
    tokio::time::timeout(TEST_TIMEOUT, async {
        let env = RawEnv::new().await;
        let topic = unique_name("auto");
        // Unknown topic: the name server says TOPIC_NOT_EXIST.
        let before = admin::query_route(&env.client, &env.namesrv, &topic)
            .await
            .unwrap();
        assert_eq!(before.response_code(), ResponseCode::TOPIC_NOT_EXIST);
        // A send with defaultTopic TBW102 makes the broker create the topic.
        // The broker registers it with the name server at once, or at its
        // next periodic registration (every 30 s) at the latest.
        raw_send(
            &env,
            &RawSend {
                topic: &topic,
                queue_id: 0,
                sys_flag: 0,
                flag: 0,
                born_timestamp: now_ms(),
                properties: HashMap::from([(property::WAIT.to_owned(), "true".to_owned())]),
                body: Bytes::from_static(b"auto"),
            },
        )
        .await;
        let response =
            admin::wait_for_route(&env.client, &env.namesrv, &topic, Duration::from_secs(45))
                .await
                .unwrap();
        let route = TopicRouteData::decode(&response.body).unwrap();
        let queue_data = route
            .queue_datas
            .iter()
            .find(|q| q.broker_name == env.broker_name)
            .expect("the topic's queues are on our broker");
        assert!(queue_data.read_queue_nums >= 1 && queue_data.write_queue_nums >= 1);
        assert_eq!(queue_data.perm & 6, 6, "readable and writable");
        let broker_data = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == env.broker_name)
            .expect("broker data");
        assert_eq!(broker_data.broker_addrs.get(&0), Some(&env.broker));
        let queues = route.subscribe_queues(&topic);
        assert_eq!(
            queues.len(),
            usize::try_from(queue_data.read_queue_nums).unwrap()
        );
        assert!(
            queues
                .iter()
                .all(|q| q.topic == topic && q.broker_name == env.broker_name)
        );
        env.client.shutdown().await;
    })
    .await
    .expect("test timed out");
}

struct Sent {
    props: HashMap<String, String>,
    body: Bytes,
    flag: i32,
    born: i64,
    response: SendMessageResponseHeader,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_v2_then_pull_back_field_by_field() {
    tokio::time::timeout(TEST_TIMEOUT, async {
        let env = RawEnv::new().await;
        let topic = env.topic("roundtrip", 2).await;
        let group = unique_name("roundtrip_g");

        let compressible: Bytes = "compress me please; ".repeat(600).into_bytes().into(); // 12 000 bytes
        let mebibyte: Bytes = (0..1024 * 1024)
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect::<Vec<_>>()
            .into();
        let cases: Vec<(HashMap<String, String>, Bytes, bool, i32)> = vec![
            (
                HashMap::from([
                    (property::TAGS.into(), "TagA".into()),
                    (property::KEYS.into(), "order-1 order-2".into()),
                    (
                        property::UNIQ_KEY.into(),
                        "7F0000010001000000000000000000A1".into(),
                    ),
                    (property::WAIT.into(), "true".into()),
                    ("color".into(), "blue".into()),
                    ("中文".into(), "值 ✓".into()),
                ]),
                Bytes::from_static(b"hello rocketmq"),
                false,
                0,
            ),
            (
                HashMap::from([
                    (property::TAGS.into(), "Big".into()),
                    (
                        property::UNIQ_KEY.into(),
                        "7F0000010001000000000000000000A2".into(),
                    ),
                ]),
                mebibyte,
                false,
                42,
            ),
            (
                HashMap::from([
                    (property::KEYS.into(), "zipped".into()),
                    (
                        property::UNIQ_KEY.into(),
                        "7F0000010001000000000000000000A3".into(),
                    ),
                ]),
                compressible,
                true,
                -7,
            ),
            (
                // No UNIQ_KEY: the application-visible id falls back to the offset id
                // (4.9.x), or is the one a 5.x broker generated.
                HashMap::from([(property::TAGS.into(), "NoId".into())]),
                Bytes::from_static(b"x"),
                false,
                0,
            ),
        ];
        let mut sent = Vec::new();
        for (i, (props, body, compress, flag)) in cases.into_iter().enumerate() {
            let born = now_ms() - 1000 + i64::try_from(i).unwrap();
            let (wire_body, sys) = if compress {
                (
                    CompressionType::Zlib.compress(&body, 5).unwrap(),
                    sys_flag::COMPRESSED | sys_flag::COMPRESSION_ZLIB,
                )
            } else {
                (body.clone(), 0)
            };
            let response = raw_send(
                &env,
                &RawSend {
                    topic: &topic,
                    queue_id: 1,
                    sys_flag: sys,
                    flag,
                    born_timestamp: born,
                    properties: props.clone(),
                    body: wire_body,
                },
            )
            .await;
            assert_eq!(response.queue_id, 1);
            assert_eq!(
                response.queue_offset,
                i64::try_from(i).unwrap(),
                "offsets are contiguous"
            );
            sent.push(Sent {
                props,
                body,
                flag,
                born,
                response,
            });
        }

        // Pull them back one by one (the 1 MiB message comes alone).
        let mut pulled = Vec::new();
        let mut offset = 0;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while pulled.len() < sent.len() {
            let (code, header, body) = raw_pull(&env, &group, &topic, 1, offset, 32).await;
            if code != ResponseCode::SUCCESS {
                // The consume queue is written asynchronously after the send
                // response; wait for the dispatch (no event to await).
                assert!(
                    std::time::Instant::now() < deadline,
                    "messages never became pullable: {code:?}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            assert_eq!(header.min_offset, 0);
            assert!(header.max_offset <= 4);
            let messages = decode_messages(&body).unwrap();
            assert!(!messages.is_empty());
            offset = header.next_begin_offset;
            pulled.extend(messages);
        }
        assert_eq!(pulled.len(), sent.len());
        for (i, (m, s)) in pulled.iter().zip(&sent).enumerate() {
            assert_eq!(m.topic, topic, "#{i} topic");
            assert_eq!(m.queue_id, 1, "#{i} queue id");
            assert_eq!(
                m.queue_offset,
                i64::try_from(i).unwrap(),
                "#{i} queue offset"
            );
            assert_eq!(m.body, s.body, "#{i} body (decompressed)");
            assert_eq!(m.flag, s.flag, "#{i} flag");
            assert_eq!(m.born_timestamp, s.born, "#{i} born timestamp");
            assert!(m.store_timestamp >= s.born, "#{i} store timestamp");
            assert_eq!(m.reconsume_times, 0);
            assert_eq!(
                m.sys_flag & sys_flag::COMPRESSED,
                0,
                "#{i} compressed bit cleared after decoding"
            );
            for (k, v) in &s.props {
                if k == property::WAIT {
                    continue; // 4.9.x brokers strip WAIT before storing; 5.x keep it
                }
                assert_eq!(m.property(k), Some(v.as_str()), "#{i} property {k}");
            }
            assert_eq!(
                m.offset_msg_id, s.response.msg_id,
                "#{i} offset msg id = send response msgId"
            );
            match s.props.get(property::UNIQ_KEY) {
                Some(id) => assert_eq!(&m.msg_id, id, "#{i} msg id is UNIQ_KEY"),
                None => assert!(!m.msg_id.is_empty()),
            }
            assert_eq!(m.store_host.to_string(), env.broker, "#{i} store host");
            assert_eq!(
                m.born_host.ip(),
                "127.0.0.1".parse::<IpAddr>().unwrap(),
                "#{i} born host"
            );
            assert_eq!(m.tags(), s.props.get(property::TAGS).map(String::as_str));
        }
        let keys: Vec<&str> = pulled[0].keys().collect();
        assert_eq!(keys, ["order-1", "order-2"]);
        assert_eq!(pulled[1].body.len(), 1024 * 1024);
        env.client.shutdown().await;
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_at_and_past_the_end() {
    tokio::time::timeout(TEST_TIMEOUT, async {
        let env = RawEnv::new().await;
        let topic = env.topic("end", 1).await;
        let group = unique_name("end_g");
        for i in 0..3 {
            raw_send(
                &env,
                &RawSend {
                    topic: &topic,
                    queue_id: 0,
                    sys_flag: 0,
                    flag: 0,
                    born_timestamp: now_ms(),
                    properties: HashMap::new(),
                    body: Bytes::from(format!("m{i}")),
                },
            )
            .await;
        }
        // The broker dispatches to the consume queue asynchronously: the
        // committed max offset may lag the send responses for a moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while max_offset(&env, &topic, 0).await < 3 {
            assert!(
                std::time::Instant::now() < deadline,
                "max offset never reached 3"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // At the end: nothing new.
        let (code, header, body) = raw_pull(&env, &group, &topic, 0, 3, 32).await;
        assert_eq!(code, ResponseCode::PULL_NOT_FOUND);
        assert_eq!(header.next_begin_offset, 3);
        assert_eq!(header.max_offset, 3);
        assert!(body.is_empty());
        // Far past the end: the offset is illegal and the broker says where to go.
        let (code, header, _) = raw_pull(&env, &group, &topic, 0, 1000, 32).await;
        assert_eq!(code, ResponseCode::PULL_OFFSET_MOVED);
        assert_eq!(header.next_begin_offset, 3);
        env.client.shutdown().await;
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_request_code_is_a_typed_error() {
    tokio::time::timeout(TEST_TIMEOUT, async {
        let env = RawEnv::new().await;
        let request = RemotingCommand::new_request(RequestCode(9999));
        let err = env
            .client
            .invoke_expect(&env.broker, request, CALL, &[ResponseCode::SUCCESS])
            .await
            .unwrap_err();
        match &err {
            Error::Response {
                code,
                remark,
                request,
                ..
            } => {
                assert_eq!(*code, ResponseCode::REQUEST_CODE_NOT_SUPPORTED);
                assert_eq!(*request, RequestCode(9999));
                let remark = remark.as_deref().unwrap_or_default();
                assert!(
                    remark.contains("9999") && remark.contains("not supported"),
                    "remark: {remark}"
                );
            }
            other => panic!("expected a response error, got {other:?}"),
        }
        assert_eq!(
            err.response_code(),
            Some(ResponseCode::REQUEST_CODE_NOT_SUPPORTED)
        );
        // The connection is still fine.
        assert!(max_offset(&env, "TBW102", 0).await >= 0);
        env.client.shutdown().await;
    })
    .await
    .expect("test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_invokes_on_one_connection() {
    tokio::time::timeout(TEST_TIMEOUT, async {
        let env = RawEnv::new().await;
        let topic = env.topic("concurrent", 4).await;
        let group = unique_name("concurrent_g");
        let connections_before = env.client.connection_count();
        let mut tasks = Vec::new();
        for i in 0..200_i32 {
            let client = env.client.clone();
            let broker = env.broker.clone();
            let topic = topic.clone();
            tasks.push(tokio::spawn(async move {
                let uniq = format!("{:032X}", 0x00C0_FFEE_0000_i64 + i64::from(i));
                let request = send_request(&RawSend {
                    topic: &topic,
                    queue_id: i % 4,
                    sys_flag: 0,
                    flag: i,
                    born_timestamp: now_ms(),
                    properties: HashMap::from([(property::UNIQ_KEY.to_owned(), uniq.clone())]),
                    body: Bytes::from(format!("body-{i}")),
                });
                let response = client
                    .invoke_expect(&broker, request, CALL, &[ResponseCode::SUCCESS])
                    .await
                    .expect("send");
                let header: SendMessageResponseHeader = response.decode_header().expect("header");
                (i, uniq, header)
            }));
        }
        let mut by_position = HashMap::new();
        for t in tasks {
            let (i, uniq, header) = t.await.unwrap();
            assert_eq!(
                header.queue_id,
                i % 4,
                "response {i} matched to its own request"
            );
            assert!(
                by_position
                    .insert((header.queue_id, header.queue_offset), (i, uniq))
                    .is_none()
            );
        }
        assert_eq!(
            env.client.connection_count(),
            connections_before,
            "no new connection"
        );
        // Every (queue, offset) a response named holds exactly the message of that request.
        let mut seen = HashSet::new();
        let mut offsets = [0_i64; 4];
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while seen.len() < 200 {
            // The consume queues are written asynchronously after the send
            // responses, so keep pulling until everything is visible.
            assert!(
                std::time::Instant::now() < deadline,
                "only {} of 200 pulled",
                seen.len()
            );
            let mut progressed = false;
            for queue_id in 0..4_i32 {
                let slot = &mut offsets[usize::try_from(queue_id).unwrap()];
                let (code, header, body) =
                    raw_pull(&env, &group, &topic, queue_id, *slot, 32).await;
                if code != ResponseCode::SUCCESS {
                    continue;
                }
                for m in decode_messages(&body).unwrap() {
                    let (i, uniq) = by_position
                        .get(&(queue_id, m.queue_offset))
                        .expect("a response named this slot");
                    assert_eq!(&m.msg_id, uniq);
                    assert_eq!(m.body, Bytes::from(format!("body-{i}")));
                    assert_eq!(m.flag, *i);
                    assert!(seen.insert(*i), "message {i} delivered twice");
                }
                *slot = header.next_begin_offset;
                progressed = true;
            }
            if !progressed {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        assert_eq!(seen.len(), 200);
        env.client.shutdown().await;
    })
    .await
    .expect("test timed out");
}
