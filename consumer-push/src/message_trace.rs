//! RocketMQ message trace of listener calls (Java
//! `ConsumeMessageTraceHookImpl`): `SubBefore` records before a call,
//! `SubAfter` after it, handed to the consumer's [`TraceDispatcher`].
//! Nothing runs when trace is off.

use rmq_client_core::trace::TraceDispatcher;
use rmq_client_core::{ClientInstance, now_ms};
use rmq_protocol::MessageExt;
use rmq_protocol::message::property;
use rmq_protocol::trace::{NULL, SubAfterRecord, SubBeforeRecord, TraceRecord, context_code};

use crate::config::PushConsumerConfig;
use crate::inner::Inner;
use crate::listener::call::CallFailure;

/// The dispatcher of a consumer with trace on.
pub(crate) fn start(
    config: &PushConsumerConfig,
    instance: &ClientInstance,
) -> Option<TraceDispatcher> {
    config.enable_trace.then(|| {
        TraceDispatcher::start(
            instance.clone(),
            config.group(),
            config.trace_topic.as_deref(),
        )
    })
}

/// What the `SubAfter` of a call needs from its `SubBefore`.
pub(crate) struct CallTrace {
    request_id: String,
    started: i64,
    /// (msg id, keys) of the traced messages.
    beans: Vec<(String, String)>,
}

/// Appends the `SubBefore` records of a call on `msgs` (a message whose
/// `TRACE_ON` is `false` is not traced, as in Java).
pub(crate) fn before(inner: &Inner, msgs: &[MessageExt]) -> Option<CallTrace> {
    let trace = inner.trace.as_ref()?;
    let started = now_ms();
    let request_id = trace.new_id();
    // Out of the namespace, as Java's `ConsumeMessageTraceHookImpl`.
    let group = inner.core.namespace().unwrap(inner.core.group());
    let mut region_id = NULL.to_owned();
    let mut beans = Vec::with_capacity(msgs.len());
    for m in msgs {
        if m.message.property(property::TRACE_ON) == Some("false") {
            continue;
        }
        if let Some(r) = m.message.property(property::MSG_REGION) {
            r.clone_into(&mut region_id);
        }
        let keys: Vec<&str> = m.message.keys().collect();
        let keys = if keys.is_empty() {
            NULL.to_owned()
        } else {
            keys.join(" ")
        };
        trace.append(TraceRecord::SubBefore(SubBeforeRecord {
            timestamp: started,
            region_id: region_id.clone(),
            group: group.clone(),
            request_id: request_id.clone(),
            msg_id: m.msg_id.clone(),
            retry_times: m.reconsume_times,
            keys: keys.clone(),
        }));
        beans.push((m.msg_id.clone(), keys));
    }
    (!beans.is_empty()).then_some(CallTrace {
        request_id,
        started,
        beans,
    })
}

/// The `contextCode` and success of a call (Java `ConsumeReturnType`).
pub(crate) fn outcome<T>(
    call: &Result<T, CallFailure>,
    success: impl Fn(&T) -> bool,
) -> (bool, i32) {
    match call {
        Ok(r) if success(r) => (true, context_code::SUCCESS),
        Ok(_) => (false, context_code::FAILED),
        Err(CallFailure::TimedOut(_)) => (false, context_code::TIME_OUT),
        Err(CallFailure::Panicked(_)) => (false, context_code::EXCEPTION),
    }
}

/// Appends the `SubAfter` records of a call traced by [`before`].
pub(crate) fn after(inner: &Inner, call: Option<CallTrace>, (success, code): (bool, i32)) {
    let (Some(trace), Some(call)) = (inner.trace.as_ref(), call) else {
        return;
    };
    let now = now_ms();
    let n = i64::try_from(call.beans.len()).unwrap_or(1).max(1);
    let cost_time = now.saturating_sub(call.started) / n;
    let group = inner.core.namespace().unwrap(inner.core.group());
    for (msg_id, keys) in call.beans {
        trace.append(TraceRecord::SubAfter(SubAfterRecord {
            request_id: call.request_id.clone(),
            msg_id,
            cost_time,
            success,
            keys,
            context_code: code,
            timestamp: Some(now),
            group: Some(group.clone()),
        }));
    }
}

/// Flushes and stops the dispatcher (consumer shutdown, after the last call).
pub(crate) async fn shutdown(inner: &Inner) {
    if let Some(trace) = &inner.trace {
        trace.shutdown().await;
    }
}
