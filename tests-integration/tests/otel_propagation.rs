//! OpenTelemetry context propagation (feature `opentelemetry`) through a real broker: the send
//! span's W3C `traceparent` travels in the message properties, and the push consumer's `process`
//! span continues that trace: the send span is its parent (one message per call) or a link (a
//! batch). Spans are read back from an in-memory exporter.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Value;
use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::trace::SpanData;
use rmq_producer::Message;
use rmq_tests_integration::consumer::{self, ConsumerSpec};
use rmq_tests_integration::{Env, Recorder, TEST_TIMEOUT, within};
use tracing::Instrument;

#[path = "support/otel.rs"]
mod otel;
use otel::{attr, exporter};

fn on_topic(span: &SpanData, name: &str, topic: &str) -> bool {
    span.name == name
        && attr(span, "messaging.destination.name")
            .map(Value::as_str)
            .as_deref()
            == Some(topic)
}

/// Waits until `done` holds for the finished spans, and returns them.
async fn spans_until(done: impl Fn(&[SpanData]) -> bool) -> Vec<SpanData> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let spans = exporter()
            .get_finished_spans()
            .unwrap_or_else(|e| panic!("in-memory exporter: {e}"));
        if done(&spans) {
            return spans;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the expected spans did not finish within 30 s; finished: {:?}; process spans: {:?}",
            spans.iter().map(|s| s.name.as_ref()).collect::<Vec<_>>(),
            spans
                .iter()
                .filter(|s| s.name == "process")
                .map(|s| &s.attributes)
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One message: the consumer's `process` span is a child of the producer's `send` span (same
/// trace, remote parent), which is itself a child of the application span around the send. The
/// producer is started inside that span too: the connections it opens are spans of their own, so
/// the application's span and the send span end while the producer still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_span_of_one_message_is_a_child_of_its_send_span() {
    exporter();
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("otel_one", 1).await;
        let group = rmq_testkit::unique_name("otel_one_cg");
        let checkout = tracing::info_span!("checkout");
        let (producer, sent) = async {
            let producer = env.producer().await;
            let sent = producer
                .send(Message::new(&topic, "order 1"))
                .await
                .expect("send");
            (producer, sent)
        }
        .instrument(checkout)
        .await;
        spans_until(|spans| {
            spans
                .iter()
                .filter(|s| on_topic(s, "send", &topic))
                .any(|send| {
                    spans.iter().any(|s| {
                        s.name == "checkout" && s.span_context.span_id() == send.parent_span_id
                    })
                })
        })
        .await;
        producer.shutdown().await.expect("producer shutdown");

        let rec = Arc::new(Recorder::new());
        let c = consumer::start(
            ConsumerSpec::new(env.namesrv(), &group, &topic),
            consumer::recording(rec.clone(), 0, |_, _| false),
        )
        .await;
        rec.wait_distinct(1, Duration::from_secs(60)).await;
        let carried = rec.with(|seen| {
            seen.deliveries[0]
                .msg
                .property(rmq_client_core::otel::TRACEPARENT)
                .map(str::to_owned)
        });
        let spans = spans_until(|spans| spans.iter().any(|s| on_topic(s, "process", &topic))).await;
        c.shutdown().await.expect("consumer shutdown");

        let send = spans
            .iter()
            .find(|s| on_topic(s, "send", &topic))
            .expect("the send span finished");
        let process = spans
            .iter()
            .find(|s| on_topic(s, "process", &topic))
            .expect("the process span finished");
        let app = spans
            .iter()
            .find(|s| s.span_context.span_id() == send.parent_span_id)
            .expect("the send span's parent is a finished span");
        assert_eq!(
            app.name, "checkout",
            "the send span runs inside the caller's span"
        );
        assert_eq!(
            carried.as_deref(),
            Some(rmq_client_core::otel::traceparent(&send.span_context).as_str()),
            "the message carries the send span's traceparent"
        );
        assert_ne!(send.span_context.trace_id(), TraceId::INVALID);
        assert_eq!(
            process.span_context.trace_id(),
            send.span_context.trace_id(),
            "one trace from producer to consumer"
        );
        assert_eq!(
            process.parent_span_id,
            send.span_context.span_id(),
            "the process span's parent is the send span"
        );
        assert!(
            process.parent_span_is_remote,
            "the parent came over the broker"
        );
        assert_eq!(
            attr(process, "messaging.message.id")
                .map(Value::as_str)
                .as_deref(),
            Some(sent.msg_id.as_str())
        );
        env.shutdown().await;
    })
    .await;
}

/// A batch: each message's `send` span is a link of the `process` span that consumed it, and a
/// batch call links every one of its messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_process_span_links_every_send_span() {
    exporter();
    within(TEST_TIMEOUT, async {
        const N: usize = 4;
        let env = Env::new().await;
        let topic = env.topic("otel_batch", 1).await;
        let group = rmq_testkit::unique_name("otel_batch_cg");
        let producer = env.producer().await;
        for i in 0..N {
            producer
                .send(Message::new(&topic, format!("order {i}")))
                .instrument(tracing::info_span!("checkout", order = i))
                .await
                .expect("send");
        }
        producer.shutdown().await.expect("producer shutdown");

        let rec = Arc::new(Recorder::new());
        let spec = ConsumerSpec::new(env.namesrv(), &group, &topic);
        let c = spec
            .builder()
            .consume_batch_max_size(N)
            .start(consumer::recording(rec.clone(), 0, |_, _| false))
            .await
            .expect("consumer starts");
        rec.wait_distinct(N, Duration::from_secs(60)).await;
        // `tracing` hands a `usize` field over as text.
        let count_of = |s: &SpanData| match attr(s, "messaging.batch.message_count") {
            Some(Value::I64(n)) => usize::try_from(*n).unwrap_or(0),
            Some(v) => v.as_str().parse().unwrap_or(0),
            None => 0,
        };
        let spans = spans_until(|spans| {
            spans
                .iter()
                .filter(|s| on_topic(s, "process", &topic))
                .map(count_of)
                .sum::<usize>()
                >= N
        })
        .await;
        c.shutdown().await.expect("consumer shutdown");

        let sends: HashSet<SpanId> = spans
            .iter()
            .filter(|s| on_topic(s, "send", &topic))
            .map(|s| s.span_context.span_id())
            .collect();
        assert_eq!(sends.len(), N, "one send span per message");
        let mut followed = HashSet::new();
        let mut batched = false;
        for p in spans.iter().filter(|s| on_topic(s, "process", &topic)) {
            let n = count_of(p);
            if n == 1 {
                followed.insert(p.parent_span_id);
            } else {
                batched = true;
                let links: Vec<SpanId> = p
                    .links
                    .links
                    .iter()
                    .map(|l| l.span_context.span_id())
                    .collect();
                assert_eq!(links.len(), n, "a batch of {n} links {n} send spans");
                followed.extend(links);
            }
        }
        assert!(
            batched,
            "the {N} stored messages were consumed in a batch call"
        );
        assert_eq!(
            followed, sends,
            "every send span is followed by the consumer"
        );
        env.shutdown().await;
    })
    .await;
}
