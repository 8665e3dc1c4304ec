//! The pull cycle's decisions, against a scripted wire, in paused time.

use std::collections::VecDeque;
use std::future::{Future, pending};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_client_core::{AUTH_FAILURE_BACKOFF, PullResult, PullStatus};
use rmq_protocol::body::SubscriptionData;
use rmq_protocol::header::{PullMessageRequestHeader, pull_sys_flag};
use rmq_protocol::message::{MessageVersion, encode_stored_message, property};
use rmq_protocol::{Message, MessageExt, MessageQueue, RemotingCommand, RequestCode, ResponseCode};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::{Error, Expression, HeartbeatGate, Kind};

const DELAYS: PullDelays = PullDelays {
    exception: Duration::from_millis(1000),
    broker_flow_control: Duration::from_millis(20),
};

/// A call the engine made.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Lookup(i64),
    Gate(String),
    Pull {
        addr: String,
        offset: i64,
        sys_flag: i32,
        timeout: Option<Duration>,
    },
    Heartbeat,
}

/// What a scripted pull does.
enum Reply {
    /// Answers after this long.
    After(Duration, rmq_client_core::Result<PullResult>),
    /// Never answers.
    Hang,
}

/// A wire that answers from a script and records the calls.
#[derive(Default)]
struct Script {
    /// Lookup answers in turn; when none is left: the master (`m:0`) for
    /// broker id 0, the slave `s:<id>` otherwise.
    addrs: Mutex<VecDeque<rmq_client_core::Result<(String, bool)>>>,
    pulls: Mutex<VecDeque<Reply>>,
    /// A heartbeat takes this long.
    heartbeat_takes: Duration,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Script {
    fn replying(replies: impl IntoIterator<Item = Reply>) -> Script {
        Script {
            pulls: Mutex::new(replies.into_iter().collect()),
            ..Script::default()
        }
    }

    fn record(&self, call: Call) {
        self.calls.lock().unwrap().push(call);
    }

    fn calls(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

impl PullWire for Script {
    fn pull_addr(
        &self,
        _mq: &MessageQueue,
        broker_id: i64,
    ) -> impl Future<Output = rmq_client_core::Result<(String, bool)>> + Send {
        self.record(Call::Lookup(broker_id));
        let scripted = self.addrs.lock().unwrap().pop_front();
        let found = scripted.unwrap_or_else(|| match broker_id {
            0 => Ok(("m:0".to_owned(), false)),
            id => Ok((format!("s:{id}"), true)),
        });
        async move { found }
    }

    fn pull(
        &self,
        addr: &str,
        header: &PullMessageRequestHeader,
        timeout: Option<Duration>,
    ) -> impl Future<Output = rmq_client_core::Result<PullResult>> + Send {
        self.record(Call::Pull {
            addr: addr.to_owned(),
            offset: header.queue_offset,
            sys_flag: header.sys_flag,
            timeout,
        });
        let reply = self
            .pulls
            .lock()
            .unwrap()
            .pop_front()
            .expect("a scripted pull");
        async move {
            match reply {
                Reply::After(d, r) => {
                    tokio::time::sleep(d).await;
                    r
                }
                Reply::Hang => pending().await,
            }
        }
    }

    fn heartbeat_now(&self) -> impl Future<Output = ()> + Send {
        self.record(Call::Heartbeat);
        tokio::time::sleep(self.heartbeat_takes)
    }

    fn heartbeat_once(&self, _gate: &HeartbeatGate, addr: &str) -> impl Future<Output = ()> + Send {
        self.record(Call::Gate(addr.to_owned()));
        async {}
    }
}

fn mq() -> MessageQueue {
    MessageQueue::new("T", "broker-a", 0)
}

fn answer(status: PullStatus, next: i64, suggest: i64, body: Vec<u8>) -> Reply {
    Reply::After(
        Duration::from_millis(5),
        Ok(PullResult {
            status,
            next_begin_offset: next,
            min_offset: 0,
            max_offset: 100,
            suggest_which_broker_id: suggest,
            offset_delta: None,
            body: body.into(),
        }),
    )
}

/// A broker answer with `code` (and `remark`), as `pull_message` maps it.
fn refused(code: ResponseCode, remark: &str) -> Reply {
    let response = RemotingCommand::new_response(code, Some(remark.to_owned()));
    let e = PullResult::from_response("m:0", RequestCode::PULL_MESSAGE, response)
        .expect_err("an error code");
    Reply::After(Duration::from_millis(5), Err(e))
}

/// Stored messages at offsets 10.. with these tags (topic `topic`).
fn body(topic: &str, tags: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, tag) in tags.iter().enumerate() {
        let mut message = Message::new(topic, "b").with_tags(*tag);
        if topic.starts_with("%RETRY%") {
            message.set_property(property::RETRY_TOPIC, "T");
        }
        let stored = MessageExt {
            message,
            queue_offset: 10 + i64::try_from(i).unwrap(),
            ..MessageExt::default()
        };
        out.extend_from_slice(&encode_stored_message(&stored, MessageVersion::V1, None).unwrap());
    }
    out
}

fn sub(expression: &str) -> SubscriptionData {
    Expression::tag(expression).to_subscription("T", 1)
}

fn query<'a>(mq: &'a MessageQueue, sub: &'a SubscriptionData, offset: i64) -> PullQuery<'a> {
    PullQuery {
        group: "G",
        mq,
        sub,
        spec: PullSpec {
            offset,
            max: 32,
            hold: Some(Duration::from_secs(15)),
            commit_offset: 7,
            commit: true,
            subscription: SubscriptionSource::Heartbeat { sub_version: 1 },
            lite: false,
        },
        retry_topic: None,
        namespace: &NO_NAMESPACE,
        timeout: None,
        gate: None,
    }
}

static NO_NAMESPACE: rmq_protocol::namespace::Namespace =
    rmq_protocol::namespace::Namespace::none();

/// A turn of `cursor` pulling from offset 10, not cancelled.
async fn turn(
    cursor: &mut PullCursor,
    wire: &Script,
    mq: &MessageQueue,
    sub: &SubscriptionData,
) -> Step {
    let never = CancellationToken::new();
    cursor.step(wire, &query(mq, sub, 10), DELAYS, &never).await
}

#[tokio::test(start_paused = true)]
async fn found_is_decoded_filtered_and_timed() {
    let wire = Script::replying([answer(
        PullStatus::Found,
        13,
        0,
        body("T", &["a", "b", "a"]),
    )]);
    let (mq, sub) = (mq(), sub("a"));
    let mut cursor = PullCursor::default();
    let step = turn(&mut cursor, &wire, &mq, &sub).await;
    let Step::Found(f) = step else {
        panic!("{step:?}")
    };
    assert_eq!(f.pulled, 3);
    let kept: Vec<_> = f.messages.iter().map(|m| m.queue_offset).collect();
    assert_eq!(kept, [10, 12], "the tag re-check drops b");
    assert!(f.messages.iter().all(|m| m.broker_name == "broker-a"));
    assert_eq!(f.answer.next_begin_offset, 13);
    assert_eq!(f.answer.max_offset, 100);
    assert_eq!(f.answer.took, Duration::from_millis(5));
    assert_eq!(
        wire.calls(),
        [
            Call::Lookup(0),
            Call::Pull {
                addr: "m:0".into(),
                offset: 10,
                sys_flag: pull_sys_flag::build(true, true, false, false, false),
                timeout: None,
            }
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_retry_topic_is_restored_when_asked() {
    let retry = "%RETRY%G";
    let mq = MessageQueue::new(retry, "broker-a", 0);
    let all = Expression::all().to_subscription(retry, 1);
    for (restore, topic) in [(Some(retry), "T"), (None, retry)] {
        let wire = Script::replying([answer(PullStatus::Found, 11, 0, body(retry, &["x"]))]);
        let q = PullQuery {
            retry_topic: restore,
            ..query(&mq, &all, 10)
        };
        let f = PullCursor::default().fetch(&wire, &q).await.unwrap();
        assert_eq!(f.messages[0].topic, topic);
    }
}

#[tokio::test(start_paused = true)]
async fn each_answer_and_error_gives_its_step_and_wait() {
    let auth = "User:u has no permission to access Topic:T from 1.2.3.4, no matched policies.";
    let cases: [(Reply, &str, Option<Duration>); 9] = [
        (
            answer(PullStatus::NoNewMsg, 12, 0, Vec::new()),
            "empty 12",
            None,
        ),
        (
            answer(PullStatus::NoMatchedMsg, 13, 0, Vec::new()),
            "empty 13",
            None,
        ),
        (
            answer(PullStatus::OffsetIllegal, 40, 0, Vec::new()),
            "illegal 40",
            None,
        ),
        (
            refused(ResponseCode::FLOW_CONTROL, "busy"),
            "flow control",
            Some(DELAYS.broker_flow_control),
        ),
        (
            refused(ResponseCode::SUBSCRIPTION_NOT_EXIST, "no sub"),
            "subscription",
            Some(DELAYS.exception),
        ),
        (
            refused(ResponseCode::SUBSCRIPTION_NOT_LATEST, "old sub"),
            "subscription",
            Some(DELAYS.exception),
        ),
        (
            refused(ResponseCode::NO_PERMISSION, auth),
            "refused",
            Some(AUTH_FAILURE_BACKOFF),
        ),
        (
            refused(ResponseCode::SYSTEM_BUSY, "busy"),
            "failed",
            Some(DELAYS.exception),
        ),
        (
            answer(PullStatus::Found, 11, 0, b"not a message".to_vec()),
            "decode",
            Some(DELAYS.exception),
        ),
    ];
    let (mq, sub) = (mq(), sub("*"));
    for (reply, want, wait) in cases {
        let wire = Script::replying([reply]);
        let step = turn(&mut PullCursor::default(), &wire, &mq, &sub).await;
        let (got, after) = match &step {
            Step::Empty(a) => (format!("empty {}", a.next_begin_offset), None),
            Step::OffsetIllegal(a) => (format!("illegal {}", a.next_begin_offset), None),
            Step::Retry { after, cause } => {
                let name = match cause {
                    RetryCause::BrokerFlowControl => "flow control",
                    RetryCause::SubscriptionUnknown => "subscription",
                    RetryCause::Refused(_) => "refused",
                    RetryCause::Failed(_) => "failed",
                    RetryCause::Decode(_) => "decode",
                    other => panic!("{other:?}"),
                };
                (name.to_owned(), Some(*after))
            }
            other => panic!("{want}: {other:?}"),
        };
        assert_eq!((got.as_str(), after), (want, wait));
        let heartbeats = wire
            .calls()
            .iter()
            .filter(|c| **c == Call::Heartbeat)
            .count();
        assert_eq!(heartbeats, usize::from(want == "subscription"), "{want}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_suggested_broker_is_asked_next_and_a_slave_gets_no_commit() {
    let wire = Script::replying([
        answer(PullStatus::NoNewMsg, 10, 1, Vec::new()),
        answer(PullStatus::NoNewMsg, 10, 0, Vec::new()),
        answer(PullStatus::Found, 11, 1, b"garbage".to_vec()),
        answer(PullStatus::NoNewMsg, 11, 0, Vec::new()),
    ]);
    let (mq, sub) = (mq(), sub("*"));
    let mut cursor = PullCursor::default();
    let q = query(&mq, &sub, 10);
    for _ in 0..4 {
        let _ = cursor.fetch(&wire, &q).await;
    }
    let no_commit = pull_sys_flag::build(false, true, false, false, false);
    let commit = pull_sys_flag::build(true, true, false, false, false);
    let pulls: Vec<_> = wire
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::Pull { addr, sys_flag, .. } => Some((addr, sys_flag)),
            Call::Lookup(_) => None,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        pulls,
        [
            ("m:0".to_owned(), commit),
            ("s:1".to_owned(), no_commit),
            ("m:0".to_owned(), commit),
            // A suggestion is kept even when the messages cannot be decoded.
            ("s:1".to_owned(), no_commit),
        ]
    );
    assert_eq!(cursor.broker_id(), 0);
    assert_eq!(PullCursor::at_broker(2).broker_id(), 2);
}

#[tokio::test(start_paused = true)]
async fn an_unknown_broker_is_looked_up_once_per_turn() {
    let not_found = || {
        Err(rmq_client_core::Error::BrokerNotFound {
            broker_name: "broker-a".into(),
        })
    };
    let wire = Script {
        addrs: Mutex::new([not_found(), not_found()].into()),
        ..Script::default()
    };
    let (mq, sub) = (mq(), sub("*"));
    let mut cursor = PullCursor::default();
    for _ in 0..2 {
        let step = turn(&mut cursor, &wire, &mq, &sub).await;
        assert!(
            matches!(
                step,
                Step::Retry { after, cause: RetryCause::NoBroker(_) } if after == DELAYS.exception
            ),
            "{step:?}"
        );
        assert_eq!(wire.calls(), [Call::Lookup(0)], "one lookup, no pull");
    }
    wire.addrs.lock().unwrap().push_back(not_found());
    let fetched = cursor.fetch(&wire, &query(&mq, &sub, 10)).await;
    let e: Error<Test> = fetched.unwrap_err().into();
    assert!(matches!(e, Error::BrokerNotFound { .. }), "{e:?}");
}

#[derive(Debug)]
enum Test {}

impl Kind for Test {
    const NAME: &'static str = "test consumer";
}

#[tokio::test(start_paused = true)]
async fn cancelling_ends_a_pull_or_a_heartbeat_in_flight() {
    let (mq, sub) = (mq(), sub("*"));
    let wire = Script::replying([Reply::Hang]);
    let cancel = CancellationToken::new();
    let started = tokio::time::Instant::now();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            cancel.cancel();
        })
    };
    let step = PullCursor::default()
        .step(&wire, &query(&mq, &sub, 10), DELAYS, &cancel)
        .await;
    assert!(matches!(step, Step::Cancelled), "{step:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    canceller.await.unwrap();

    let wire = Script {
        heartbeat_takes: Duration::from_secs(60),
        ..Script::replying([refused(ResponseCode::SUBSCRIPTION_NOT_EXIST, "no sub")])
    };
    let cancel = CancellationToken::new();
    let started = tokio::time::Instant::now();
    let step = {
        let stop = cancel.clone();
        let (mut cursor, q) = (PullCursor::default(), query(&mq, &sub, 10));
        let step = cursor.step(&wire, &q, DELAYS, &cancel);
        tokio::pin!(step);
        tokio::select! {
            s = &mut step => s,
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                stop.cancel();
                step.await
            }
        }
    };
    assert!(matches!(step, Step::Cancelled), "{step:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(wire.calls().last(), Some(&Call::Heartbeat));
}

#[tokio::test(start_paused = true)]
async fn the_pull_consumers_gate_carries_its_heartbeat_and_timeout() {
    let wire = Script::replying([answer(PullStatus::NoNewMsg, 10, 0, Vec::new())]);
    let (mq, sub) = (mq(), sub("*"));
    let gate = HeartbeatGate::default();
    let q = PullQuery {
        spec: PullSpec {
            hold: None,
            commit_offset: 0,
            commit: false,
            subscription: SubscriptionSource::InRequest,
            ..query(&mq, &sub, 10).spec
        },
        timeout: Some(Duration::from_secs(3)),
        gate: Some(&gate),
        ..query(&mq, &sub, 10)
    };
    let f = PullCursor::default().fetch(&wire, &q).await.unwrap();
    assert_eq!(f.answer.status, PullStatus::NoNewMsg);
    assert!(f.messages.is_empty());
    assert_eq!(
        wire.calls(),
        [
            Call::Lookup(0),
            Call::Gate("m:0".into()),
            Call::Pull {
                addr: "m:0".into(),
                offset: 10,
                sys_flag: pull_sys_flag::SUBSCRIPTION,
                timeout: Some(Duration::from_secs(3)),
            }
        ]
    );
}
