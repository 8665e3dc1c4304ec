//! The pop engine's decisions, against a scripted wire, in paused time.

use std::collections::VecDeque;
use std::future::{Future, pending};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_client_core::{AUTH_FAILURE_BACKOFF, PopResult, PopStatus};
use rmq_protocol::body::{BatchAckMessageRequestBody, SubscriptionData};
use rmq_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    ConsumerSendMsgBackRequestHeader, PopMessageRequestHeader,
};
use rmq_protocol::pop::{ExtraInfo, POP_CK, RetryFlag};
use rmq_protocol::{Message, MessageExt, MessageQueue, RemotingCommand, RequestCode, ResponseCode};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::*;
use crate::Expression;

/// The settle calls: acks, the acker, invisible-time changes, retry delays, the DLQ header.
mod settle;

const DELAYS: PopDelays = PopDelays {
    interval: Duration::from_millis(7),
    exception: Duration::from_millis(3000),
    broker_flow_control: Duration::from_millis(20),
};

/// A call the engine made.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Pop {
        queue_id: i32,
        max: i32,
        attempt_id: Option<String>,
    },
    Ack(i64),
    BatchAck(Vec<(i64, Vec<u32>)>),
    Change(i64, i64),
    SendBack(i32),
}

/// What a scripted pop does.
enum Reply {
    After(Duration, rmq_client_core::Result<PopResult>),
    Hang,
}

/// A wire that answers from a script and records the calls.
#[derive(Default)]
struct Script {
    pops: Mutex<VecDeque<Reply>>,
    /// BATCH_ACK_MESSAGE answers REQUEST_CODE_NOT_SUPPORTED.
    no_batch: bool,
    calls: Mutex<Vec<Call>>,
}

impl Script {
    fn replying(replies: impl IntoIterator<Item = Reply>) -> Script {
        Script {
            pops: Mutex::new(replies.into_iter().collect()),
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

impl PopWire for Script {
    async fn master_addr(&self, _mq: &MessageQueue) -> rmq_client_core::Result<String> {
        Ok("m:0".into())
    }

    fn pop(
        &self,
        _addr: &str,
        _broker_name: &str,
        header: PopMessageRequestHeader,
        _timeout: Option<Duration>,
    ) -> impl Future<Output = rmq_client_core::Result<PopResult>> + Send {
        self.record(Call::Pop {
            queue_id: header.queue_id,
            max: header.max_msg_nums,
            attempt_id: header.attempt_id,
        });
        let reply = self.pops.lock().unwrap().pop_front();
        async move {
            match reply {
                Some(Reply::After(d, r)) => {
                    tokio::time::sleep(d).await;
                    r
                }
                Some(Reply::Hang) | None => pending().await,
            }
        }
    }

    async fn ack(
        &self,
        _addr: &str,
        header: AckMessageRequestHeader,
    ) -> rmq_client_core::Result<()> {
        self.record(Call::Ack(header.offset));
        Ok(())
    }

    async fn batch_ack(
        &self,
        _addr: &str,
        body: &BatchAckMessageRequestBody,
    ) -> rmq_client_core::Result<()> {
        if self.no_batch {
            return Err(error(ResponseCode::REQUEST_CODE_NOT_SUPPORTED, "no"));
        }
        let acks = body
            .acks
            .iter()
            .map(|a| (a.start_offset, a.bit_set.iter().copied().collect()))
            .collect();
        self.record(Call::BatchAck(acks));
        Ok(())
    }

    async fn change_invisible(
        &self,
        _addr: &str,
        header: ChangeInvisibleTimeRequestHeader,
    ) -> rmq_client_core::Result<ChangeInvisibleTimeResponseHeader> {
        self.record(Call::Change(header.offset, header.invisible_time));
        Ok(ChangeInvisibleTimeResponseHeader {
            pop_time: 500,
            invisible_time: header.invisible_time,
            revive_qid: 2,
        })
    }

    async fn send_back(
        &self,
        _addr: &str,
        header: ConsumerSendMsgBackRequestHeader,
    ) -> rmq_client_core::Result<()> {
        self.record(Call::SendBack(header.delay_level));
        Ok(())
    }
}

/// A broker answer with `code`, as `pop_message` maps it.
fn error(code: ResponseCode, remark: &str) -> rmq_client_core::Error {
    let response = RemotingCommand::new_response(code, Some(remark.to_owned()));
    PopResult::from_response("m:0", "b", response).expect_err("an error code")
}

fn refused(code: ResponseCode, remark: &str) -> Reply {
    Reply::After(Duration::from_millis(5), Err(error(code, remark)))
}

fn ck(offset: i64, ck_offset: i64) -> ExtraInfo {
    ExtraInfo {
        ck_queue_offset: ck_offset,
        pop_time: 100,
        invisible_time: 60_000,
        revive_qid: 1,
        retry: RetryFlag::Normal,
        broker_name: "b".into(),
        queue_id: 3,
        queue_offset: offset,
    }
}

/// A popped message at `offset` with `tag`, delivered `reconsume` times before.
fn popped_msg(topic: &str, offset: i64, tag: &str, reconsume: i32) -> MessageExt {
    let mut message = Message::new(topic, "b").with_tags(tag);
    message.set_property(POP_CK, ck(offset, 10).to_string());
    MessageExt {
        message,
        queue_offset: offset,
        reconsume_times: reconsume,
        ..MessageExt::default()
    }
}

fn found(msgs: Vec<MessageExt>) -> Reply {
    Reply::After(
        Duration::from_millis(5),
        Ok(PopResult {
            status: PopStatus::Found,
            pop_time: 100,
            invisible_time: 60_000,
            rest_num: 0,
            messages: msgs,
        }),
    )
}

fn status(status: PopStatus) -> Reply {
    Reply::After(
        Duration::from_millis(5),
        Ok(PopResult {
            status,
            pop_time: 0,
            invisible_time: 0,
            rest_num: 0,
            messages: Vec::new(),
        }),
    )
}

fn sub(expression: &str) -> SubscriptionData {
    Expression::tag(expression).to_subscription("T", 1)
}

fn query<'a>(mq: &'a MessageQueue, filter: &'a SubscriptionData) -> PopQuery<'a> {
    PopQuery {
        group: "G",
        client_id: "c",
        mq,
        filter,
        max: 32,
        invisible: Duration::from_secs(60),
        poll: Duration::from_secs(20),
        init_mode: InitMode::Max,
        order: false,
        dlq_after: Some(16),
        namespace: &NO_NAMESPACE,
    }
}

static NO_NAMESPACE: rmq_protocol::namespace::Namespace =
    rmq_protocol::namespace::Namespace::none();

fn any_queue() -> MessageQueue {
    MessageQueue::new("T", "b", -1)
}

#[tokio::test(start_paused = true)]
async fn each_answer_and_failure_decides_the_next_pop() {
    let auth = "User:u has no permission to access Topic:T from 1.2.3.4, no matched policies.";
    let cases: [(Reply, &str, Duration); 8] = [
        (
            found(vec![popped_msg("T", 10, "a", 0)]),
            "found",
            DELAYS.interval,
        ),
        (status(PopStatus::NoNewMsg), "empty", Duration::ZERO),
        (
            status(PopStatus::PollingFull),
            "polling full",
            DELAYS.exception,
        ),
        (
            refused(ResponseCode::FLOW_CONTROL, "busy"),
            "flow control",
            DELAYS.broker_flow_control,
        ),
        (
            refused(ResponseCode::NO_PERMISSION, auth),
            "refused",
            AUTH_FAILURE_BACKOFF,
        ),
        (
            refused(ResponseCode::REQUEST_CODE_NOT_SUPPORTED, "4.x"),
            "unsupported",
            DELAYS.exception,
        ),
        (
            refused(ResponseCode::SYSTEM_BUSY, "busy"),
            "failed",
            DELAYS.exception,
        ),
        // Everything found was dropped by the checks: pop again at once.
        (
            found(vec![popped_msg("T", 10, "x", 0)]),
            "empty",
            Duration::ZERO,
        ),
    ];
    let (mq, filter) = (any_queue(), sub("a"));
    for (reply, want, wait) in cases {
        let script = Script::replying([reply]);
        let mut cursor = PopCursor::new();
        let step = cursor
            .step(
                &script,
                &query(&mq, &filter),
                DELAYS,
                &CancellationToken::new(),
            )
            .await;
        let (got, after) = match step {
            PopStep::Found { after, .. } => ("found", after),
            PopStep::Empty => ("empty", Duration::ZERO),
            PopStep::Retry { after, cause } => (
                match cause {
                    RetryCause::Status(PopStatus::PollingFull) => "polling full",
                    RetryCause::Status(_) => "status",
                    RetryCause::BrokerFlowControl => "flow control",
                    RetryCause::Refused(_) => "refused",
                    RetryCause::Failed(FetchError::Pop { error, .. })
                        if rmq_client_core::is_pop_unsupported(&error) =>
                    {
                        "unsupported"
                    }
                    RetryCause::Failed(_) => "failed",
                },
                after,
            ),
            PopStep::Cancelled => ("cancelled", Duration::ZERO),
        };
        assert_eq!((got, after), (want, wait), "case {want}");
    }
}

#[tokio::test(start_paused = true)]
async fn decoding_restores_the_topic_drops_foreign_tags_and_moves_the_worn_out() {
    let group = "G";
    let retry_topic = rmq_protocol::pop::pop_retry_topic("T", group);
    let msgs = vec![
        popped_msg(&retry_topic, 10, "a", 1),
        popped_msg("T", 11, "b", 0),
        popped_msg("T", 12, "a", 17),
        MessageExt::default(),
    ];
    let script = Script::replying([found(msgs)]);
    let (mq, filter) = (any_queue(), sub("a"));
    let answer = PopCursor::new()
        .fetch(&script, &query(&mq, &filter))
        .await
        .unwrap();
    let kept: Vec<(String, i64)> = answer
        .popped
        .iter()
        .map(|p| (p.msg.topic.clone(), p.handle.ck.queue_offset))
        .collect();
    assert_eq!(kept, [("T".to_owned(), 10)]);
    assert_eq!(
        script.calls()[1..],
        [Call::Ack(11), Call::SendBack(-1), Call::Ack(12)]
    );
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_orderly_pop_keeps_its_attempt_id() {
    let script = Script::replying([
        Reply::After(
            Duration::from_millis(5),
            Err(rmq_client_core::Error::Shutdown),
        ),
        status(PopStatus::NoNewMsg),
        status(PopStatus::NoNewMsg),
    ]);
    let (mq, filter) = (any_queue(), sub("*"));
    let q = PopQuery {
        order: true,
        ..query(&mq, &filter)
    };
    let mut cursor = PopCursor::new();
    for _ in 0..3 {
        let _ = cursor.fetch(&script, &q).await;
    }
    let ids: Vec<Option<String>> = script
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::Pop { attempt_id, .. } => Some(attempt_id),
            _ => None,
        })
        .collect();
    assert!(ids.iter().all(Option::is_some));
    assert_eq!(ids[0], ids[1], "a lost pop is tried again with its id");
    assert_ne!(ids[1], ids[2], "an answered pop ends the attempt");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_pop_ends_at_once() {
    let script = Script::replying([Reply::Hang]);
    let (mq, filter) = (any_queue(), sub("*"));
    let cancel = CancellationToken::new();
    let step = {
        let mut cursor = PopCursor::new();
        let q = query(&mq, &filter);
        let run = cursor.step(&script, &q, DELAYS, &cancel);
        cancel.cancel();
        run.await
    };
    assert!(matches!(step, PopStep::Cancelled));
}

#[test]
fn flow_control_pauses_at_the_thresholds_and_pops_no_more_than_the_room() {
    let limits = PopLimits {
        count: 100,
        mib: 1,
        batch: 32,
    };
    assert_eq!(limits.room(0, 0), Room::Pop(32));
    assert_eq!(limits.room(90, 0), Room::Pop(10));
    assert_eq!(limits.room(100, 0), Room::Full("message count"));
    assert_eq!(limits.room(1, 2 * 1024 * 1024), Room::Full("message size"));
}
