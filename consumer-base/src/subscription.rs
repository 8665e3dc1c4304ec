//! [`Expression`] (tags or SQL92) and [`Subscription`] (a topic and its
//! expression): how every consumer says what it reads.

use std::borrow::Cow;

use rmq_protocol::body::{ExpressionType, SubscriptionData};
use rmq_protocol::names::{self, NameKind};

/// A filter expression: tags (`"*"`, `"created || paid"`) or an SQL92
/// condition on message properties (evaluated by the broker, which needs
/// `enablePropertyFilter=true`).
///
/// A `&str` or `String` converts into a tag expression:
///
/// ```
/// use rmq_consumer_base::Expression;
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

    /// The subscription data this expression gives for `topic` at
    /// `version` (Java `FilterAPI.build`).
    pub fn to_subscription(&self, topic: &str, version: i64) -> SubscriptionData {
        SubscriptionData::build(topic, &self.text, self.kind, version)
    }

    /// Checks the expression of `topic`: an SQL92 expression must not be
    /// empty (tag expressions always parse).
    ///
    /// # Errors
    ///
    /// A text naming the topic.
    pub fn check(&self, topic: &str) -> Result<(), String> {
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

impl From<Cow<'_, str>> for Expression {
    fn from(tags: Cow<'_, str>) -> Self {
        Expression::tag(tags.into_owned())
    }
}

/// One subscription: a topic and its filter expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The topic.
    pub topic: String,
    /// The expression: tags (`"*"`, `"a || b"`) or an SQL92 condition.
    pub expression: String,
    /// Which kind of expression.
    pub expression_type: ExpressionType,
}

impl Subscription {
    /// `topic` filtered by `expression`.
    pub fn new(topic: impl Into<String>, expression: impl Into<Expression>) -> Self {
        let expression = expression.into();
        Subscription {
            topic: topic.into(),
            expression: expression.text,
            expression_type: expression.kind,
        }
    }

    /// The subscription's expression.
    pub fn filter(&self) -> Expression {
        Expression {
            kind: self.expression_type,
            text: self.expression.clone(),
        }
    }

    /// The subscription data (Java `FilterAPI.build`) at `version`.
    pub fn to_data(&self, version: i64) -> SubscriptionData {
        SubscriptionData::build(&self.topic, &self.expression, self.expression_type, version)
    }

    /// Checks the topic name and the expression.
    ///
    /// # Errors
    ///
    /// A text naming what is wrong.
    pub fn check(&self) -> Result<(), String> {
        names::check(NameKind::Topic, &self.topic).map_err(|e| e.to_string())?;
        self.filter().check(&self.topic)
    }

    /// Adds `sub` to `list`, replacing an earlier subscription of its topic
    /// (subscribing a topic again replaces its expression, like Java's map).
    pub fn upsert(list: &mut Vec<Subscription>, sub: Subscription) {
        list.retain(|s| s.topic != sub.topic);
        list.push(sub);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions() {
        assert_eq!(Expression::from("*"), Expression::all());
        assert_eq!(Expression::default().kind(), ExpressionType::Tag);
        assert!(Expression::sql(" ").check("T").is_err());
        assert!(Expression::tag("").check("T").is_ok());
        let data = Expression::tag("a || b").to_subscription("T", 7);
        assert_eq!(data.tags_set, ["a", "b"]);
        assert_eq!(data.sub_version, 7);
    }

    #[test]
    fn subscriptions() {
        let mut list = Vec::new();
        Subscription::upsert(&mut list, Subscription::new("A", "x || y"));
        Subscription::upsert(&mut list, Subscription::new("B", Expression::sql("a > 5")));
        Subscription::upsert(&mut list, Subscription::new("A", "*"));
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].topic, "B");
        assert_eq!(list[0].expression_type, ExpressionType::Sql92);
        assert_eq!(list[1].filter(), Expression::all());
        assert!(list[1].check().is_ok());
        assert!(Subscription::new("a/b", "*").check().is_err());
        assert!(Subscription::new("T", Expression::sql("")).check().is_err());
        assert_eq!(list[0].to_data(3).expression_type, ExpressionType::Sql92);
    }
}
