//! Golden vectors: whole response frames captured from the REAL Apache
//! RocketMQ name server and broker (5.x and 4.9.x) by
//! `scripts/capture-golden.py`, decoded here and checked field by field
//! against what the capture sent (`<prefix>-manifest.json`). See
//! `tests/data/README.md`.

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use rmq_protocol::body::TopicRouteData;
use rmq_protocol::header::PullMessageResponseHeader;
use rmq_protocol::message::{decode_messages, offset_msg_id, property, sys_flag};
use rmq_protocol::{RemotingCodec, RemotingCommand, ResponseCode, SerializeType};
use serde_json::Value;
use tokio_util::codec::Decoder;

const PREFIXES: [&str; 2] = ["v5", "v4"];

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn frame(prefix: &str, name: &str) -> RemotingCommand {
    let path = data(&format!("{prefix}-{name}.bin"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut buf = BytesMut::from(&bytes[..]);
    let cmd = RemotingCodec::new()
        .decode(&mut buf)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .expect("a whole frame");
    assert!(buf.is_empty(), "{name}: exactly one frame");
    assert!(cmd.is_response());
    assert_eq!(cmd.serialize_type, SerializeType::Json);
    cmd
}

fn manifest(prefix: &str) -> Value {
    let text = std::fs::read_to_string(data(&format!("{prefix}-manifest.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn route_frames_decode_in_both_json_forms() {
    for prefix in PREFIXES {
        let m = manifest(prefix);
        let topic = m["topic"].as_str().unwrap();
        for (name, standard) in [("route-nonstandard", false), ("route-standard", true)] {
            let cmd = frame(prefix, name);
            assert_eq!(
                cmd.response_code(),
                ResponseCode::SUCCESS,
                "{prefix} {name}"
            );
            let text = String::from_utf8_lossy(&cmd.body);
            assert_eq!(
                text.contains("{0:\""),
                !standard,
                "{prefix} {name}: key form in {text}"
            );
            assert!(
                serde_json::from_slice::<Value>(&cmd.body).is_ok() == standard,
                "{prefix} {name}: strict JSON parse"
            );
            let route = TopicRouteData::decode(&cmd.body)
                .unwrap_or_else(|e| panic!("{prefix} {name}: {e}"));
            assert_eq!(route.queue_datas.len(), 1);
            let q = &route.queue_datas[0];
            assert_eq!(q.broker_name, "broker-a");
            assert_eq!((q.read_queue_nums, q.write_queue_nums, q.perm), (4, 4, 6));
            assert_eq!(route.broker_datas.len(), 1);
            let b = &route.broker_datas[0];
            assert_eq!(b.broker_name, "broker-a");
            assert_eq!(b.cluster, "DefaultCluster");
            assert_eq!(
                b.broker_addrs.get(&0).map(String::as_str),
                m["broker"].as_str()
            );
            let queues = route.publish_queues(topic);
            assert_eq!(queues.len(), 4);
            assert_eq!(route.subscribe_queues(topic).len(), 4);
        }
    }
}

#[test]
fn pull_frame_decodes_field_by_field() {
    for prefix in PREFIXES {
        let m = manifest(prefix);
        let topic = m["topic"].as_str().unwrap();
        let sent = m["messages"].as_array().unwrap();
        let cmd = frame(prefix, "pull-found");
        assert_eq!(cmd.response_code(), ResponseCode::SUCCESS);
        let header: PullMessageResponseHeader = cmd.decode_header().unwrap();
        assert_eq!(header.next_begin_offset, i64::try_from(sent.len()).unwrap());
        assert_eq!(header.min_offset, 0);
        assert_eq!(header.max_offset, i64::try_from(sent.len()).unwrap());
        assert_eq!(header.suggest_which_broker_id, 0);

        let body: Bytes = cmd.body.clone();
        let messages = decode_messages(&body).unwrap();
        assert_eq!(messages.len(), sent.len(), "{prefix}");
        for (msg, expect) in messages.iter().zip(sent) {
            let what = format!("{prefix} message #{}", expect["index"]);
            assert_eq!(msg.topic, topic, "{what}");
            assert_eq!(msg.queue_id, 0, "{what}");
            assert_eq!(
                msg.queue_offset,
                expect["queue_offset"].as_i64().unwrap(),
                "{what}"
            );
            assert_eq!(
                msg.flag,
                i32::try_from(expect["flag"].as_i64().unwrap()).unwrap(),
                "{what}"
            );
            assert_eq!(
                msg.born_timestamp,
                expect["born_timestamp"].as_i64().unwrap(),
                "{what}"
            );
            assert_eq!(
                msg.body,
                expect["body_text"].as_str().unwrap().as_bytes(),
                "{what}: body"
            );
            assert_eq!(
                msg.sys_flag & sys_flag::COMPRESSED,
                0,
                "{what}: decompressed"
            );
            assert_eq!(msg.reconsume_times, 0);
            assert_eq!(
                Some(msg.store_host.to_string().as_str()),
                m["broker"].as_str(),
                "{what}"
            );
            assert!(msg.born_host.ip().is_loopback(), "{what}");
            assert!(msg.store_timestamp > msg.born_timestamp, "{what}");
            assert_eq!(
                msg.offset_msg_id,
                expect["offset_msg_id"].as_str().unwrap(),
                "{what}"
            );
            assert_eq!(
                msg.offset_msg_id,
                offset_msg_id(msg.store_host, msg.commit_log_offset)
            );
            for (k, v) in expect["properties_sent"].as_object().unwrap() {
                if k == property::WAIT && prefix == "v4" {
                    // 4.9.x brokers drop WAIT before storing; 5.x keeps it.
                    assert_eq!(msg.property(k), None, "{what}: 4.9.x strips WAIT");
                    continue;
                }
                assert_eq!(msg.property(k), v.as_str(), "{what}: property {k}");
            }
            // The broker adds its cluster name.
            assert_eq!(
                msg.property(property::CLUSTER),
                Some("DefaultCluster"),
                "{what}"
            );
            match expect["properties_sent"].get("UNIQ_KEY") {
                Some(id) => assert_eq!(
                    msg.msg_id,
                    id.as_str().unwrap(),
                    "{what}: msg id = UNIQ_KEY"
                ),
                None => {
                    // 5.x brokers generate a UNIQ_KEY, 4.9.x leave the offset id.
                    let expected = msg
                        .property(property::UNIQ_KEY)
                        .unwrap_or(&msg.offset_msg_id);
                    assert_eq!(msg.msg_id, expected, "{what}: msg id fallback");
                }
            }
        }
        assert_eq!(messages[0].tags(), Some("TagA"));
        assert_eq!(messages[0].keys().collect::<Vec<_>>(), ["key-1", "key-2"]);
        assert_eq!(messages[0].property("中文"), Some("值"));
    }
}

#[test]
fn pull_past_the_end_is_not_found() {
    for prefix in PREFIXES {
        let m = manifest(prefix);
        let cmd = frame(prefix, "pull-not-found");
        assert_eq!(
            cmd.code,
            i32::try_from(m["pull_not_found_code"].as_i64().unwrap()).unwrap()
        );
        assert_eq!(
            cmd.response_code(),
            ResponseCode::PULL_NOT_FOUND,
            "{prefix}"
        );
        let header: PullMessageResponseHeader = cmd.decode_header().unwrap();
        assert_eq!(header.next_begin_offset, 4);
        assert!(cmd.body.is_empty());
    }
}
