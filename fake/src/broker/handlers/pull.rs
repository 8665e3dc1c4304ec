//! PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361, 5.x only) (Java
//! `PullMessageProcessor`, `DefaultPullMessageResultHandler`,
//! `PullRequestHoldService`).
//!
//! Checks in the broker's order (group, topic, queue id, subscription: from
//! the request with the SUBSCRIPTION bit, else from the group's heartbeat,
//! with its version), then reads the store. The answer's code follows the
//! store status (FOUND → 0; NO_MATCHED_MESSAGE → 20; empty queue → 19 at
//! offset 0, 21 elsewhere; at the max offset → 19; past it or below the min
//! → 21), its remark is the status name, its header the next / min / max
//! offsets. The COMMIT_OFFSET bit stores `commitOffset` for the group.
//!
//! With the SUSPEND bit, a pull that would answer 19 is held until a
//! matching message arrives in the queue or `suspendTimeoutMillis` (real
//! time) is up, then run again and answered; the connection stays free for
//! other requests meanwhile.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rmq_protocol::body::{ExpressionType, SubscriptionData};
use rmq_protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader, pull_sys_flag};
use rmq_protocol::{RemotingCommand, ResponseCode};
use tokio::sync::oneshot;

use super::{header, illegal_queue_code};
use crate::broker::filter::{MessageFilter, Sql};
use crate::broker::hold::HeldPull;
use crate::broker::store::GetStatus;
use crate::broker::{BrokerShared, BrokerState};
use crate::config::BrokerFlavor;
use crate::namesrv::FAQ;
use crate::net::{Handled, Incoming, response, response_with};

/// Longest hold honoured (a guard against absurd `suspendTimeoutMillis`).
const MAX_SUSPEND: Duration = Duration::from_secs(3600);

pub(super) fn handle(b: &Arc<BrokerShared>, incoming: Incoming) -> Option<Handled> {
    let h: PullMessageRequestHeader = match header(&incoming.cmd) {
        Ok(h) => h,
        Err(answer) => return incoming.reply(answer),
    };
    match pull_once(b, &h, true) {
        Outcome::Answer(answer) => incoming.reply(answer),
        Outcome::Suspend(filter) => {
            suspend(b, incoming, h, filter);
            None
        }
    }
}

enum Outcome {
    Answer(RemotingCommand),
    /// Nothing yet and the request may be held: hold it with this filter.
    Suspend(MessageFilter),
}

/// One pass of the pull; `allow_suspend` is false when a held pull runs
/// again (no second hold, no second offset commit).
fn pull_once(b: &BrokerShared, h: &PullMessageRequestHeader, allow_suspend: bool) -> Outcome {
    let mut st = b.state();
    let filter = match check(b, &mut st, h) {
        Ok(f) => f,
        Err(answer) => return Outcome::Answer(answer),
    };
    let got = st.store.get(
        &h.topic,
        h.queue_id,
        h.queue_offset,
        h.max_msg_nums,
        &filter,
    );
    let code = match got.status {
        GetStatus::Found => ResponseCode::SUCCESS,
        GetStatus::NoMatchedMessage => ResponseCode::PULL_RETRY_IMMEDIATELY,
        GetStatus::NoMessageInQueue if h.queue_offset != 0 => ResponseCode::PULL_OFFSET_MOVED,
        GetStatus::NoMessageInQueue | GetStatus::OffsetOverflowOne => ResponseCode::PULL_NOT_FOUND,
        GetStatus::OffsetOverflowBadly | GetStatus::OffsetTooSmall => {
            ResponseCode::PULL_OFFSET_MOVED
        }
    };
    if allow_suspend && h.sys_flag & pull_sys_flag::COMMIT_OFFSET != 0 {
        b.commit_offset(
            &mut st,
            &h.consumer_group,
            &h.topic,
            h.queue_id,
            h.commit_offset,
        );
    }
    if code == ResponseCode::PULL_NOT_FOUND
        && allow_suspend
        && h.sys_flag & pull_sys_flag::SUSPEND != 0
    {
        return Outcome::Suspend(filter);
    }
    let body = if code == ResponseCode::SUCCESS {
        let len = got.messages.iter().map(|m| m.record.len()).sum();
        let mut body = BytesMut::with_capacity(len);
        for m in &got.messages {
            body.extend_from_slice(&m.record);
        }
        body.freeze()
    } else {
        bytes::Bytes::new()
    };
    drop(st);
    let (topic_sys_flag, group_sys_flag) = match b.cfg.flavor {
        BrokerFlavor::V5 => (Some(0), Some(0)),
        BrokerFlavor::V4_9 => (None, None),
    };
    let header = PullMessageResponseHeader {
        suggest_which_broker_id: 0,
        next_begin_offset: got.next_begin_offset,
        min_offset: got.min_offset,
        max_offset: got.max_offset,
        offset_delta: None,
        topic_sys_flag,
        group_sys_flag,
        forbidden_type: None,
    };
    let mut answer = response_with(code, &header).with_body(body);
    answer.remark = Some(got.status.name().to_owned());
    Outcome::Answer(answer)
}

/// The broker's checks before reading; the filter to read with.
fn check(
    b: &BrokerShared,
    st: &mut BrokerState,
    h: &PullMessageRequestHeader,
) -> Result<MessageFilter, RemotingCommand> {
    let Some(group) = b.group(st, &h.consumer_group) else {
        return Err(response(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!(
                "subscription group [{}] does not exist, {FAQ}",
                h.consumer_group
            ),
        ));
    };
    if !group.consume_enable {
        return Err(response(
            ResponseCode::NO_PERMISSION,
            format!("subscription group no permission, {}", h.consumer_group),
        ));
    }
    let Some(topic) = st.topics.get(&h.topic).cloned() else {
        return Err(response(
            ResponseCode::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please! {FAQ}", h.topic),
        ));
    };
    if !rmq_protocol::body::perm::is_readable(topic.perm) {
        return Err(response(
            ResponseCode::NO_PERMISSION,
            format!("the topic[{}] pulling message is forbidden", h.topic),
        ));
    }
    if h.queue_id < 0 || h.queue_id >= topic.read_queue_nums {
        let code = illegal_queue_code(b.cfg.flavor);
        return Err(response(
            code,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{}]",
                h.queue_id, h.topic, topic.read_queue_nums, h.consumer_group
            ),
        ));
    }
    let (sub, sql) = if h.sys_flag & pull_sys_flag::SUBSCRIPTION != 0 {
        let expression = h.subscription.clone().unwrap_or_default();
        let ty = match h.expression_type.as_deref() {
            None | Some("TAG") => ExpressionType::Tag,
            // Java `FilterAPI.build` refuses an empty non-TAG expression.
            Some(_) if expression.is_empty() => {
                return Err(response(
                    ResponseCode::SUBSCRIPTION_PARSE_FAILED,
                    "parse the consumer's subscription failed".to_owned(),
                ));
            }
            Some("SQL92") => ExpressionType::Sql92,
            Some(other) => {
                // A type the broker has no filter for: its filter data is
                // null, so nothing is filtered (unless property filters are
                // off altogether).
                if !b.cfg.property_filter {
                    return Err(response(
                        ResponseCode::SYSTEM_ERROR,
                        format!(
                            "The broker does not support consumer to filter message by {other}"
                        ),
                    ));
                }
                return Ok(MessageFilter::All);
            }
        };
        let sub = SubscriptionData::build(h.topic.clone(), &expression, ty, h.sub_version);
        // An expression that does not compile filters nothing (the broker's
        // filter data is then null).
        let sql = (ty == ExpressionType::Sql92)
            .then(|| Sql::compile(&expression).ok().map(Arc::new))
            .flatten();
        (sub, sql)
    } else {
        let Some(info) = st.clients.consumers.get(&h.consumer_group) else {
            return Err(response(
                ResponseCode::SUBSCRIPTION_NOT_EXIST,
                format!("the consumer's group info not exist{FAQ}"),
            ));
        };
        let Some(sub) = info.subscriptions.get(&h.topic).cloned() else {
            return Err(response(
                ResponseCode::SUBSCRIPTION_NOT_EXIST,
                format!("the consumer's subscription not exist{FAQ}"),
            ));
        };
        if sub.sub_version < h.sub_version {
            return Err(response(
                ResponseCode::SUBSCRIPTION_NOT_LATEST,
                "the consumer's subscription not latest".to_owned(),
            ));
        }
        let mut sql = None;
        if sub.expression_type == ExpressionType::Sql92 {
            let Some(filter) = st.clients.filter(&h.topic, &h.consumer_group) else {
                return Err(response(
                    ResponseCode::FILTER_DATA_NOT_EXIST,
                    "The broker's consumer filter data is not exist!Your expression may be wrong!"
                        .to_owned(),
                ));
            };
            if filter.client_version < h.sub_version {
                return Err(response(
                    ResponseCode::FILTER_DATA_NOT_LATEST,
                    "the consumer's consumer filter data not latest".to_owned(),
                ));
            }
            sql = Some(Arc::clone(&filter.compiled));
        }
        (sub, sql)
    };
    if sub.expression_type != ExpressionType::Tag && !b.cfg.property_filter {
        return Err(response(
            ResponseCode::SYSTEM_ERROR,
            format!(
                "The broker does not support consumer to filter message by {}",
                sub.expression_type
            ),
        ));
    }
    Ok(MessageFilter::of(&sub, sql))
}

/// Holds the pull until a matching message arrives, its suspend time is up,
/// or its connection closes.
fn suspend(
    b: &Arc<BrokerShared>,
    incoming: Incoming,
    h: PullMessageRequestHeader,
    filter: MessageFilter,
) {
    let hold = if b.cfg.long_polling {
        Duration::from_millis(u64::try_from(h.suspend_timeout_millis).unwrap_or(0))
    } else {
        b.cfg.short_polling
    }
    .min(MAX_SUSPEND);
    let (wake, woken) = oneshot::channel();
    let id = {
        let mut st = b.state();
        let id = st.holds.next_id();
        st.holds.hold(
            &h.topic,
            h.queue_id,
            HeldPull {
                id,
                conn: incoming.conn.id,
                offset: h.queue_offset,
                filter,
                wake,
            },
        );
        id
    };
    let b = Arc::clone(b);
    let conn = Arc::clone(&incoming.conn);
    let responder = incoming.responder;
    conn.spawn(async move {
        tokio::select! {
            _ = woken => {}
            () = tokio::time::sleep(hold) => {
                b.state().holds.remove(&h.topic, h.queue_id, id);
            }
        }
        if let Outcome::Answer(answer) = pull_once(&b, &h, false) {
            responder.respond(answer).await;
        }
    });
}
