//! [`SubscriptionData`]: one topic subscription, as sent in heartbeats.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Java `String.hashCode()`: `h = 31·h + c` over the UTF-16 code units, in
/// wrapping 32-bit arithmetic. The broker filters TAG subscriptions by this
/// hash of each tag.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The subscription expression that matches every message.
pub const SUB_ALL: &str = "*";

/// How a subscription expression is evaluated (Java `ExpressionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ExpressionType {
    /// `TAG`: tags joined with `||`, or `*`.
    #[default]
    Tag,
    /// `SQL92`: a property filter evaluated by the broker.
    Sql92,
}

impl ExpressionType {
    /// The wire name: `TAG` or `SQL92`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExpressionType::Tag => "TAG",
            ExpressionType::Sql92 => "SQL92",
        }
    }
}

impl fmt::Display for ExpressionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ExpressionType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ExpressionType {
    /// `TAG`, `SQL92`, or an empty string (Java treats it as TAG).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "" | "TAG" => Ok(ExpressionType::Tag),
            "SQL92" => Ok(ExpressionType::Sql92),
            _ => Err(serde::de::Error::unknown_variant(&s, &["TAG", "SQL92"])),
        }
    }
}

/// One topic subscription (Java `SubscriptionData`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionData {
    /// Obsolete class-filter mode; always `false`.
    pub class_filter_mode: bool,
    /// [`java_string_hash`] of each tag, in the order of `tags_set`.
    /// Decoding also accepts the hashes as strings (the Go client's form).
    #[serde(deserialize_with = "super::de::lenient_i32_vec")]
    pub code_set: Vec<i32>,
    /// `TAG` or `SQL92`.
    pub expression_type: ExpressionType,
    /// The expression; `*` matches everything.
    pub sub_string: String,
    /// Version stamp (ms since the epoch at creation, bumped on change).
    pub sub_version: i64,
    /// Tags parsed from a TAG expression (empty for `*` and SQL92).
    pub tags_set: Vec<String>,
    /// Topic.
    pub topic: String,
}

impl SubscriptionData {
    /// Builds a subscription like Java `FilterAPI.build`.
    ///
    /// For [`ExpressionType::Tag`]: an empty or `*` expression gives
    /// `subString = "*"` and no tags; otherwise the expression is kept as
    /// `subString`, split on the literal `||`, each part trimmed, empty parts
    /// skipped, and each tag (once) added to `tags_set` with its hash in
    /// `code_set`. For [`ExpressionType::Sql92`] the expression is kept as
    /// is (the caller rejects an empty one, as Java does).
    pub fn build(
        topic: impl Into<String>,
        expression: &str,
        expression_type: ExpressionType,
        sub_version: i64,
    ) -> Self {
        let mut data = SubscriptionData {
            class_filter_mode: false,
            code_set: Vec::new(),
            expression_type,
            sub_string: expression.to_owned(),
            sub_version,
            tags_set: Vec::new(),
            topic: topic.into(),
        };
        if expression_type != ExpressionType::Tag {
            return data;
        }
        if expression.is_empty() || expression == SUB_ALL {
            data.sub_string = SUB_ALL.to_owned();
            return data;
        }
        for tag in expression
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            if !data.tags_set.iter().any(|t| t == tag) {
                data.tags_set.push(tag.to_owned());
                data.code_set.push(java_string_hash(tag));
            }
        }
        data
    }

    /// Whether this is a TAG subscription to everything (`*`).
    pub fn is_sub_all(&self) -> bool {
        self.expression_type == ExpressionType::Tag && self.sub_string == SUB_ALL
    }

    /// Client-side tag filter (Java `PullAPIWrapper.processPullResult`):
    /// with a non-empty tag set, a message passes only when its tag equals
    /// one of the subscribed tags; messages without a tag are dropped.
    /// Without tags (`*`, SQL92) everything passes.
    pub fn matches_tag(&self, tag: Option<&str>) -> bool {
        if self.tags_set.is_empty() || self.class_filter_mode {
            return true;
        }
        tag.is_some_and(|t| self.tags_set.iter().any(|s| s == t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hashes() {
        assert_eq!(java_string_hash("TagA"), 2_598_919);
        assert_eq!(java_string_hash("TagB"), 2_598_920);
        assert_eq!(java_string_hash("*"), 42);
        assert_eq!(java_string_hash("标签"), 857_175);
        assert_eq!(java_string_hash(""), 0);
        // Wraps like Java ("polygenelubricants".hashCode() == Integer.MIN_VALUE).
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // Supplementary characters hash as their two surrogates.
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn build_tags() {
        let s = SubscriptionData::build("T", " TagA || TagB ||  || TagA", ExpressionType::Tag, 7);
        assert_eq!(s.sub_string, " TagA || TagB ||  || TagA");
        assert_eq!(s.tags_set, ["TagA", "TagB"]);
        assert_eq!(s.code_set, [2_598_919, 2_598_920]);
        assert_eq!(s.sub_version, 7);
        assert!(!s.is_sub_all());
        assert!(s.matches_tag(Some("TagB")));
        assert!(!s.matches_tag(Some("TagC")));
        assert!(!s.matches_tag(None));
    }

    #[test]
    fn build_all() {
        for e in ["", "*"] {
            let s = SubscriptionData::build("T", e, ExpressionType::Tag, 1);
            assert_eq!(s.sub_string, "*");
            assert!(s.tags_set.is_empty() && s.code_set.is_empty());
            assert!(s.is_sub_all());
            assert!(s.matches_tag(None));
        }
    }

    #[test]
    fn build_sql() {
        let s = SubscriptionData::build("T", "a > 1", ExpressionType::Sql92, 1);
        assert_eq!(s.sub_string, "a > 1");
        assert_eq!(s.expression_type, ExpressionType::Sql92);
        assert!(s.tags_set.is_empty());
    }

    #[test]
    fn code_set_accepts_strings() {
        let s: SubscriptionData = serde_json::from_str(
            r#"{"topic":"T","subString":"TagA","tagsSet":["TagA"],"codeSet":["2598919"],"expressionType":""}"#,
        )
        .unwrap();
        assert_eq!(s.code_set, [2_598_919]);
        assert_eq!(s.expression_type, ExpressionType::Tag);
    }
}
