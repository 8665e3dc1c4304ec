//! [`MessageFilter`]: a pull's filter, built from its subscription.

use std::collections::HashMap;
use std::sync::Arc;

use super::Sql;
use rmq_protocol::body::{ExpressionType, SubscriptionData};

/// A pull's filter.
#[derive(Debug, Clone)]
pub(crate) enum MessageFilter {
    /// `*`, or a SQL92 subscription whose expression did not compile (the
    /// broker then filters nothing).
    All,
    /// A TAG subscription: the hash codes of its tags.
    Tags(Arc<Vec<i32>>),
    /// A compiled SQL92 expression.
    Sql(Arc<Sql>),
}

impl MessageFilter {
    /// The filter of a subscription; `sql` is its compiled expression, when
    /// it is a SQL92 one that compiled.
    pub(crate) fn of(sub: &SubscriptionData, sql: Option<Arc<Sql>>) -> MessageFilter {
        if sub.class_filter_mode {
            return MessageFilter::All;
        }
        match sub.expression_type {
            ExpressionType::Tag if sub.is_sub_all() => MessageFilter::All,
            ExpressionType::Tag => MessageFilter::Tags(Arc::new(sub.code_set.clone())),
            ExpressionType::Sql92 => sql.map_or(MessageFilter::All, MessageFilter::Sql),
        }
    }

    /// The consume-queue check (Java `isMatchedByConsumeQueue`): the tag's
    /// hash code.
    pub(crate) fn matches_tags_code(&self, tags_code: i64) -> bool {
        match self {
            MessageFilter::Tags(codes) => {
                // Java compares `tagsCode.intValue()`: the low 32 bits.
                #[allow(clippy::cast_possible_truncation)]
                let code = tags_code as i32;
                codes.contains(&code)
            }
            MessageFilter::All | MessageFilter::Sql(_) => true,
        }
    }

    /// The commit-log check (Java `isMatchedByCommitLog`): the SQL92
    /// expression on the properties.
    pub(crate) fn matches_properties(&self, properties: &HashMap<String, String>) -> bool {
        match self {
            MessageFilter::Sql(sql) => sql.matches(properties),
            MessageFilter::All | MessageFilter::Tags(_) => true,
        }
    }

    /// Both checks.
    pub(crate) fn matches(&self, tags_code: i64, properties: &HashMap<String, String>) -> bool {
        self.matches_tags_code(tags_code) && self.matches_properties(properties)
    }
}
