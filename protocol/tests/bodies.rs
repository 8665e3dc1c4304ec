//! JSON bodies: the broker's exact (and non-standard) texts, our encodings,
//! and the lenient reader's robustness.

use std::collections::BTreeSet;

use proptest::prelude::*;
use rmq_protocol::body::lenient_json::{self, MAX_DEPTH};
use rmq_protocol::body::*;
use rmq_protocol::{Error, MessageQueue};
use serde_json::{Value, json};

/// The non-standard route answer of a 5.x name server (reference doc 3.2).
const ROUTE_NON_STANDARD: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"172.17.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;

fn queues(list: &[MessageQueue]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

#[test]
fn route_non_standard_from_the_reference() {
    let route = TopicRouteData::decode(ROUTE_NON_STANDARD.as_bytes()).unwrap();
    assert_eq!(route.order_topic_conf, None);
    assert_eq!(route.broker_datas.len(), 1);
    let bd = &route.broker_datas[0];
    assert_eq!(bd.broker_name, "broker-a");
    assert_eq!(bd.cluster, "DefaultCluster");
    assert_eq!(bd.master_addr(), Some("172.17.0.2:10911"));
    assert_eq!(bd.broker_addrs.len(), 1);
    assert!(!bd.enable_acting_master);
    assert_eq!(
        route.queue_datas,
        [QueueData {
            broker_name: "broker-a".into(),
            perm: 6,
            read_queue_nums: 4,
            topic_sys_flag: 0,
            write_queue_nums: 4,
        }]
    );
    assert!(route.filter_server_table.is_empty());
    let expected = [
        "T1@broker-a#0",
        "T1@broker-a#1",
        "T1@broker-a#2",
        "T1@broker-a#3",
    ];
    assert_eq!(queues(&route.publish_queues("T1")), expected);
    assert_eq!(queues(&route.subscribe_queues("T1")), expected);
}

#[test]
fn route_standard_equals_non_standard() {
    let standard = ROUTE_NON_STANDARD.replace(r#"{0:"#, r#"{"0":"#);
    assert!(serde_json::from_str::<Value>(&standard).is_ok());
    assert!(serde_json::from_str::<Value>(ROUTE_NON_STANDARD).is_err());
    assert_eq!(
        TopicRouteData::decode(standard.as_bytes()).unwrap(),
        TopicRouteData::decode(ROUTE_NON_STANDARD.as_bytes()).unwrap()
    );
}

#[test]
fn route_with_slaves_static_topic_and_unknown_keys() {
    let text = r#"{
        "orderTopicConf": null,
        "brokerDatas": [
            {"brokerAddrs": {1: "10.0.0.2:10911", 0: "10.0.0.1:10911"}, "brokerName": "b", "cluster": "C",
             "zoneName": "z1", "somethingNew": [1, 2]}
        ],
        "queueDatas": [{"brokerName": "b", "perm": 6, "readQueueNums": 2, "writeQueueNums": 1, "topicSysFlag": 3}],
        "topicQueueMappingByBroker": {"b": {"currIdMap": {0: 0, 1: 1}, "bname": "b"}}
    }"#;
    let route = TopicRouteData::decode(text.as_bytes()).unwrap();
    let bd = route.broker("b").unwrap();
    assert_eq!(bd.broker_addrs.keys().copied().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(bd.zone_name.as_deref(), Some("z1"));
    assert_eq!(route.queue_datas[0].topic_sys_flag, 3);
    assert_eq!(queues(&route.publish_queues("T")), ["T@b#0"]);
    assert_eq!(queues(&route.subscribe_queues("T")), ["T@b#0", "T@b#1"]);
}

#[test]
fn route_old_topic_syn_flag() {
    let text = r#"{"brokerDatas":[],"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSynFlag":7,"writeQueueNums":4}]}"#;
    let route = TopicRouteData::decode(text.as_bytes()).unwrap();
    assert_eq!(route.queue_datas[0].topic_sys_flag, 7);
    // Both spellings: the new one wins (and no duplicate-field error).
    let both = text.replace(
        r#""topicSynFlag":7"#,
        r#""topicSynFlag":7,"topicSysFlag":9"#,
    );
    assert_eq!(
        TopicRouteData::decode(both.as_bytes()).unwrap().queue_datas[0].topic_sys_flag,
        9
    );
    // Without a broker master, nothing is publishable.
    assert!(route.publish_queues("T").is_empty());
    // Encoding uses the new name and is standard JSON that decodes back.
    let bytes = route.to_json_bytes().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(r#""topicSysFlag":7"#), "{text}");
    assert!(!text.contains("topicSynFlag"), "{text}");
    assert_eq!(TopicRouteData::decode(&bytes).unwrap(), route);
}

#[test]
fn route_encoding_is_standard_json() {
    let route = TopicRouteData::decode(ROUTE_NON_STANDARD.as_bytes()).unwrap();
    let bytes = route.to_json_bytes().unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        v["brokerDatas"][0]["brokerAddrs"],
        json!({"0": "172.17.0.2:10911"})
    );
    assert_eq!(TopicRouteData::decode(&bytes).unwrap(), route);
}

#[test]
fn route_errors_are_typed() {
    for bad in [
        &b""[..],
        b"[]",
        b"{\"queueDatas\":{}}",
        b"{\"brokerDatas\":[{\"brokerAddrs\":{x:\"a\"}}]}",
    ] {
        let err = TopicRouteData::decode(bad).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidBody {
                    what: "TopicRouteData",
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[test]
fn cluster_info() {
    let text = r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"172.17.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}"#;
    let info = ClusterInfo::decode(text.as_bytes()).unwrap();
    assert_eq!(
        info.broker_addr_table["broker-a"].master_addr(),
        Some("172.17.0.2:10911")
    );
    assert_eq!(info.cluster_addr_table["DefaultCluster"], ["broker-a"]);
    assert_eq!(ClusterInfo::decode(b"{}").unwrap(), ClusterInfo::default());
}

/// The heartbeat example of reference doc 3.3.
const HEARTBEAT_DOC: &str = r#"{"clientID":"10.0.0.5@12345#8845","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"G1","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1727000000000,"tagsSet":["TagA"],"topic":"T1"},{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1727000000000,"tagsSet":[],"topic":"%RETRY%G1"}],"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[],"withoutSub":false}"#;

fn heartbeat_example() -> HeartbeatData {
    let v = 1_727_000_000_000;
    HeartbeatData {
        client_id: "10.0.0.5@12345#8845".into(),
        consumer_data_set: vec![ConsumerData {
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            consume_type: ConsumeType::ConsumePassively,
            group_name: "G1".into(),
            message_model: MessageModel::Clustering,
            subscription_data_set: vec![
                SubscriptionData::build("T1", "TagA", ExpressionType::Tag, v),
                SubscriptionData::build("%RETRY%G1", "*", ExpressionType::Tag, v),
            ],
            unit_mode: false,
        }],
        heartbeat_fingerprint: 0,
        producer_data_set: vec![],
        without_sub: false,
    }
}

#[test]
fn heartbeat_matches_the_reference_byte_for_byte() {
    let hb = heartbeat_example();
    let bytes = hb.to_json_bytes().unwrap();
    assert_eq!(String::from_utf8(bytes.clone()).unwrap(), HEARTBEAT_DOC);
    assert_eq!(HeartbeatData::decode(HEARTBEAT_DOC.as_bytes()).unwrap(), hb);
    assert_eq!(HeartbeatData::decode(&bytes).unwrap(), hb);
}

#[test]
fn heartbeat_with_producers_and_go_style_code_set() {
    let mut hb = heartbeat_example();
    hb.producer_data_set = vec![
        ProducerData {
            group_name: "PG".into(),
        },
        ProducerData {
            group_name: "CLIENT_INNER_PRODUCER".into(),
        },
    ];
    let text = String::from_utf8(hb.to_json_bytes().unwrap()).unwrap();
    assert!(text.contains(
        r#""producerDataSet":[{"groupName":"PG"},{"groupName":"CLIENT_INNER_PRODUCER"}]"#
    ));
    // The Go client sends the hashes as strings; decoding accepts that.
    let go = HEARTBEAT_DOC.replace("[2598919]", r#"["2598919"]"#);
    assert_eq!(
        HeartbeatData::decode(go.as_bytes()).unwrap(),
        heartbeat_example()
    );
    // Missing keys take defaults.
    let minimal = HeartbeatData::decode(br#"{"clientID":"c"}"#).unwrap();
    assert_eq!(minimal.client_id, "c");
    assert!(minimal.consumer_data_set.is_empty());
}

#[test]
fn consumer_list() {
    let body =
        ConsumerListBody::decode(br#"{"consumerIdList":["10.0.0.5@1#2","10.0.0.6@3#4"]}"#).unwrap();
    assert_eq!(body.consumer_id_list, ["10.0.0.5@1#2", "10.0.0.6@3#4"]);
    assert_eq!(
        ConsumerListBody::decode(b"{}")
            .unwrap()
            .consumer_id_list
            .len(),
        0
    );
}

#[test]
fn lock_bodies() {
    let req = LockBatchRequestBody {
        client_id: "c1".into(),
        consumer_group: "G".into(),
        mq_set: BTreeSet::from([
            MessageQueue::new("T1", "broker-a", 1),
            MessageQueue::new("T1", "broker-a", 0),
        ]),
        only_this_broker: false,
    };
    let bytes = req.to_json_bytes().unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        v,
        json!({
            "clientId": "c1",
            "consumerGroup": "G",
            "mqSet": [
                {"brokerName": "broker-a", "queueId": 0, "topic": "T1"},
                {"brokerName": "broker-a", "queueId": 1, "topic": "T1"}
            ],
            "onlyThisBroker": false
        })
    );
    let unlock: UnlockBatchRequestBody = LockBatchRequestBody::decode(&bytes).unwrap();
    assert_eq!(unlock, req);

    let resp = LockBatchResponseBody::decode(
        br#"{"lockOKMQSet":[{"brokerName":"broker-a","queueId":0,"topic":"T1"}]}"#,
    )
    .unwrap();
    assert_eq!(
        resp.lock_ok_mq_set,
        BTreeSet::from([MessageQueue::new("T1", "broker-a", 0)])
    );
    assert!(
        LockBatchResponseBody::decode(b"{}")
            .unwrap()
            .lock_ok_mq_set
            .is_empty()
    );
    let text = String::from_utf8(resp.to_json_bytes().unwrap()).unwrap();
    assert!(text.starts_with(r#"{"lockOKMQSet":["#), "{text}");
}

#[test]
fn reset_offset_map_form() {
    let text = r#"{"offsetTable":{{"brokerName":"broker-b","queueId":0,"topic":"T"}:1024,{"brokerName":"broker-a","queueId":1,"topic":"T"}:"2048",{"topic":"T","queueId":0,"brokerName":"broker-a"}:0}}"#;
    let body = ResetOffsetBody::decode(text.as_bytes()).unwrap();
    assert_eq!(
        body.offset_table,
        [
            (MessageQueue::new("T", "broker-a", 0), 0),
            (MessageQueue::new("T", "broker-a", 1), 2048),
            (MessageQueue::new("T", "broker-b", 0), 1024),
        ]
    );
    // Our writer produces the same non-standard form, which reads back.
    let bytes = body.to_json_bytes().unwrap();
    let written = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        written
            .starts_with(r#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:0,"#),
        "{written}"
    );
    assert_eq!(ResetOffsetBody::decode(&bytes).unwrap(), body);
}

#[test]
fn reset_offset_list_form() {
    let text = r#"{"offsetTable":[{"brokerName":"broker-a","offset":7,"queueId":3,"topic":"T"},{"topic":"T","brokerName":"broker-a","queueId":2,"offset":5}]}"#;
    let body = ResetOffsetBody::decode(text.as_bytes()).unwrap();
    assert_eq!(
        body.offset_table,
        [
            (MessageQueue::new("T", "broker-a", 2), 5),
            (MessageQueue::new("T", "broker-a", 3), 7)
        ]
    );
    let bytes = body.to_json_bytes_list_form().unwrap();
    assert!(serde_json::from_slice::<Value>(&bytes).is_ok());
    assert_eq!(ResetOffsetBody::decode(&bytes).unwrap(), body);
}

#[test]
fn reset_offset_edge_cases() {
    assert!(
        ResetOffsetBody::decode(b"{}")
            .unwrap()
            .offset_table
            .is_empty()
    );
    assert!(
        ResetOffsetBody::decode(br#"{"offsetTable":{}}"#)
            .unwrap()
            .offset_table
            .is_empty()
    );
    assert!(
        ResetOffsetBody::decode(br#"{"offsetTable":null}"#)
            .unwrap()
            .offset_table
            .is_empty()
    );
    for bad in [
        &br#"{"offsetTable":{"x":1}}"#[..],
        br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:"x"}}"#,
        br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:1.5}}"#,
        br#"{"offsetTable":[{"topic":"t"}]}"#,
        br#"{"offsetTable":3}"#,
        b"[]",
        b"{",
    ] {
        let err = ResetOffsetBody::decode(bad).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidBody {
                    what: "ResetOffsetBody",
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for n in [MAX_DEPTH + 1, 10_000, 1_000_000] {
        let text = format!("{}{}", "[".repeat(n), "]".repeat(n));
        let err = lenient_json::parse(text.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("nesting deeper"), "{err}");
        let obj = r#"{"a":"#.repeat(n);
        assert!(lenient_json::parse(obj.as_bytes()).is_err());
        assert!(TopicRouteData::decode(obj.as_bytes()).is_err());
    }
}

/// Arbitrary standard JSON values.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::btree_map(any::<String>(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Text built from JSON-ish pieces, to reach deep into the reader.
fn jsonish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(":".to_owned()),
        Just(",".to_owned()),
        Just("\"".to_owned()),
        Just("\\u".to_owned()),
        Just("\\ud83d".to_owned()),
        Just("-1.5e3".to_owned()),
        Just("0".to_owned()),
        Just("true".to_owned()),
        Just(" ".to_owned()),
        Just("\"k\"".to_owned()),
        any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..64).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn lenient_reader_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = lenient_json::parse(&bytes);
        let _ = TopicRouteData::decode(&bytes);
        let _ = ResetOffsetBody::decode(&bytes);
        let _ = HeartbeatData::decode(&bytes);
    }

    #[test]
    fn lenient_reader_never_panics_on_jsonish_text(text in jsonish()) {
        if let Err(e) = lenient_json::parse(text.as_bytes()) {
            let typed = matches!(e, Error::InvalidBody { .. });
            prop_assert!(typed, "untyped error: {}", e);
        }
        let _ = ResetOffsetBody::decode(text.as_bytes());
        let _ = ConsumerRunningInfo::decode(text.as_bytes());
    }

    #[test]
    fn lenient_reader_agrees_with_serde_json_on_standard_json(v in json_value()) {
        let compact = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(&lenient_json::parse(compact.as_bytes()).unwrap(), &v);
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        prop_assert_eq!(&lenient_json::parse(pretty.as_bytes()).unwrap(), &v);
    }

    #[test]
    fn number_keys_become_decimal_strings(keys in proptest::collection::btree_set(any::<i64>(), 0..8)) {
        let text = format!(
            "{{{}}}",
            keys.iter().map(|k| format!("{k}:\"v{k}\"")).collect::<Vec<_>>().join(",")
        );
        let v = lenient_json::parse(text.as_bytes()).unwrap();
        let obj = v.as_object().unwrap();
        prop_assert_eq!(obj.len(), keys.len());
        for k in &keys {
            prop_assert_eq!(obj.get(&k.to_string()), Some(&json!(format!("v{k}"))));
        }
    }

    #[test]
    fn reset_offset_round_trips(
        entries in proptest::collection::btree_map(
            ("[a-zA-Z0-9_%-]{1,12}", "[a-zA-Z0-9_-]{1,12}", 0i32..64),
            any::<i64>(),
            0..16,
        )
    ) {
        let body = ResetOffsetBody {
            offset_table: entries
                .into_iter()
                .map(|((t, b, q), o)| (MessageQueue::new(t, b, q), o))
                .collect::<std::collections::BTreeMap<_, _>>()
                .into_iter()
                .collect(),
        };
        prop_assert_eq!(&ResetOffsetBody::decode(&body.to_json_bytes().unwrap()).unwrap(), &body);
        prop_assert_eq!(&ResetOffsetBody::decode(&body.to_json_bytes_list_form().unwrap()).unwrap(), &body);
    }
}
