//! Every message kind rmq's producer sends, and raw sends the producer does
//! not make (V1 header, no `UNIQ_KEY`, refused ones): the send answers and
//! what a pull reads back.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use rmq_fake::BrokerFlavor;
use rmq_producer::{Message, Producer, SendResult, select_by_hash};
use rmq_protocol::header::{CommandHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2};
use rmq_protocol::message::{CompressionType, encode_properties, property};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::obs;
use crate::support::{Labels, Obs, Target, answer, describe, flavor, run};

fn result(r: &SendResult, labels: &Labels, t: &Target) -> String {
    let offset_id = match rmq_protocol::message::parse_offset_msg_id(
        r.offset_msg_id.split(',').next().unwrap_or(""),
    ) {
        Ok((host, _)) if host.to_string() == t.broker => "ok",
        _ => "BAD",
    };
    format!(
        "{:?} id={} offset-id={offset_id} queue={}#{} @{} region={} trace={} tx={:?}",
        r.status,
        labels.of(&r.msg_id),
        r.message_queue.topic,
        r.message_queue.queue_id,
        r.queue_offset,
        r.region_id,
        r.trace_on,
        r.transaction_id.as_deref().map(|t| labels.of(t)),
    )
}

async fn producer(t: &Target, group: &str, codec: Option<CompressionType>) -> Producer {
    let mut b = Producer::builder()
        .group(group)
        .client_config(t.config(&format!("{group}_i")));
    if let Some(c) = codec {
        b = b.compression_type(c);
    }
    b.start().await.expect("producer starts")
}

fn raw_send(
    topic: &str,
    queue_id: i32,
    props: &[(&str, &str)],
    body: &'static [u8],
    v1: bool,
) -> RemotingCommand {
    let properties: HashMap<String, String> = props
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let h = SendMessageRequestHeader {
        producer_group: "diff_raw_pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 3,
        properties: Some(encode_properties(&properties)),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(false),
        broker_name: None,
    };
    let cmd = if v1 {
        RemotingCommand::request(RequestCode::SEND_MESSAGE, &h)
    } else {
        let v2 = SendMessageRequestHeaderV2::from(h);
        let mut cmd = RemotingCommand::new_request(RequestCode::SEND_MESSAGE_V2);
        v2.write_to(&mut cmd.ext_fields);
        cmd
    };
    cmd.with_body(Bytes::from_static(body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_kind_is_stored_and_read_back_alike() {
    let topic = rmq_testkit::unique_name("diff_send");
    let single = rmq_testkit::unique_name("diff_send1");
    let auto_topic = rmq_testkit::unique_name("diff_auto");
    let group = rmq_testkit::unique_name("diff_send_pg");
    run("send", |t| {
        let (topic, single, auto_topic, group) = (
            topic.clone(),
            single.clone(),
            auto_topic.clone(),
            group.clone(),
        );
        async move {
            let mut o = Obs::default();
            let labels = Labels::default();
            // Sends whose queue the producer picks go to a one-queue topic, so
            // every placement is the same on both sides.
            t.topic(&topic, 4).await;
            t.topic(&single, 1).await;
            let p = producer(&t, &group, None).await;
            let big = "RocketMQ differential body. ".repeat(200);
            let plain = Message::new(&topic, "plain")
                .with_tags("TagA")
                .with_keys(["k1", "k2"])
                .with_property("color", "blue")
                .with_property("中文", "值")
                .with_flag(7);
            let sends = vec![
                ("plain", p.send_to_queue(plain, &t.mq(&topic, 0)).await),
                (
                    "zlib",
                    p.send_to_queue(
                        Message::new(&topic, big.clone()).with_tags("big"),
                        &t.mq(&topic, 0),
                    )
                    .await,
                ),
                (
                    "selector",
                    p.send_with_selector(
                        Message::new(&topic, "by key"),
                        select_by_hash("order-42"),
                    )
                    .await,
                ),
                (
                    "batch",
                    p.send_batch(vec![
                        Message::new(&single, "b0").with_tags("B"),
                        Message::new(&single, "b1").with_keys(["bk"]),
                        Message::new(&single, "b2").with_flag(2),
                    ])
                    .await,
                ),
                (
                    "delayed",
                    p.send_to_queue(
                        Message::new(&topic, "later")
                            .with_delay_level(2)
                            .with_tags("D"),
                        &t.mq(&topic, 3),
                    )
                    .await,
                ),
            ];
            for (i, (name, r)) in sends.into_iter().enumerate() {
                let r = r.unwrap_or_else(|e| panic!("{:?} {name}: {e}", t.side));
                for (j, id) in r.msg_id.split(',').enumerate() {
                    labels.add(id, format!("m{i}.{j}"));
                }
                if name == "delayed" {
                    // Its offset is in the schedule queue, which every test on the
                    // real broker shares: not comparable.
                    obs!(
                        o,
                        "{name}: {:?} queue#{}",
                        r.status,
                        r.message_queue.queue_id
                    );
                } else {
                    obs!(o, "{name}: {}", result(&r, &labels, &t));
                }
            }
            for codec in [CompressionType::Lz4, CompressionType::Zstd] {
                let pc = producer(&t, &format!("{group}_{}", codec.name()), Some(codec)).await;
                let r = pc
                    .send(Message::new(&single, big.clone()).with_tags("c"))
                    .await
                    .expect("compressed send");
                labels.add(&r.msg_id, codec.name());
                obs!(o, "{}: {}", codec.name(), result(&r, &labels, &t));
                pc.shutdown().await.expect("producer shutdown");
            }
            p.send_oneway(Message::new(&single, "oneway").with_tags("O"))
                .await
                .expect("oneway");
            // A producer's first send to an unknown topic creates it from TBW102.
            let r = p
                .send(Message::new(&auto_topic, "auto"))
                .await
                .expect("auto topic");
            labels.add(&r.msg_id, "auto");
            obs!(o, "auto: {:?} queue-offset={}", r.status, r.queue_offset);
            // Its queue count, asked of the broker: a 4.9.x broker may register
            // the new topic with the name server only at its next periodic
            // registration (up to 30 s later).
            for q in [3, 4] {
                let pull = rmq_protocol::header::PullMessageRequestHeader {
                    consumer_group: "diff_auto_reader".into(),
                    topic: auto_topic.clone(),
                    queue_id: q,
                    max_msg_nums: 1,
                    sys_flag: rmq_protocol::header::pull_sys_flag::SUBSCRIPTION,
                    subscription: Some("*".into()),
                    expression_type: Some("TAG".into()),
                    ..Default::default()
                };
                let a = t
                    .call(RemotingCommand::request(RequestCode::PULL_MESSAGE, &pull))
                    .await;
                obs!(o, "auto topic, pull of queue {q}: code={}", a.code);
            }
            p.shutdown().await.expect("producer shutdown");

            // Raw sends: V1 names, no UNIQ_KEY (5.x adds one, 4.9.x does not).
            let v1 = t
                .call(raw_send(
                    &topic,
                    2,
                    &[(property::TAGS, "raw"), (property::WAIT, "true")],
                    b"raw v1",
                    true,
                ))
                .await;
            obs!(
                o,
                "raw v1: {}",
                answer(&v1, &["queueId", "queueOffset", "MSG_REGION", "TRACE_ON"])
            );
            let refused = [
                ("queue 99", raw_send(&topic, 99, &[], b"x", false)),
                ("bad name", raw_send("bad topic", 0, &[], b"x", false)),
                (
                    "system topic",
                    raw_send("SCHEDULE_TOPIC_XXXX", 0, &[], b"x", false),
                ),
            ];
            for (name, cmd) in refused {
                let a = t.call(cmd).await;
                obs!(
                    o,
                    "raw {name}: code={} region={:?}",
                    a.code,
                    a.ext_field("MSG_REGION")
                );
            }

            // Read everything back: the delayed message after its (1 s) level,
            // the oneway one whenever it landed.
            let selector_queue = rmq_producer::hash_index("order-42", 4);
            let mut want = [2usize, 0, 1, 1];
            want[selector_queue] += 1;
            for (q, n) in want.iter().enumerate() {
                let q = i32::try_from(q).unwrap();
                for m in t.pull_until(&topic, q, *n, Duration::from_secs(20)).await {
                    obs!(o, "{q}: {}", describe(&m, &t, &labels));
                }
            }
            for m in t.pull_until(&single, 0, 6, Duration::from_secs(20)).await {
                obs!(o, "single: {}", describe(&m, &t, &labels));
            }
            let (code, msgs) = t
                .raw_pull_until_found(
                    &auto_topic,
                    r.message_queue.queue_id,
                    Duration::from_secs(20),
                )
                .await;
            obs!(o, "auto: code={code}");
            for m in msgs {
                obs!(o, "auto: {}", describe(&m, &t, &labels));
            }
            let _ = (flavor(), BrokerFlavor::V5);
            t.shutdown().await;
            o
        }
    })
    .await;
}
