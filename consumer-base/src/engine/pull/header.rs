//! The PULL_MESSAGE request header every consumer sends (Java
//! `PullAPIWrapper.pullKernelImpl` and `PullSysFlag.buildSysFlag`).

use std::time::Duration;

use rmq_protocol::MessageQueue;
use rmq_protocol::body::{ExpressionType, SubscriptionData};
use rmq_protocol::header::{PullMessageRequestHeader, pull_sys_flag};

/// Where the broker finds the subscription of a pull.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionSource {
    /// In the request (SUBSCRIPTION bit, `subscription` +
    /// `expressionType`), so the broker needs no heartbeat-registered
    /// subscription — the pull consumers (Java `pullSyncImpl`). TAG pulls
    /// send `subVersion` 0, SQL92 pulls the subscription's version.
    InRequest,
    /// Registered by the consumer's heartbeat — the push consumer: the
    /// request names the `subVersion` the broker was last told.
    Heartbeat {
        /// The subscription version the heartbeat carried.
        sub_version: i64,
    },
}

/// How one pull asks the broker.
#[derive(Debug, Clone, Copy)]
pub struct PullSpec {
    /// Offset to pull from.
    pub offset: i64,
    /// Most messages.
    pub max: i32,
    /// Broker hold (long polling, SUSPEND bit); `None` for an immediate
    /// answer.
    pub hold: Option<Duration>,
    /// The consume offset to piggy-back (the request's `commitOffset`).
    pub commit_offset: i64,
    /// Whether the broker should store `commit_offset` (COMMIT_OFFSET bit).
    pub commit: bool,
    /// Where the broker finds the subscription.
    pub subscription: SubscriptionSource,
    /// The LITE_PULL_MESSAGE flag bit.
    pub lite: bool,
}

/// The request header of a pull of `mq` for `group` filtered by `sub`.
pub fn pull_header(
    group: &str,
    mq: &MessageQueue,
    sub: &SubscriptionData,
    spec: PullSpec,
) -> PullMessageRequestHeader {
    let mut header = PullMessageRequestHeader::default();
    fill_pull_header(&mut header, group, mq, sub, spec);
    header
}

/// [`pull_header`] into a header kept from an earlier pull: its strings'
/// buffers are reused, so a loop pulling one queue allocates nothing per
/// request once they have grown to fit.
pub fn fill_pull_header(
    header: &mut PullMessageRequestHeader,
    group: &str,
    mq: &MessageQueue,
    sub: &SubscriptionData,
    spec: PullSpec,
) {
    let in_request = spec.subscription == SubscriptionSource::InRequest;
    header.sys_flag = pull_sys_flag::build(
        spec.commit,
        spec.hold.is_some(),
        in_request,
        false,
        spec.lite,
    );
    let (subscription, sub_version) = match spec.subscription {
        SubscriptionSource::InRequest if sub.expression_type == ExpressionType::Tag => {
            (Some(sub.sub_string.as_str()), 0)
        }
        SubscriptionSource::InRequest => (Some(sub.sub_string.as_str()), sub.sub_version),
        SubscriptionSource::Heartbeat { sub_version } => (None, sub_version),
    };
    group.clone_into(&mut header.consumer_group);
    mq.topic.clone_into(&mut header.topic);
    header.queue_id = mq.queue_id;
    header.queue_offset = spec.offset;
    header.max_msg_nums = spec.max;
    header.commit_offset = spec.commit_offset;
    header.suspend_timeout_millis = spec
        .hold
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    set_option(&mut header.subscription, subscription);
    header.sub_version = sub_version;
    set_option(
        &mut header.expression_type,
        Some(sub.expression_type.as_str()),
    );
    header.max_msg_bytes = None;
    set_option(&mut header.broker_name, Some(&mq.broker_name));
}

/// `*field = value.map(str::to_owned)`, in the field's own buffer.
fn set_option(field: &mut Option<String>, value: Option<&str>) {
    match (field.as_mut(), value) {
        (Some(f), Some(v)) => v.clone_into(f),
        (_, v) => *field = v.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Expression;

    fn spec() -> PullSpec {
        PullSpec {
            offset: 5,
            max: 32,
            hold: Some(Duration::from_secs(20)),
            commit_offset: 0,
            commit: false,
            subscription: SubscriptionSource::InRequest,
            lite: true,
        }
    }

    #[test]
    fn pull_consumers_carry_the_subscription() {
        let mq = MessageQueue::new("T", "broker-a", 3);
        let sub = Expression::tag("a || b").to_subscription("T", 77);
        let h = pull_header("G", &mq, &sub, spec());
        assert_eq!(
            h.sys_flag,
            pull_sys_flag::build(false, true, true, false, true)
        );
        assert_eq!(h.suspend_timeout_millis, 20_000);
        assert_eq!(h.subscription.as_deref(), Some("a || b"));
        assert_eq!(h.sub_version, 0, "TAG subscriptions send version 0 (Java)");
        assert_eq!(h.expression_type.as_deref(), Some("TAG"));
        assert_eq!((h.queue_id, h.queue_offset, h.max_msg_nums), (3, 5, 32));
        assert_eq!(h.broker_name.as_deref(), Some("broker-a"));

        let sql = Expression::sql("a > 1").to_subscription("T", 77);
        let h = pull_header(
            "G",
            &mq,
            &sql,
            PullSpec {
                hold: None,
                lite: false,
                ..spec()
            },
        );
        assert_eq!(h.sys_flag, pull_sys_flag::SUBSCRIPTION);
        assert_eq!(h.suspend_timeout_millis, 0);
        assert_eq!(h.sub_version, 77);
        assert_eq!(h.expression_type.as_deref(), Some("SQL92"));
    }

    #[test]
    fn a_refilled_header_is_the_fresh_one() {
        let mq = MessageQueue::new("T", "broker-a", 3);
        let other = MessageQueue::new("Topic-2", "b", 1);
        let tag = Expression::tag("a").to_subscription("T", 5);
        let sql = Expression::sql("a > 1").to_subscription("Topic-2", 6);
        let heartbeat = PullSpec {
            subscription: SubscriptionSource::Heartbeat { sub_version: 4 },
            ..spec()
        };
        let mut h = pull_header("G", &mq, &tag, spec());
        for (group, mq, sub, spec) in [
            ("G", &mq, &tag, heartbeat),
            ("Group-2", &other, &sql, spec()),
            ("G", &mq, &tag, spec()),
            ("G", &mq, &tag, heartbeat),
        ] {
            fill_pull_header(&mut h, group, mq, sub, spec);
            assert_eq!(h, pull_header(group, mq, sub, spec));
        }
    }

    #[test]
    fn push_consumer_relies_on_its_heartbeat() {
        let mq = MessageQueue::new("T", "broker-a", 0);
        let sub = Expression::tag("*").to_subscription("T", 1);
        let h = pull_header(
            "G",
            &mq,
            &sub,
            PullSpec {
                commit_offset: 42,
                commit: true,
                hold: Some(Duration::from_secs(15)),
                subscription: SubscriptionSource::Heartbeat { sub_version: 9 },
                lite: false,
                ..spec()
            },
        );
        assert_eq!(
            h.sys_flag,
            pull_sys_flag::build(true, true, false, false, false)
        );
        assert_eq!((h.commit_offset, h.sub_version), (42, 9));
        assert_eq!(h.subscription, None);
        assert_eq!(h.suspend_timeout_millis, 15_000);
    }
}
