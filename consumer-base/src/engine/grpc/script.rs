//! A scripted proxy for the engine's tests: each call takes the next
//! answer scripted for its kind (an unscripted call panics) and is
//! recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_grpc::{Result, proto};

use super::ack::Settled;
use super::calls::ProxyCalls;
use super::handle::{Handle, Named};

/// A call the script answered.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Call {
    Route(String),
    Receive(Box<proto::ReceiveMessageRequest>, Duration),
    /// Topic, group, entries.
    Ack(String, String, Vec<(String, String)>),
    /// [topic, group, message id, handle], invisible time.
    Change([String; 4], Duration),
    /// [topic, group, message id, handle], attempt, max attempts.
    Dlq([String; 4], i32, i32),
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    routes: VecDeque<Result<Vec<proto::MessageQueue>>>,
    receives: VecDeque<Result<Vec<proto::Message>>>,
    latency: VecDeque<Duration>,
    acks: VecDeque<Result<Vec<proto::AckMessageResultEntry>>>,
    changes: VecDeque<Result<String>>,
    dlqs: VecDeque<Result<()>>,
}

/// The scripted proxy (clones share the script).
#[derive(Clone, Default)]
pub(super) struct Script(Arc<Mutex<State>>);

impl Script {
    pub(super) fn new() -> Self {
        Script::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap()
    }

    pub(super) fn calls(&self) -> Vec<Call> {
        self.state().calls.clone()
    }

    pub(super) fn route_answers(
        &self,
        a: impl IntoIterator<Item = Result<Vec<proto::MessageQueue>>>,
    ) {
        self.state().routes.extend(a);
    }

    pub(super) fn receive_answers(&self, a: impl IntoIterator<Item = Result<Vec<proto::Message>>>) {
        self.state().receives.extend(a);
    }

    /// How long the next receives take (none: at once).
    pub(super) fn receive_latency(&self, a: impl IntoIterator<Item = Duration>) {
        self.state().latency.extend(a);
    }

    pub(super) fn ack_answers(
        &self,
        a: impl IntoIterator<Item = Result<Vec<proto::AckMessageResultEntry>>>,
    ) {
        self.state().acks.extend(a);
    }

    pub(super) fn change_answers(&self, a: impl IntoIterator<Item = Result<String>>) {
        self.state().changes.extend(a);
    }

    pub(super) fn dlq_answers(&self, a: impl IntoIterator<Item = Result<()>>) {
        self.state().dlqs.extend(a);
    }

    fn answer<T>(&self, call: Call, pick: impl FnOnce(&mut State) -> Option<T>) -> T {
        let mut s = self.state();
        let answer = pick(&mut s).unwrap_or_else(|| panic!("unscripted call {call:?}"));
        s.calls.push(call);
        answer
    }
}

impl ProxyCalls for Script {
    fn client_id(&self) -> &str {
        "client-1"
    }

    async fn query_route(&self, topic: &str) -> Result<Vec<proto::MessageQueue>> {
        self.answer(Call::Route(topic.into()), |s| s.routes.pop_front())
    }

    async fn receive_message(
        &self,
        request: proto::ReceiveMessageRequest,
        long_polling: Duration,
    ) -> Result<Vec<proto::Message>> {
        let latency = self.state().latency.pop_front().unwrap_or_default();
        tokio::time::sleep(latency).await;
        self.answer(Call::Receive(Box::new(request), long_polling), |s| {
            s.receives.pop_front()
        })
    }

    async fn ack_message(
        &self,
        topic: &str,
        group: &str,
        entries: Vec<(String, String)>,
    ) -> Result<Vec<proto::AckMessageResultEntry>> {
        self.answer(Call::Ack(topic.into(), group.into(), entries), |s| {
            s.acks.pop_front()
        })
    }

    async fn change_invisible_duration(
        &self,
        group: &str,
        msg: Named<'_>,
        invisible: Duration,
    ) -> Result<String> {
        let call = Call::Change(owned(group, msg), invisible);
        self.answer(call, |s| s.changes.pop_front())
    }

    async fn forward_to_dead_letter_queue(
        &self,
        group: &str,
        msg: Named<'_>,
        attempt: i32,
        max_attempts: i32,
    ) -> Result<()> {
        let call = Call::Dlq(owned(group, msg), attempt, max_attempts);
        self.answer(call, |s| s.dlqs.pop_front())
    }
}

/// Topic, group, message id and handle of a settle call.
fn owned(group: &str, m: Named<'_>) -> [String; 4] {
    [m.topic, group, m.message_id, m.receipt_handle].map(str::to_owned)
}

/// A received message of topic `T` with its id and receipt handle.
pub(super) fn message(id: &str, handle: &str) -> proto::Message {
    proto::Message {
        topic: Some(rmq_grpc::resource("", "T")),
        system_properties: Some(proto::SystemProperties {
            message_id: id.into(),
            receipt_handle: Some(handle.into()),
            ..Default::default()
        }),
        body: b"body".to_vec().into(),
        ..Default::default()
    }
}

/// Queue `id` of topic `T` on the master `broker`.
pub(super) fn queue(broker: &str, id: i32, permission: i32) -> proto::MessageQueue {
    proto::MessageQueue {
        topic: Some(rmq_grpc::resource("", "T")),
        id,
        permission,
        broker: Some(proto::Broker {
            name: broker.into(),
            id: 0,
            endpoints: None,
        }),
        accept_message_types: Vec::new(),
    }
}

/// A retryable error (no answer in time).
pub(super) fn timed_out() -> rmq_grpc::Error {
    rmq_grpc::Error::Timeout {
        rpc: "Test",
        after: Duration::from_secs(3),
    }
}

/// The proxy's `TOO_MANY_REQUESTS`.
pub(super) fn too_many() -> rmq_grpc::Error {
    proxy_error(proto::Code::TooManyRequests)
}

/// A refusal not worth retrying (`INVALID_RECEIPT_HANDLE`).
pub(super) fn refused() -> rmq_grpc::Error {
    proxy_error(proto::Code::InvalidReceiptHandle)
}

fn proxy_error(code: proto::Code) -> rmq_grpc::Error {
    rmq_grpc::Error::Proxy {
        rpc: "Test",
        code: code as i32,
        message: String::new(),
    }
}

/// An ack result entry of `id` with `code`.
pub(super) fn entry_status(id: &str, code: proto::Code) -> proto::AckMessageResultEntry {
    proto::AckMessageResultEntry {
        message_id: id.into(),
        receipt_handle: String::new(),
        status: Some(proto::Status {
            code: code as i32,
            message: "status".into(),
        }),
    }
}

/// An `AckMessage` answer taking `ids`.
pub(super) fn acked(ids: &[&str]) -> Result<Vec<proto::AckMessageResultEntry>> {
    Ok(ids
        .iter()
        .map(|id| entry_status(id, proto::Code::Ok))
        .collect())
}

/// An ack of message `msg_id` (handle `h-<msg_id>`) that records how it
/// was settled (clones share the record).
#[derive(Debug, Clone)]
pub(super) struct TestAck {
    topic: String,
    pub(super) msg_id: String,
    handle: String,
    outcome: Arc<Mutex<Option<bool>>>,
}

impl TestAck {
    pub(super) fn new(topic: &str, msg_id: &str) -> Self {
        TestAck {
            topic: topic.into(),
            msg_id: msg_id.into(),
            handle: format!("h-{msg_id}"),
            outcome: Arc::default(),
        }
    }

    /// How it was settled (`None`: not yet).
    pub(super) fn outcome(&self) -> Option<bool> {
        *self.outcome.lock().unwrap()
    }
}

impl Handle for TestAck {
    fn topic(&self) -> &str {
        &self.topic
    }

    fn message_id(&self) -> &str {
        &self.msg_id
    }

    fn receipt_handle(&self) -> &str {
        &self.handle
    }
}

impl Settled for TestAck {
    fn settled(self, acked: bool) {
        let mut o = self.outcome.lock().unwrap();
        assert!(o.is_none(), "{} settled twice", self.msg_id);
        *o = Some(acked);
    }
}
