//! [`Subscriptions`]: the consumer's topic → subscription table, shared by
//! the heartbeat (via the consumer handle), the rebalance and the pull
//! loops.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use rmq_protocol::body::{ExpressionType, SubscriptionData};

use crate::config::Subscription;

#[derive(Debug, Clone)]
struct Entry {
    /// What the heartbeat reports (its `sub_version` is bumped when the
    /// topic's assignment changes, like Java).
    data: Arc<SubscriptionData>,
    /// The version pulls carry: the heartbeat's version once a heartbeat
    /// with it has been sent, so pulls never run ahead of the broker
    /// (SUBSCRIPTION_NOT_LATEST).
    pull_version: i64,
}

/// Topic → subscription, including `%RETRY%<group>` in clustering mode.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    table: RwLock<BTreeMap<String, Entry>>,
}

impl Subscriptions {
    /// Builds the table from the user's subscriptions (the last one of a
    /// topic wins, as in Java's map) plus, if given, the retry topic with
    /// `*`. `version` is the initial `subVersion` (ms timestamp).
    pub(crate) fn new(subs: &[Subscription], retry_topic: Option<&str>, version: i64) -> Self {
        let mut table = BTreeMap::new();
        let retry = retry_topic.map(|t| (t, "*", ExpressionType::Tag));
        for (topic, expr, ty) in subs
            .iter()
            .map(|s| (s.topic.as_str(), s.expression.as_str(), s.expression_type))
            .chain(retry)
        {
            let data = SubscriptionData::build(topic, expr, ty, version);
            table.insert(
                topic.to_owned(),
                Entry {
                    data: Arc::new(data),
                    pull_version: version,
                },
            );
        }
        Subscriptions {
            table: RwLock::new(table),
        }
    }

    /// Every subscribed topic, sorted.
    pub(crate) fn topics(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Every subscription, as the heartbeat sends them.
    pub(crate) fn all(&self) -> Vec<SubscriptionData> {
        self.read().values().map(|e| (*e.data).clone()).collect()
    }

    /// The subscription of `topic` and the `subVersion` pulls must carry.
    pub(crate) fn for_pull(&self, topic: &str) -> Option<(Arc<SubscriptionData>, i64)> {
        self.read()
            .get(topic)
            .map(|e| (e.data.clone(), e.pull_version))
    }

    /// Sets the heartbeat's `subVersion` of `topic` to `version` (never
    /// backwards); pulls keep the old one until
    /// [`confirm_version`](Self::confirm_version).
    pub(crate) fn bump_version(&self, topic: &str, version: i64) -> Option<i64> {
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        let entry = table.get_mut(topic)?;
        let v = version.max(entry.data.sub_version);
        let mut data = (*entry.data).clone();
        data.sub_version = v;
        entry.data = Arc::new(data);
        Some(v)
    }

    /// A heartbeat carrying `version` for `topic` was sent: pulls use it.
    pub(crate) fn confirm_version(&self, topic: &str, version: i64) {
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = table.get_mut(topic) {
            entry.pull_version = entry.pull_version.max(version);
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Entry>> {
        self.table.read().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(topic: &str, expr: &str, ty: ExpressionType) -> Subscription {
        Subscription {
            topic: topic.into(),
            expression: expr.into(),
            expression_type: ty,
        }
    }

    #[test]
    fn table_includes_retry_and_versions_move_forward() {
        let s = Subscriptions::new(
            &[
                sub("A", "x || y", ExpressionType::Tag),
                sub("B", "a > 5", ExpressionType::Sql92),
                sub("A", "z", ExpressionType::Tag),
            ],
            Some("%RETRY%G"),
            100,
        );
        assert_eq!(s.topics(), ["%RETRY%G", "A", "B"]);
        let all = s.all();
        assert_eq!(all.len(), 3);
        let a = all.iter().find(|d| d.topic == "A").unwrap();
        assert_eq!(a.tags_set, ["z"]);
        let b = all.iter().find(|d| d.topic == "B").unwrap();
        assert_eq!(b.expression_type, ExpressionType::Sql92);
        let r = all.iter().find(|d| d.topic == "%RETRY%G").unwrap();
        assert!(r.is_sub_all());

        assert_eq!(s.bump_version("A", 200), Some(200));
        assert_eq!(s.bump_version("A", 150), Some(200));
        assert_eq!(s.bump_version("nope", 1), None);
        let (data, pull) = s.for_pull("A").unwrap();
        assert_eq!((data.sub_version, pull), (200, 100));
        s.confirm_version("A", 200);
        assert_eq!(s.for_pull("A").unwrap().1, 200);
        assert!(s.for_pull("C").is_none());

        let broadcast = Subscriptions::new(&[sub("A", "*", ExpressionType::Tag)], None, 1);
        assert_eq!(broadcast.topics(), ["A"]);
    }
}
