//! W3C trace context carried in message properties (feature
//! `opentelemetry`), so one OpenTelemetry trace shows producer → broker →
//! consumer.
//!
//! The producer writes the context of its `send` span into the user
//! properties `traceparent` (and `tracestate` when it is not empty), the
//! keys and format of the W3C Trace Context recommendation, which the
//! OpenTelemetry Java agent's RocketMQ instrumentation uses as well. The
//! push consumer makes the message's context the parent of its `process`
//! span (one message per call) or links every message's context to it (a
//! batch). Pull, lite pull and simple consumers hand messages to the
//! application: [`remote_context`] gives it the parent to use.
//!
//! Spans only have an OpenTelemetry context when the application's
//! `tracing` subscriber has a `tracing_opentelemetry` layer; without one
//! nothing is written or read.

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use rmq_protocol::{Message, MessageExt};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The property holding the W3C `traceparent` of the producer's span.
pub const TRACEPARENT: &str = "traceparent";
/// The property holding the W3C `tracestate` (written only when not empty).
pub const TRACESTATE: &str = "tracestate";

/// Writes the trace context of `span` into every message of `msgs`
/// (replacing an earlier one, so a resent message points at the send that
/// stored it). Does nothing when the span is disabled or has no valid
/// OpenTelemetry context.
pub fn inject(span: &Span, msgs: &mut [Message]) {
    if span.is_disabled() || msgs.is_empty() {
        return;
    }
    let cx = span.context();
    let current = cx.span();
    let sc = current.span_context();
    if !sc.is_valid() {
        return;
    }
    let parent = traceparent(sc);
    let state = sc.trace_state().header();
    for msg in msgs {
        msg.set_property(TRACEPARENT, parent.clone());
        if state.is_empty() {
            msg.properties.remove(TRACESTATE);
        } else {
            msg.set_property(TRACESTATE, state.clone());
        }
    }
}

/// The remote span context a message carries, when its `traceparent` is
/// valid (an invalid one is ignored, never an error: it came from another
/// program).
pub fn remote_span_context(msg: &Message) -> Option<SpanContext> {
    let parent = msg.property(TRACEPARENT)?;
    let state = msg
        .property(TRACESTATE)
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    parse_traceparent(parent, state)
}

/// The context to make the parent of the application's processing span
/// (`span.set_parent(cx)` with `tracing_opentelemetry::OpenTelemetrySpanExt`)
/// for a message from a pull, lite pull or simple consumer.
pub fn remote_context(msg: &Message) -> Option<Context> {
    remote_span_context(msg).map(|sc| Context::new().with_remote_span_context(sc))
}

/// Connects a consumer's `process` span to the producers of `msgs`: the
/// one message's context becomes its parent, a batch's contexts become
/// links. Does nothing when the span is disabled.
pub fn follow(span: &Span, msgs: &[MessageExt]) {
    if span.is_disabled() {
        return;
    }
    match msgs {
        [one] => {
            if let Some(cx) = remote_context(one) {
                // Fails only when the span already started, which it has not.
                let _ = span.set_parent(cx);
            }
        }
        batch => {
            for sc in batch.iter().filter_map(|m| remote_span_context(m)) {
                span.add_link(sc);
            }
        }
    }
}

/// `00-<trace id>-<span id>-<flags>` (W3C Trace Context, version 00).
pub fn traceparent(sc: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    )
}

/// Parses a `traceparent` value into a remote span context with `state`.
/// Version `ff`, all-zero ids, wrong lengths and non-hex digits are
/// refused; a later version may carry more fields after the flags.
pub fn parse_traceparent(value: &str, state: TraceState) -> Option<SpanContext> {
    let mut parts = value.trim().split('-');
    let version = parts.next()?;
    let trace_id = parts.next()?;
    let span_id = parts.next()?;
    let flags = parts.next()?;
    let extra = parts.next();
    if version.len() != 2 || !is_lower_hex(version) || version == "ff" {
        return None;
    }
    if version == "00" && extra.is_some() {
        return None;
    }
    if trace_id.len() != 32 || span_id.len() != 16 || flags.len() != 2 {
        return None;
    }
    if !(is_lower_hex(trace_id) && is_lower_hex(span_id) && is_lower_hex(flags)) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace_id).ok()?;
    let span_id = SpanId::from_hex(span_id).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let sc = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        state,
    );
    sc.is_valid().then_some(sc)
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_reads_back_as_it_was_written() {
        let sc = parse_traceparent(PARENT, TraceState::default()).unwrap();
        assert!(sc.is_remote());
        assert!(sc.is_sampled());
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert_eq!(traceparent(&sc), PARENT);
    }

    #[test]
    fn bad_traceparents_are_ignored() {
        for bad in [
            "",
            "00",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
        ] {
            assert!(
                parse_traceparent(bad, TraceState::default()).is_none(),
                "{bad:?}"
            );
        }
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert!(parse_traceparent(later, TraceState::default()).is_some());
    }

    #[test]
    fn a_message_without_a_valid_context_has_none() {
        let mut msg = Message::new("T", "b");
        assert!(remote_context(&msg).is_none());
        msg.set_property(TRACEPARENT, "garbage");
        assert!(remote_context(&msg).is_none());
        msg.set_property(TRACEPARENT, PARENT);
        msg.set_property(TRACESTATE, "vendor=abc");
        let sc = remote_span_context(&msg).unwrap();
        assert_eq!(sc.trace_state().get("vendor"), Some("abc"));
    }
}
