//! What happens to a pulled batch before a consumer keeps it: the
//! client-side tag re-check, the retry-topic restoration and the topic out
//! of the namespace (Java `PullAPIWrapper.processPullResult` and
//! `resetRetryAndNamespace`).

use rmq_protocol::MessageExt;
use rmq_protocol::body::SubscriptionData;
use rmq_protocol::message::property;
use rmq_protocol::namespace::Namespace;

/// Keeps the messages whose tag `sub` accepts — the broker filters by tag
/// hash code, so hash collisions let foreign tags through; this compares
/// the strings (`*` and SQL92 subscriptions keep everything) — and, when
/// `retry_topic` is given, shows the messages read from it with their
/// original topic ([`restore_retry_topic`]); then every topic leaves
/// `namespace`.
pub fn filter_pulled(
    msgs: &mut Vec<MessageExt>,
    sub: &SubscriptionData,
    retry_topic: Option<&str>,
    namespace: &Namespace,
) {
    if !sub.tags_set.is_empty() && !sub.class_filter_mode {
        msgs.retain(|m| sub.matches_tag(m.tags()));
    }
    if let Some(retry_topic) = retry_topic {
        for msg in msgs.iter_mut() {
            restore_retry_topic(msg, retry_topic);
        }
    }
    if !namespace.is_none() {
        for msg in msgs {
            namespace.unwrap_in_place(&mut msg.message.topic);
        }
    }
}

/// A message read from `retry_topic` (`%RETRY%<group>`) that carries the
/// `RETRY_TOPIC` property gets its original topic back. Queue id and broker
/// name stay those of the retry queue.
pub fn restore_retry_topic(msg: &mut MessageExt, retry_topic: &str) {
    if msg.topic != retry_topic {
        return;
    }
    if let Some(original) = msg.property(property::RETRY_TOPIC) {
        if !original.is_empty() {
            msg.message.topic = original.to_owned();
        }
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::Message;
    use rmq_protocol::body::ExpressionType;

    use super::*;

    fn msg(topic: &str, tag: Option<&str>) -> MessageExt {
        let mut m = Message::new(topic, "b");
        if let Some(t) = tag {
            m = m.with_tags(t);
        }
        MessageExt {
            message: m,
            ..MessageExt::default()
        }
    }

    #[test]
    fn tag_recheck_keeps_exact_matches_only() {
        let sub = SubscriptionData::build("T", "a || b", ExpressionType::Tag, 1);
        let mut msgs = vec![
            msg("T", Some("a")),
            msg("T", Some("c")),
            msg("T", None),
            msg("T", Some("b")),
            msg("T", Some("A")),
        ];
        filter_pulled(&mut msgs, &sub, None, &Namespace::none());
        let tags: Vec<_> = msgs.iter().map(|m| m.tags()).collect();
        assert_eq!(tags, [Some("a"), Some("b")]);
    }

    #[test]
    fn star_and_sql_keep_everything() {
        for sub in [
            SubscriptionData::build("T", "*", ExpressionType::Tag, 1),
            SubscriptionData::build("T", "a > 5", ExpressionType::Sql92, 1),
        ] {
            let mut msgs = vec![msg("T", None), msg("T", Some("x"))];
            filter_pulled(&mut msgs, &sub, None, &Namespace::none());
            assert_eq!(msgs.len(), 2);
        }
    }

    #[test]
    fn retry_topic_is_restored() {
        let mut m = msg("%RETRY%G", Some("a"));
        m.message.set_property(property::RETRY_TOPIC, "orders");
        restore_retry_topic(&mut m, "%RETRY%G");
        assert_eq!(m.topic, "orders");
        // Only for this group's retry topic.
        let mut other = msg("%RETRY%H", None);
        other.message.set_property(property::RETRY_TOPIC, "orders");
        restore_retry_topic(&mut other, "%RETRY%G");
        assert_eq!(other.topic, "%RETRY%H");
        // Without the property nothing changes.
        let mut bare = msg("%RETRY%G", None);
        restore_retry_topic(&mut bare, "%RETRY%G");
        assert_eq!(bare.topic, "%RETRY%G");
        // A normal message with a stale property keeps its topic.
        let mut normal = msg("orders", None);
        normal.message.set_property(property::RETRY_TOPIC, "x");
        restore_retry_topic(&mut normal, "%RETRY%G");
        assert_eq!(normal.topic, "orders");
    }

    #[test]
    fn filter_then_restore() {
        let sub = SubscriptionData::build("%RETRY%G", "*", ExpressionType::Tag, 1);
        let mut m = msg("%RETRY%G", None);
        m.message.set_property(property::RETRY_TOPIC, "orders");
        let mut kept = vec![m.clone()];
        filter_pulled(&mut kept, &sub, Some("%RETRY%G"), &Namespace::none());
        assert_eq!(kept[0].topic, "orders");
        let mut untouched = vec![m];
        filter_pulled(&mut untouched, &sub, None, &Namespace::none());
        assert_eq!(untouched[0].topic, "%RETRY%G");
    }

    #[test]
    fn namespaced_topics_are_restored_then_unwrapped() {
        let ns = Namespace::new("ns");
        let sub = SubscriptionData::build("%RETRY%ns%G", "*", ExpressionType::Tag, 1);
        let mut retried = msg("%RETRY%ns%G", None);
        retried
            .message
            .set_property(property::RETRY_TOPIC, "ns%orders");
        let mut msgs = vec![retried, msg("ns%orders", None), msg("other%x", None)];
        filter_pulled(&mut msgs, &sub, Some("%RETRY%ns%G"), &ns);
        let topics: Vec<_> = msgs.iter().map(|m| m.topic.as_str()).collect();
        assert_eq!(topics, ["orders", "orders", "other%x"]);
    }
}
