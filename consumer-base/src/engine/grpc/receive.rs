//! One `ReceiveMessage` ([`receive`]): the request (queue, filter, batch
//! size, invisible time or auto-renew, long-polling wait, attempt id), the
//! received messages mapped, and the pause before the next receive of a
//! loop ([`Pauses`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmq_grpc::{Receipt, proto};
use rmq_protocol::MessageExt;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::calls::ProxyCalls;

/// An empty receive answered faster than this did not long-poll: the
/// next one waits a little.
pub const EMPTY_AT_ONCE: Duration = Duration::from_millis(20);

/// Numbers the receive attempts of the process: an attempt id must not be
/// another loop's (the broker answers a repeated id of a FIFO queue with
/// the messages it popped for it).
static ATTEMPTS: AtomicU64 = AtomicU64::new(0);

/// How the received messages stay hidden from the group's other receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hiding {
    /// While this client holds them: the proxy renews their invisible time
    /// until they are settled or the session ends (a push consumer).
    AutoRenew,
    /// For this long from the receive (a simple consumer).
    For(Duration),
}

/// What one receive asks for.
#[derive(Debug, Clone, Copy)]
pub struct ReceiveSpec<'a> {
    /// The queue (a broker's queue id −1: every queue of the broker).
    pub queue: &'a proto::MessageQueue,
    /// Which messages.
    pub filter: &'a proto::FilterExpression,
    /// At most this many messages (at least 1 is asked for).
    pub batch: usize,
    /// How they stay hidden.
    pub hiding: Hiding,
    /// How long the proxy may wait for a first message (long polling).
    pub wait: Duration,
}

/// The attempt id of a loop's receives (Java `PushConsumerImpl`): the
/// same id again after a receive that brought nothing or failed (the
/// proxy answers a repeated attempt with what it popped for it), a new
/// one after messages came.
#[derive(Debug, Default)]
pub struct AttemptId(Option<String>);

impl AttemptId {
    /// No attempt yet.
    pub fn new() -> Self {
        AttemptId(None)
    }

    /// The id of the next receive: the pending one, or a new one of
    /// `client_id`.
    fn next(&mut self, client_id: &str) -> String {
        self.0
            .get_or_insert_with(|| {
                let n = ATTEMPTS.fetch_add(1, Ordering::Relaxed);
                format!("{client_id}-{n:x}")
            })
            .clone()
    }

    /// Messages came: the next receive is a new attempt.
    fn delivered(&mut self) {
        self.0 = None;
    }
}

/// A received message and what settles it.
#[derive(Debug)]
pub struct Received {
    /// The message (its broker: the queue's).
    pub msg: MessageExt,
    /// Its receipt handle and delivery attempt.
    pub receipt: Receipt,
}

/// What one receive brought.
#[derive(Debug)]
pub struct Batch {
    /// The messages, mapped.
    pub messages: Vec<Received>,
    /// How many the proxy sent (those the mapping refused included).
    pub delivered: usize,
    /// How long the call took.
    pub took: Duration,
}

/// `ReceiveMessage` of `spec` for `group`; `attempt` carries a loop's
/// attempt id (`None`: no attempt id, as the Java simple consumer). A
/// message the mapping refuses is logged and left to the proxy (it
/// delivers it again once its invisible time has passed).
///
/// # Errors
///
/// The call's ([`rmq_grpc::Error::Shutdown`] once the session ended).
pub async fn receive<S: ProxyCalls>(
    session: &S,
    group: &str,
    spec: ReceiveSpec<'_>,
    mut attempt: Option<&mut AttemptId>,
) -> rmq_grpc::Result<Batch> {
    let attempt_id = attempt.as_deref_mut().map(|a| a.next(session.client_id()));
    let (invisible_duration, auto_renew) = match spec.hiding {
        Hiding::AutoRenew => (None, true),
        Hiding::For(d) => (Some(rmq_grpc::duration(d)), false),
    };
    let request = proto::ReceiveMessageRequest {
        group: Some(rmq_grpc::resource("", group)),
        message_queue: Some(spec.queue.clone()),
        filter_expression: Some(spec.filter.clone()),
        batch_size: i32::try_from(spec.batch.max(1)).unwrap_or(i32::MAX),
        invisible_duration,
        auto_renew,
        long_polling_timeout: None,
        attempt_id,
    };
    let started = Instant::now();
    let messages = session.receive_message(request, spec.wait).await?;
    let took = started.elapsed();
    let delivered = messages.len();
    if delivered > 0 {
        if let Some(a) = attempt {
            a.delivered();
        }
    }
    let broker = spec.queue.broker.as_ref().map_or("", |b| b.name.as_str());
    Ok(Batch {
        messages: map(messages, broker),
        delivered,
        took,
    })
}

/// The received messages of `broker`; one the mapping refuses is logged
/// and left out.
fn map(messages: Vec<proto::Message>, broker: &str) -> Vec<Received> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        match rmq_grpc::message_ext(m, broker) {
            Ok((msg, receipt)) => out.push(Received { msg, receipt }),
            Err(e) => {
                warn!(error = %rmq_protocol::ErrorChain(&e), "a received message cannot be read; left to the proxy");
            }
        }
    }
    out
}

/// The pauses of a receive loop (a push consumer's settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pauses {
    /// After an empty answer that did not long-poll ([`EMPTY_AT_ONCE`]).
    pub empty_at_once: Duration,
    /// After `TOO_MANY_REQUESTS`.
    pub throttled: Duration,
    /// After another error.
    pub failed: Duration,
    /// After messages came.
    pub delivered: Duration,
}

/// What a receive loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Receives again after this pause.
    After(Duration),
    /// Stops: the session ended.
    Stop,
}

impl Pauses {
    /// What follows `received`: no pause after an empty long poll or a
    /// batch the mapping refused entirely; the pause of its kind otherwise
    /// (errors logged).
    pub fn next(&self, received: &rmq_grpc::Result<Batch>) -> Next {
        match received {
            Ok(b) if b.delivered == 0 => {
                // A long poll answered at once with nothing: no tight loop.
                Next::After(if b.took < EMPTY_AT_ONCE {
                    self.empty_at_once
                } else {
                    Duration::ZERO
                })
            }
            Ok(b) if b.messages.is_empty() => Next::After(Duration::ZERO),
            Ok(_) => Next::After(self.delivered),
            Err(rmq_grpc::Error::Shutdown) => Next::Stop,
            Err(e) if e.proxy_code() == Some(proto::Code::TooManyRequests) => {
                debug!(error = %rmq_protocol::ErrorChain(e), "the proxy asks to receive less often");
                Next::After(self.throttled)
            }
            Err(e) => {
                warn!(error = %rmq_protocol::ErrorChain(e), "receive failed; trying again");
                Next::After(self.failed)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::{Call, Script, message, queue, timed_out, too_many};
    use super::*;

    fn spec<'a>(
        q: &'a proto::MessageQueue,
        f: &'a proto::FilterExpression,
        hiding: Hiding,
    ) -> ReceiveSpec<'a> {
        ReceiveSpec {
            queue: q,
            filter: f,
            batch: 16,
            hiding,
            wait: Duration::from_secs(20),
        }
    }

    /// An auto-renew receive of a loop's `attempt`.
    async fn renewed(
        script: &Script,
        q: &proto::MessageQueue,
        f: &proto::FilterExpression,
        attempt: &mut AttemptId,
    ) -> rmq_grpc::Result<Batch> {
        receive(script, "G", spec(q, f, Hiding::AutoRenew), Some(attempt)).await
    }

    fn attempt_ids(script: &Script) -> Vec<Option<String>> {
        script
            .calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::Receive(r, _) => Some(r.attempt_id.clone()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn the_attempt_id_is_sent_again_until_messages_come() {
        let script = Script::new();
        script.receive_answers([
            Ok(vec![]),
            Err(timed_out()),
            Ok(vec![message("m1", "h1")]),
            Ok(vec![]),
        ]);
        let (q, f) = (queue("b", -1, 6), rmq_grpc::filter_expression(false, "*"));
        let mut attempt = AttemptId::new();
        for _ in 0..4 {
            let _ = renewed(&script, &q, &f, &mut attempt).await;
        }
        let ids = attempt_ids(&script);
        let first = ids[0].clone().expect("an attempt id");
        assert!(first.starts_with("client-1-"), "{first}");
        assert_eq!(
            ids[1].as_ref(),
            Some(&first),
            "again after an empty receive"
        );
        assert_eq!(ids[2].as_ref(), Some(&first), "again after a failed one");
        let next = ids[3].clone().expect("an attempt id");
        assert_ne!(next, first, "a new one after messages came");

        // Two loops never share an id.
        let mut other = AttemptId::new();
        assert_ne!(other.next("client-1"), next);
    }

    #[tokio::test(start_paused = true)]
    async fn the_request_says_how_the_messages_stay_hidden() {
        let script = Script::new();
        script.receive_answers([Ok(vec![]), Ok(vec![])]);
        let (q, f) = (queue("b", 3, 6), rmq_grpc::filter_expression(true, "a > 1"));
        let mut attempt = AttemptId::new();
        let _ = renewed(&script, &q, &f, &mut attempt).await;
        let hidden = Hiding::For(Duration::from_secs(30));
        let _ = receive(
            &script,
            "G",
            ReceiveSpec {
                batch: 0,
                ..spec(&q, &f, hidden)
            },
            None,
        )
        .await;
        let calls = script.calls();
        let [Call::Receive(renewed, wait), Call::Receive(fixed, _)] = calls.as_slice() else {
            panic!("two receives: {calls:?}");
        };
        assert_eq!(*wait, Duration::from_secs(20));
        assert!(renewed.auto_renew && renewed.invisible_duration.is_none());
        assert_eq!(renewed.batch_size, 16);
        assert_eq!(renewed.message_queue.as_ref(), Some(&q));
        assert_eq!(renewed.filter_expression.as_ref(), Some(&f));
        assert_eq!(renewed.group.as_ref().map(|g| g.name.as_str()), Some("G"));
        assert!(!fixed.auto_renew);
        assert_eq!(
            fixed.invisible_duration,
            Some(rmq_grpc::duration(Duration::from_secs(30)))
        );
        assert_eq!(fixed.batch_size, 1, "at least one");
        assert_eq!(fixed.attempt_id, None, "no attempt id without a loop's");
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_the_mapping_refuses_is_left_out() {
        let script = Script::new();
        let mut unreadable = message("bad", "h");
        unreadable.system_properties = None;
        script.receive_answers([Ok(vec![
            message("m1", "h1"),
            unreadable,
            message("m2", "h2"),
        ])]);
        let (q, f) = (
            queue("broker-a", -1, 6),
            rmq_grpc::filter_expression(false, "*"),
        );
        let b = receive(&script, "G", spec(&q, &f, Hiding::AutoRenew), None)
            .await
            .unwrap();
        assert_eq!(b.delivered, 3);
        let got: Vec<(&str, &str, &str)> = b
            .messages
            .iter()
            .map(|r| {
                (
                    r.msg.msg_id.as_str(),
                    r.receipt.receipt_handle.as_str(),
                    r.msg.broker_name.as_str(),
                )
            })
            .collect();
        assert_eq!(got, [("m1", "h1", "broker-a"), ("m2", "h2", "broker-a")]);
    }

    #[tokio::test(start_paused = true)]
    async fn pauses_after_each_kind_of_answer() {
        let pauses = Pauses {
            empty_at_once: Duration::from_millis(1),
            throttled: Duration::from_millis(2),
            failed: Duration::from_millis(3),
            delivered: Duration::from_millis(4),
        };
        let script = Script::new();
        let mut refused = message("bad", "h");
        refused.system_properties = None;
        script.receive_answers([
            Ok(vec![]),
            Ok(vec![]),
            Ok(vec![message("m", "h")]),
            Ok(vec![refused]),
            Err(too_many()),
            Err(timed_out()),
            Err(rmq_grpc::Error::Shutdown),
        ]);
        // The second empty answer comes after a long poll.
        script.receive_latency([Duration::ZERO, Duration::from_secs(20)]);
        let (q, f) = (queue("b", -1, 6), rmq_grpc::filter_expression(false, "*"));
        let mut got = Vec::new();
        for _ in 0..7 {
            let r = receive(&script, "G", spec(&q, &f, Hiding::AutoRenew), None).await;
            got.push(pauses.next(&r));
        }
        let ms = |n| Next::After(Duration::from_millis(n));
        assert_eq!(
            got,
            [
                ms(1),
                Next::After(Duration::ZERO),
                ms(4),
                Next::After(Duration::ZERO),
                ms(2),
                ms(3),
                Next::Stop
            ]
        );
    }
}
