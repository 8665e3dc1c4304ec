//! What the tests of the RocketMQ 5.3–5.5 producer features share (`tests/recall.rs`,
//! `priority.rs`, `lite_topic.rs`, `request_reply.rs`, `grpc_features.rs`): a push consumer that
//! hands every message to the test, the Java peer's event lines, the typed-refusal checks of a
//! 4.9.x broker, and broker config changes.

use std::time::Duration;

use rmq_consumer_push::{ConsumeResult, PushConsumer, listener_fn};
use rmq_protocol::header::EmptyHeader;
use rmq_protocol::{MessageExt, RemotingCommand, RequestCode, ResponseCode};
use tokio::sync::mpsc;

use crate::Env;
use crate::consumer::ConsumerSpec;

/// A push consumer of `topic` (a fresh group, from the first offset) that sends every message
/// it gets to the receiver.
///
/// # Panics
///
/// When it does not start.
pub async fn forwarding_consumer(
    namesrv: &str,
    prefix: &str,
    topic: &str,
) -> (PushConsumer, mpsc::UnboundedReceiver<MessageExt>) {
    let group = rmq_testkit::unique_name(prefix);
    let (tx, rx) = mpsc::unbounded_channel();
    let consumer = ConsumerSpec::new(namesrv, &group, topic)
        .builder()
        .start(listener_fn(move |msgs, _ctx| {
            for m in msgs.iter() {
                let _ = tx.send(m.clone());
            }
            Box::pin(async { ConsumeResult::Success })
        }))
        .await
        .unwrap_or_else(|e| panic!("push consumer {group} starts: {e}"));
    (consumer, rx)
}

/// The next message of `rx` within `limit`.
///
/// # Panics
///
/// When none comes in time (`what` says which was awaited).
pub async fn next_within(
    rx: &mut mpsc::UnboundedReceiver<MessageExt>,
    limit: Duration,
    what: &str,
) -> MessageExt {
    tokio::time::timeout(limit, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {limit:?}"))
        .unwrap_or_else(|| panic!("{what}: the consumer stopped"))
}

/// Messages of `rx` until one whose body is `body` comes (within `limit`), in order; that one
/// last.
///
/// # Panics
///
/// When it does not come in time.
pub async fn until_body(
    rx: &mut mpsc::UnboundedReceiver<MessageExt>,
    body: &str,
    limit: Duration,
) -> Vec<MessageExt> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let m = next_within(rx, left, &format!("the message {body:?}")).await;
        let done = m.body.as_ref() == body.as_bytes();
        seen.push(m);
        if done {
            return seen;
        }
    }
}

/// The words of the Java peer's lines that start with `event`.
pub fn events(lines: &[String], event: &str) -> Vec<Vec<String>> {
    lines
        .iter()
        .map(|l| l.split(' ').map(str::to_owned).collect::<Vec<_>>())
        .filter(|w| w.first().is_some_and(|e| e == event))
        .collect()
}

/// Whether the test broker is of the 4.x line (where the 5.x features are refused).
pub fn is_4x(env: &Env) -> bool {
    env.broker.major_version() == Some(4)
}

/// Checks that `e` is the producer's typed refusal of a 5.x feature by an older broker: kind
/// `Unsupported`, not retryable, naming `feature`, the broker's version (`V4_9`) and `needs` (the
/// version that brought it, e.g. `V5_4_0`).
///
/// # Panics
///
/// When it is not.
pub fn assert_needs_5x(e: &rmq_error::Error, feature: &str, needs: &str) {
    assert_eq!(e.kind(), rmq_error::ErrorKind::Unsupported, "typed: {e:?}");
    assert!(
        e.downcast_ref::<rmq_producer::Error>()
            .is_some_and(rmq_producer::Error::is_unsupported),
        "typed: {e:?}"
    );
    assert!(!e.is_retryable(), "{e:?}");
    let text = rmq_protocol::ErrorChain(e).to_string();
    assert!(text.contains(feature), "names the feature: {text}");
    assert!(text.contains("V4_9"), "names the broker's version: {text}");
    assert!(
        text.contains(&format!("needs RocketMQ {needs}")),
        "names the version needed: {text}"
    );
}

/// Sets `key=value` in the broker's config at run time (UPDATE_BROKER_CONFIG, as `mqadmin
/// updateBrokerConfig`).
///
/// # Panics
///
/// When the broker refuses.
pub async fn update_broker_config(env: &Env, key: &str, value: &str) {
    const UPDATE_BROKER_CONFIG: RequestCode = RequestCode(25);
    let request = RemotingCommand::request(UPDATE_BROKER_CONFIG, &EmptyHeader)
        .with_body(format!("{key}={value}\n"));
    env.admin
        .remoting()
        .invoke_expect(
            &env.broker.broker_addr,
            request,
            Duration::from_secs(5),
            &[ResponseCode::SUCCESS],
        )
        .await
        .unwrap_or_else(|e| panic!("updateBrokerConfig {key}={value}: {e}"));
}
