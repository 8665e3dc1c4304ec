//! The producer's metrics and `send` span: one place the send methods call
//! (names and labels: the table in `METRICS.md` at the repository root).
//!
//! Metric handles are built once per topic and kept in a copy-on-write map
//! (a lock-free read per send, no allocation); the recorder installed when
//! a topic's first send happens is the one its handles report to.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use metrics::{Counter, Histogram};
use rmq_client_core::{SendResult, SendStatus};
use tracing::{Span, field};

use crate::send::Outcome;

/// Counter: messages sent, labels topic and [`RESULT`].
pub const SENT_MESSAGES: &str = "messaging.client.sent.messages";
/// Histogram (seconds): one send call from start to answer (all attempts),
/// labels topic, operation `send` and [`RESULT`].
pub const OPERATION_DURATION: &str = "messaging.client.operation.duration";
/// Counter: attempts after the first (retries), label topic.
pub const SEND_RETRIES: &str = "messaging.rocketmq.producer.send.retries";
/// Counter: a broker isolated by the latency fault tolerance after a failed
/// attempt (Java `MQFaultStrategy`), label broker.
pub const BROKER_ISOLATIONS: &str = "messaging.rocketmq.producer.broker.isolations";
/// Label: the destination topic (OpenTelemetry `messaging.destination.name`).
pub const DESTINATION: &str = "messaging.destination.name";
/// Label: `ok` (stored), `error` (failed send).
pub const RESULT: &str = "messaging.rocketmq.send.result";
/// Label: the operation (`send`).
pub const OPERATION: &str = "messaging.operation.name";
/// Label: the broker name.
pub const BROKER: &str = "messaging.rocketmq.broker.name";

/// The handles of one topic.
#[derive(Debug)]
struct TopicHandles {
    sent_ok: Counter,
    sent_error: Counter,
    duration_ok: Histogram,
    duration_error: Histogram,
    retries: Counter,
}

impl TopicHandles {
    fn new(topic: &str) -> Self {
        let t = topic.to_owned();
        TopicHandles {
            sent_ok: metrics::counter!(SENT_MESSAGES, DESTINATION => t.clone(), RESULT => "ok"),
            sent_error: metrics::counter!(SENT_MESSAGES, DESTINATION => t.clone(), RESULT => "error"),
            duration_ok: metrics::histogram!(OPERATION_DURATION, DESTINATION => t.clone(), OPERATION => "send", RESULT => "ok"),
            duration_error: metrics::histogram!(OPERATION_DURATION, DESTINATION => t.clone(), OPERATION => "send", RESULT => "error"),
            retries: metrics::counter!(SEND_RETRIES, DESTINATION => t),
        }
    }
}

/// Per-topic handles of one producer.
#[derive(Debug, Default)]
pub(crate) struct SendMetrics {
    topics: ArcSwap<HashMap<String, Arc<TopicHandles>>>,
}

impl SendMetrics {
    fn handles(&self, topic: &str) -> Arc<TopicHandles> {
        if let Some(h) = self.topics.load().get(topic) {
            return h.clone();
        }
        let made = Arc::new(TopicHandles::new(topic));
        self.topics.rcu(|map| {
            let mut map = HashMap::clone(map);
            map.entry(topic.to_owned()).or_insert_with(|| made.clone());
            map
        });
        self.topics.load().get(topic).cloned().unwrap_or(made)
    }

    /// Starts observing one send of `messages` messages to `topic`: its
    /// span (`send`) and clock.
    pub(crate) fn start(&self, topic: &str, messages: usize) -> SendObservation {
        let span = tracing::info_span!(
            "send",
            messaging.system = "rocketmq",
            messaging.operation.name = "send",
            "messaging.operation.type" = "send",
            messaging.destination.name = topic,
            messaging.batch.message_count = messages,
            messaging.rocketmq.broker.name = field::Empty,
            messaging.destination.partition.id = field::Empty,
            messaging.message.id = field::Empty,
            messaging.rocketmq.send.attempts = field::Empty,
            messaging.rocketmq.send.result = field::Empty,
            "error.type" = field::Empty,
        );
        SendObservation {
            handles: self.handles(topic),
            span,
            started: Instant::now(),
            messages: u64::try_from(messages).unwrap_or(u64::MAX),
        }
    }
}

/// Writes the trace context of `span` into `msgs` (feature
/// `opentelemetry`; nothing otherwise).
#[inline]
pub(crate) fn propagate(span: &Span, msgs: &mut [rmq_protocol::Message]) {
    #[cfg(feature = "opentelemetry")]
    rmq_client_core::otel::inject(span, msgs);
    #[cfg(not(feature = "opentelemetry"))]
    let _ = (span, msgs);
}

/// A broker isolated after a failed attempt (rare: labels built here).
pub(crate) fn broker_isolated(broker: &str) {
    metrics::counter!(BROKER_ISOLATIONS, BROKER => broker.to_owned()).increment(1);
}

/// One send in progress.
#[derive(Debug)]
pub(crate) struct SendObservation {
    handles: Arc<TopicHandles>,
    span: Span,
    started: Instant,
    messages: u64,
}

/// What the span records of a send's answer.
pub(crate) trait Answer {
    /// The result to record, when there is one (oneway sends have none).
    fn sent(&self) -> Option<&SendResult>;
}

impl Answer for SendResult {
    fn sent(&self) -> Option<&SendResult> {
        Some(self)
    }
}

impl Answer for () {
    fn sent(&self) -> Option<&SendResult> {
        None
    }
}

fn status_name(s: SendStatus) -> &'static str {
    match s {
        SendStatus::SendOk => "SEND_OK",
        SendStatus::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
        SendStatus::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
        SendStatus::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
        _ => "OTHER",
    }
}

impl SendObservation {
    /// Writes the send span's trace context into `msgs` (feature
    /// `opentelemetry`; nothing otherwise).
    pub(crate) fn propagate(&self, msgs: &mut [rmq_protocol::Message]) {
        propagate(&self.span, msgs);
    }

    /// The span to run the send in.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Counts and times the send, fills the span's result fields.
    pub(crate) fn finish<T: Answer>(self, outcome: &Outcome<T>) {
        let secs = self.started.elapsed().as_secs_f64();
        let h = &self.handles;
        if outcome.attempts > 1 {
            h.retries.increment(u64::from(outcome.attempts - 1));
        }
        match &outcome.result {
            Ok(answer) => {
                h.sent_ok.increment(self.messages);
                h.duration_ok.record(secs);
                if !self.span.is_disabled() {
                    self.span
                        .record("messaging.rocketmq.send.attempts", outcome.attempts);
                    match answer.sent() {
                        Some(r) => {
                            self.span
                                .record("messaging.rocketmq.send.result", status_name(r.status));
                            self.span.record("messaging.message.id", r.msg_id.as_str());
                            self.span.record(
                                "messaging.rocketmq.broker.name",
                                r.message_queue.broker_name.as_str(),
                            );
                            self.span.record(
                                "messaging.destination.partition.id",
                                r.message_queue.queue_id,
                            );
                        }
                        None => {
                            self.span.record("messaging.rocketmq.send.result", "ONEWAY");
                        }
                    }
                }
            }
            Err(e) => {
                h.sent_error.increment(self.messages);
                h.duration_error.record(secs);
                if !self.span.is_disabled() {
                    self.span
                        .record("messaging.rocketmq.send.attempts", outcome.attempts);
                    self.span.record("messaging.rocketmq.send.result", "error");
                    self.span
                        .record("error.type", field::display(rmq_protocol::ErrorChain(e)));
                }
            }
        }
    }
}
