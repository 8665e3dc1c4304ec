//! Pieces both consumers share: [`ConsumeFrom`], [`Expression`], name
//! checks, broker address lookups, the pull request header, the
//! client-side tag re-check and the start offset of a queue.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rmq_client_core::{ClientConfig, ClientInstance};
use rmq_offset_store::{OffsetStore, ReadOffsetType, start_fallback};
use rmq_protocol::body::{ExpressionType, MessageModel, SubscriptionData};
use rmq_protocol::header::{BoundaryType, PullMessageRequestHeader, pull_sys_flag};
use rmq_protocol::names::{self, NameKind};
use rmq_protocol::{MessageExt, MessageQueue};

use crate::error::{Error, Result};

pub use rmq_client_core::DEFAULT_CONSUMER_GROUP;
pub use rmq_offset_store::ConsumeFrom;

/// A filter expression: tags (`"*"`, `"created || paid"`) or an SQL92
/// condition on message properties (evaluated by the broker, which needs
/// `enablePropertyFilter=true`).
///
/// A `&str` or `String` converts into a tag expression:
///
/// ```
/// use rmq_consumer_pull::Expression;
///
/// let all: Expression = "*".into();
/// assert_eq!(all, Expression::tag("*"));
/// let sql = Expression::sql("amount > 100");
/// assert_eq!(sql.text(), "amount > 100");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Expression {
    kind: ExpressionType,
    text: String,
}

impl Expression {
    /// A tag expression: `"*"` (everything) or tags joined by `||`.
    pub fn tag(tags: impl Into<String>) -> Self {
        Expression {
            kind: ExpressionType::Tag,
            text: tags.into(),
        }
    }

    /// An SQL92 expression (Java `MessageSelector.bySql`).
    pub fn sql(sql: impl Into<String>) -> Self {
        Expression {
            kind: ExpressionType::Sql92,
            text: sql.into(),
        }
    }

    /// Everything (`"*"`).
    pub fn all() -> Self {
        Expression::tag("*")
    }

    /// Tag or SQL92.
    pub fn kind(&self) -> ExpressionType {
        self.kind
    }

    /// The expression text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The subscription data this expression gives for `topic` (Java
    /// `FilterAPI.build`).
    pub(crate) fn to_subscription(&self, topic: &str, version: i64) -> SubscriptionData {
        SubscriptionData::build(topic, &self.text, self.kind, version)
    }

    pub(crate) fn check(&self, topic: &str) -> Result<(), String> {
        if self.kind == ExpressionType::Sql92 && self.text.trim().is_empty() {
            return Err(format!("the SQL92 expression of topic {topic:?} is empty"));
        }
        Ok(())
    }
}

impl Default for Expression {
    fn default() -> Self {
        Expression::all()
    }
}

impl From<&str> for Expression {
    fn from(tags: &str) -> Self {
        Expression::tag(tags)
    }
}

impl From<String> for Expression {
    fn from(tags: String) -> Self {
        Expression::tag(tags)
    }
}

impl From<&String> for Expression {
    fn from(tags: &String) -> Self {
        Expression::tag(tags.clone())
    }
}

/// Starts (or joins) the client instance of a consumer of `model` and runs
/// `start_on` with it; when that fails the instance is released again.
///
/// Clustering consumers get a pid-based instance name first (Java
/// `changeInstanceNameToPID`): members of a group need distinct client ids.
pub(crate) async fn start_with_instance<T, F, Fut>(
    model: MessageModel,
    mut client: ClientConfig,
    start_on: F,
) -> Result<T>
where
    F: FnOnce(ClientInstance) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    if model == MessageModel::Clustering {
        client.change_instance_name_to_pid();
    }
    let instance = ClientInstance::get_or_start(client)?;
    match start_on(instance.clone()).await {
        Ok(started) => Ok(started),
        Err(e) => {
            instance.release().await;
            Err(e)
        }
    }
}

/// Checks a topic name like the Java `Validators`.
pub(crate) fn check_topic(topic: &str) -> Result<(), String> {
    names::check(NameKind::Topic, topic).map_err(|e| e.to_string())
}

/// Checks a consumer group name (also refuses the reserved default).
pub(crate) fn check_group(group: &str) -> Result<(), String> {
    names::check(NameKind::ConsumerGroup, group).map_err(|e| e.to_string())
}

/// `t` in milliseconds since the epoch (0 before 1970).
pub(crate) use rmq_protocol::epoch_millis as system_time_ms;

/// A duration in whole milliseconds, saturated to `i64`.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The consumer error for a failed address lookup.
fn lookup_error(e: rmq_client_core::Error) -> Error {
    match e {
        rmq_client_core::Error::BrokerNotFound { broker_name } => {
            Error::BrokerNotFound { broker_name }
        }
        e => e.into(),
    }
}

/// The master address of the queue's broker, refreshing the route once
/// when unknown (Java `MQAdminImpl` lookups).
pub(crate) async fn master_addr(instance: &ClientInstance, mq: &MessageQueue) -> Result<String> {
    instance.master_addr(mq).await.map_err(lookup_error)
}

/// The address to pull `mq` from: the suggested broker id, else another
/// node of the broker (Java `findBrokerAddressInSubscribe`), refreshing the
/// route once when the broker is unknown. Returns the address and whether
/// it is a slave.
pub(crate) async fn pull_addr(
    instance: &ClientInstance,
    mq: &MessageQueue,
    broker_id: i64,
) -> Result<(String, bool)> {
    instance
        .subscribe_addr(mq, broker_id, false)
        .await
        .map_err(lookup_error)
}

/// Makes sure a heartbeat naming this client's groups reached a broker
/// before the first call to it: 5.x brokers refuse offset updates of a
/// group they have not seen, and the instance's own early heartbeat after a
/// route change runs in the background (it may lose the race).
#[derive(Debug, Default)]
pub(crate) struct HeartbeatGate {
    seen: Mutex<HashSet<String>>,
}

impl HeartbeatGate {
    /// Sends a heartbeat now (to every known broker) if `addr` has not had
    /// one through this gate yet.
    pub(crate) async fn ensure(&self, instance: &ClientInstance, addr: &str) {
        if self.lock().contains(addr) {
            return;
        }
        instance.send_heartbeat_now().await;
        let mut seen = self.lock();
        seen.insert(addr.to_owned());
        seen.extend(instance.broker_addrs().into_iter().map(|(_, _, a)| a));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How a pull asks the broker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PullSpec {
    /// Offset to pull from.
    pub(crate) offset: i64,
    /// Most messages.
    pub(crate) max: i32,
    /// Broker hold (long polling), `None` for an immediate answer.
    pub(crate) hold: Option<Duration>,
    /// LITE_PULL_MESSAGE instead of PULL_MESSAGE.
    pub(crate) lite: bool,
}

/// The pull request header of the pull consumers: the subscription always
/// travels in the request (SUBSCRIPTION bit), so the broker needs no
/// heartbeat-registered subscription; no commit offset (Java
/// `pullSyncImpl`: `buildSysFlag(false, block, true, false[, true])`).
pub(crate) fn pull_header(
    group: &str,
    mq: &MessageQueue,
    sub: &SubscriptionData,
    spec: PullSpec,
) -> PullMessageRequestHeader {
    let sys_flag = pull_sys_flag::build(false, spec.hold.is_some(), true, false, spec.lite);
    let sub_version = if sub.expression_type == ExpressionType::Tag {
        0
    } else {
        sub.sub_version
    };
    PullMessageRequestHeader {
        consumer_group: group.to_owned(),
        topic: mq.topic.clone(),
        queue_id: mq.queue_id,
        queue_offset: spec.offset,
        max_msg_nums: spec.max,
        sys_flag,
        commit_offset: 0,
        suspend_timeout_millis: spec.hold.map_or(0, millis),
        subscription: Some(sub.sub_string.clone()),
        sub_version,
        expression_type: Some(sub.expression_type.as_str().to_owned()),
        max_msg_bytes: None,
        broker_name: Some(mq.broker_name.clone()),
    }
}

/// Keeps the messages whose tag the subscription accepts (Java
/// `PullAPIWrapper.processPullResult`): the broker filters by tag hash
/// code, so hash collisions let foreign tags through; this compares the
/// strings. `*` and SQL92 subscriptions keep everything.
pub(crate) fn filter_by_tags(msgs: &mut Vec<MessageExt>, sub: &SubscriptionData) {
    if sub.tags_set.is_empty() || sub.class_filter_mode {
        return;
    }
    msgs.retain(|m| sub.matches_tag(m.tags()));
}

/// What to ask the broker when the store has no offset.
pub(crate) use rmq_offset_store::StartFallback as Fallback;

/// The Java rules for a queue the store has no offset for
/// (`RebalanceLitePullImpl.computePullFromWhereWithException`): every
/// `%RETRY%` topic counts as a retry topic.
pub(crate) fn fallback(from: ConsumeFrom, topic: &str) -> Fallback {
    start_fallback(from, names::is_retry_topic(topic))
}

/// Where `mq` starts: the stored offset (broker or file), else
/// [`fallback`].
pub(crate) async fn start_offset(
    instance: &ClientInstance,
    store: &dyn OffsetStore,
    mq: &MessageQueue,
    from: ConsumeFrom,
) -> Result<i64> {
    let wrap = |e: Error| Error::StartOffset {
        queue: mq.clone(),
        source: Box::new(e),
    };
    let stored = store
        .read_offset(mq, ReadOffsetType::ReadFromStore)
        .await
        .map_err(|e| wrap(e.into()))?;
    if let Some(offset) = stored.filter(|o| *o >= 0) {
        return Ok(offset);
    }
    let at = match fallback(from, &mq.topic) {
        Fallback::At(offset) => return Ok(offset),
        Fallback::MaxOffset => max_offset(instance, mq).await,
        Fallback::Search(ms) => search_offset(instance, mq, ms).await,
    };
    at.map_err(wrap)
}

/// GET_MAX_OFFSET at the queue's master.
pub(crate) async fn max_offset(instance: &ClientInstance, mq: &MessageQueue) -> Result<i64> {
    let addr = master_addr(instance, mq).await?;
    Ok(instance
        .get_max_offset(&addr, &mq.topic, mq.queue_id, Some(&mq.broker_name))
        .await?)
}

/// GET_MIN_OFFSET at the queue's master.
pub(crate) async fn min_offset(instance: &ClientInstance, mq: &MessageQueue) -> Result<i64> {
    let addr = master_addr(instance, mq).await?;
    Ok(instance
        .get_min_offset(&addr, &mq.topic, mq.queue_id, Some(&mq.broker_name))
        .await?)
}

/// SEARCH_OFFSET_BY_TIMESTAMP (lower boundary) at the queue's master.
pub(crate) async fn search_offset(
    instance: &ClientInstance,
    mq: &MessageQueue,
    timestamp_ms: i64,
) -> Result<i64> {
    let addr = master_addr(instance, mq).await?;
    Ok(instance
        .search_offset(
            &addr,
            &mq.topic,
            mq.queue_id,
            timestamp_ms,
            BoundaryType::Lower,
        )
        .await?)
}

#[cfg(test)]
mod tests {
    use rmq_protocol::Message;

    use super::*;

    #[test]
    fn java_start_rules() {
        assert_eq!(fallback(ConsumeFrom::LastOffset, "T"), Fallback::MaxOffset);
        assert_eq!(
            fallback(ConsumeFrom::LastOffset, "%RETRY%G"),
            Fallback::At(0)
        );
        assert_eq!(fallback(ConsumeFrom::FirstOffset, "T"), Fallback::At(0));
        let t = std::time::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(
            fallback(ConsumeFrom::Timestamp(t), "T"),
            Fallback::Search(1_700_000_000_123)
        );
        assert_eq!(
            fallback(ConsumeFrom::Timestamp(t), "%RETRY%G"),
            Fallback::MaxOffset
        );
    }

    #[test]
    fn names() {
        assert!(check_group("g-1_a|b%c").is_ok());
        assert!(check_group("").is_err());
        assert!(check_group(DEFAULT_CONSUMER_GROUP).is_err());
        assert!(check_group("a b").unwrap_err().contains("' '"));
        assert!(check_topic(&"x".repeat(128)).is_err());
    }

    #[test]
    fn header_always_carries_the_subscription() {
        let mq = MessageQueue::new("T", "broker-a", 3);
        let sub = Expression::tag("a || b").to_subscription("T", 77);
        let spec = PullSpec {
            offset: 5,
            max: 32,
            hold: Some(Duration::from_secs(20)),
            lite: true,
        };
        let h = pull_header("G", &mq, &sub, spec);
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
        let spec = PullSpec {
            hold: None,
            lite: false,
            ..spec
        };
        let h = pull_header("G", &mq, &sql, spec);
        assert_eq!(h.sys_flag, pull_sys_flag::SUBSCRIPTION);
        assert_eq!(h.suspend_timeout_millis, 0);
        assert_eq!(h.sub_version, 77);
        assert_eq!(h.expression_type.as_deref(), Some("SQL92"));
    }

    #[test]
    fn tag_recheck() {
        let msg = |tag: Option<&str>| {
            let mut m = Message::new("T", "b");
            if let Some(t) = tag {
                m = m.with_tags(t);
            }
            MessageExt {
                message: m,
                ..MessageExt::default()
            }
        };
        let sub = Expression::tag("a || b").to_subscription("T", 0);
        let mut msgs = vec![msg(Some("a")), msg(Some("c")), msg(None), msg(Some("b"))];
        filter_by_tags(&mut msgs, &sub);
        let tags: Vec<_> = msgs.iter().map(|m| m.tags()).collect();
        assert_eq!(tags, [Some("a"), Some("b")]);
        let all = Expression::all().to_subscription("T", 0);
        let mut msgs = vec![msg(None), msg(Some("x"))];
        filter_by_tags(&mut msgs, &all);
        assert_eq!(msgs.len(), 2);
    }

    #[test]
    fn expressions() {
        assert_eq!(Expression::from("*"), Expression::all());
        assert_eq!(Expression::default().kind(), ExpressionType::Tag);
        assert!(Expression::sql(" ").check("T").is_err());
        assert!(Expression::tag("").check("T").is_ok());
    }
}
