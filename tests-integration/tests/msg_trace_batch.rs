//! RocketMQ message trace and the `send` span of batches: `send_batch` and auto-batched sends
//! (`ProducerBuilder::batching`) write one `Pub` record per message (its id, offset id, keys,
//! tags and body length, the batch's start and cost) that `mqadmin queryMsgTraceById` of each
//! message finds, and one `send` span per request (`messaging.batch.message_count` = its
//! messages). Spans are read back from an in-memory OpenTelemetry exporter.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::Value;
use opentelemetry_sdk::trace::SpanData;
use rmq_client_core::now_ms;
use rmq_producer::{Message, Producer, SendResult};
use rmq_protocol::trace::{PubRecord, TRACE_TOPIC, TraceRecord, decode, msg_type};
use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, within};

#[path = "support/otel.rs"]
mod otel;
use otel::{attr, exporter};

/// The finished `send` spans of `topic`.
fn send_spans(topic: &str) -> Vec<SpanData> {
    exporter()
        .get_finished_spans()
        .unwrap_or_else(|e| panic!("in-memory exporter: {e}"))
        .into_iter()
        .filter(|s| {
            s.name == "send"
                && attr(s, "messaging.destination.name")
                    .map(Value::as_str)
                    .as_deref()
                    == Some(topic)
        })
        .collect()
}

/// An integer attribute (tracing records a `usize` field as an integer, or as its text when
/// the OpenTelemetry layer maps it so).
fn int_attr(span: &SpanData, key: &str) -> Option<i64> {
    match attr(span, key)? {
        Value::I64(v) => Some(*v),
        Value::String(s) => s.as_str().parse().ok(),
        other => panic!("{key} is {other:?}"),
    }
}

/// `mqadmin queryMsgTraceById -i ID` of the running instance.
async fn query_trace(msg_id: &str) -> String {
    let out = tokio::process::Command::new(rmq_testkit::script_path())
        .args(["admin", "queryMsgTraceById", "-i", msg_id])
        .output()
        .await
        .expect("scripts/rocketmq-local.sh admin runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `Pub` records of the trace topic about `ids`, by message id, once every id has one.
async fn pub_records(env: &Env, ids: &[String]) -> HashMap<String, Vec<PubRecord>> {
    poll_until(
        Duration::from_secs(60),
        Duration::from_millis(500),
        "a Pub record of every message in the trace topic",
        || async {
            let mut by_id: HashMap<String, Vec<PubRecord>> = HashMap::new();
            for q in 0..8 {
                for m in env.pull_all(TRACE_TOPIC, q).await {
                    let body = String::from_utf8_lossy(&m.message.body).into_owned();
                    let records = decode(&body)
                        .unwrap_or_else(|e| panic!("trace records decode: {e}: {body:?}"));
                    for r in records {
                        if let TraceRecord::Pub(p) = r {
                            if ids.contains(&p.msg_id) {
                                by_id.entry(p.msg_id.clone()).or_default().push(p);
                            }
                        }
                    }
                }
            }
            if ids.iter().all(|id| by_id.contains_key(id)) {
                Ok(by_id)
            } else {
                Err(by_id.keys().cloned().collect::<Vec<_>>())
            }
        },
    )
    .await
}

/// The message `i` of a test: its own tags, keys and body length.
fn message(topic: &str, i: usize) -> Message {
    Message::new(topic, "b".repeat(10 + i))
        .with_tags(format!("Tag{i}"))
        .with_keys([format!("bk-{i}"), format!("bk2-{i}")])
}

/// Checks the one `Pub` record of each message against what was sent and answered, and that
/// the records of one batch share its start and cost, within `call` (the wall clock, ms, before
/// and after the send calls). `sent[i]` is the message, `results[i]` its own result (id and
/// offset id).
fn check_records(
    records: &HashMap<String, Vec<PubRecord>>,
    sent: &[Message],
    results: &[SendResult],
    group: &str,
    call: (i64, i64),
) -> PubRecord {
    let mut first: Option<PubRecord> = None;
    for (msg, result) in sent.iter().zip(results) {
        let of_msg = records.get(&result.msg_id).cloned().unwrap_or_default();
        assert_eq!(
            of_msg.len(),
            1,
            "one Pub record of {}: {of_msg:?}",
            result.msg_id
        );
        let p = &of_msg[0];
        assert_eq!(
            (p.group.as_str(), p.topic.as_str()),
            (group, msg.topic.as_str())
        );
        assert_eq!(Some(p.tags.as_str()), msg.tags(), "{p:?}");
        assert_eq!(p.keys, msg.keys().collect::<Vec<_>>().join(" "), "{p:?}");
        assert_eq!(
            usize::try_from(p.body_length).ok(),
            Some(msg.body.len()),
            "{p:?}"
        );
        assert_eq!(p.offset_msg_id, result.offset_msg_id, "{p:?}");
        assert!(!p.offset_msg_id.contains(','), "{p:?}");
        assert_eq!(p.msg_type, msg_type::NORMAL, "{p:?}");
        assert!(p.success && !p.store_host.is_empty(), "{p:?}");
        let (before, after) = call;
        assert!(
            p.timestamp >= before && p.cost_time >= 0 && p.timestamp + p.cost_time <= after,
            "start and cost within the send call ({before}..{after} ms): {p:?}"
        );
        match &first {
            None => first = Some(p.clone()),
            Some(f) => assert_eq!(
                (p.timestamp, p.cost_time),
                (f.timestamp, f.cost_time),
                "the batch's start and cost on every record"
            ),
        }
    }
    first.expect("at least one message")
}

/// `queryMsgTraceById` of `id` shows its one `Pub` row: the group, the batch's cost.
async fn check_tool_output(id: &str, group: &str, cost: i64) {
    let out = poll_until(
        Duration::from_secs(60),
        Duration::from_millis(500),
        "queryMsgTraceById shows the Pub row",
        || async {
            let out = query_trace(id).await;
            if out.contains("\nPub ") && out.contains(group) {
                Ok(out)
            } else {
                Err(out)
            }
        },
    )
    .await;
    println!("{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("Pub ")).collect();
    assert_eq!(rows.len(), 1, "one Pub row of {id}: {out}");
    let cols: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(cols.get(1), Some(&group), "{out}");
    assert!(cols.contains(&format!("{cost}ms").as_str()), "{out}");
    assert_eq!(cols.last(), Some(&"success"), "{out}");
}

async fn traced_producer(env: &Env, group: &str, batching: bool) -> Producer {
    let mut b = Producer::builder()
        .group(group)
        .namesrv_addr(env.namesrv().to_owned())
        .enable_trace(true);
    if batching {
        // Every message of the test in one batch: flushed when full, long before the linger.
        b = b.batching(Duration::from_secs(5), N, 64 * 1024);
    }
    b.start().await.expect("producer starts")
}

const N: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_batch_writes_a_pub_record_per_message_and_one_span() {
    exporter();
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("trace_batch", 2).await;
        let pg = rmq_testkit::unique_name("trace_batch_pg");
        let producer = traced_producer(&env, &pg, false).await;
        let msgs: Vec<Message> = (0..N).map(|i| message(&topic, i)).collect();
        let before = now_ms();
        let result = producer.send_batch(msgs.clone()).await.expect("batch sent");
        let call = (before, now_ms());
        producer.shutdown().await.expect("producer shutdown");

        let ids: Vec<String> = result.msg_id.split(',').map(str::to_owned).collect();
        let offset_ids: Vec<&str> = result.offset_msg_id.split(',').collect();
        assert_eq!((ids.len(), offset_ids.len()), (N, N), "{result:?}");
        let results: Vec<SendResult> = ids
            .iter()
            .zip(&offset_ids)
            .map(|(id, off)| SendResult {
                msg_id: id.clone(),
                offset_msg_id: (*off).to_owned(),
                ..result.clone()
            })
            .collect();
        let records = pub_records(&env, &ids).await;
        let first = check_records(&records, &msgs, &results, &pg, call);
        check_tool_output(&ids[N - 1], &pg, first.cost_time).await;

        let spans = send_spans(&topic);
        assert_eq!(spans.len(), 1, "one send span per batch: {spans:?}");
        assert_eq!(
            int_attr(&spans[0], "messaging.batch.message_count"),
            Some(i64::try_from(N).expect("small"))
        );
        assert_eq!(
            attr(&spans[0], "messaging.message.id")
                .map(Value::as_str)
                .as_deref(),
            Some(result.msg_id.as_str())
        );
        env.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_batched_sends_write_a_pub_record_per_message_and_one_span() {
    exporter();
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("trace_autobatch", 2).await;
        let pg = rmq_testkit::unique_name("trace_autobatch_pg");
        let producer = traced_producer(&env, &pg, true).await;
        let msgs: Vec<Message> = (0..N).map(|i| message(&topic, i)).collect();
        let before = now_ms();
        let results: Vec<SendResult> =
            futures::future::join_all(msgs.iter().map(|m| producer.send(m.clone())))
                .await
                .into_iter()
                .map(|r| r.expect("auto-batched send"))
                .collect();
        let call = (before, now_ms());
        producer.shutdown().await.expect("producer shutdown");
        // One batch: consecutive offsets of one queue.
        let q = &results[0].message_queue;
        for (i, r) in results.iter().enumerate() {
            assert_eq!(&r.message_queue, q, "{results:?}");
            assert_eq!(
                r.queue_offset,
                results[0].queue_offset + i64::try_from(i).expect("small")
            );
        }

        let ids: Vec<String> = results.iter().map(|r| r.msg_id.clone()).collect();
        let records = pub_records(&env, &ids).await;
        let first = check_records(&records, &msgs, &results, &pg, call);
        check_tool_output(&ids[0], &pg, first.cost_time).await;

        let spans = send_spans(&topic);
        assert_eq!(spans.len(), 1, "one send span per flushed batch: {spans:?}");
        assert_eq!(
            int_attr(&spans[0], "messaging.batch.message_count"),
            Some(i64::try_from(N).expect("small"))
        );
        assert_eq!(
            attr(&spans[0], "messaging.rocketmq.send.result")
                .map(Value::as_str)
                .as_deref(),
            Some("SEND_OK")
        );
        env.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the 5.x proxy (RMQ_PROXY_ENDPOINT): scripts/test.sh runs it on 5.x"]
async fn a_grpc_batch_has_one_send_span() {
    exporter();
    within(TEST_TIMEOUT, async {
        let topic = rmq_testkit::grpc::typed_topic("GrpcTraceBatch", "NORMAL").await;
        let producer = rmq_testkit::grpc::grpc_producer("grpc_trace_batch").await;
        let msgs: Vec<Message> = (0..N).map(|i| message(&topic, i)).collect();
        let result = producer.send_batch(msgs).await.expect("gRPC batch sent");
        producer.shutdown().await.expect("producer shutdown");
        assert_eq!(result.msg_id.split(',').count(), N, "{result:?}");
        let spans = send_spans(&topic);
        assert_eq!(spans.len(), 1, "one send span per batch: {spans:?}");
        assert_eq!(
            int_attr(&spans[0], "messaging.batch.message_count"),
            Some(i64::try_from(N).expect("small"))
        );
        assert_eq!(
            attr(&spans[0], "messaging.message.id")
                .map(Value::as_str)
                .as_deref(),
            Some(result.msg_id.as_str())
        );
    })
    .await;
}
