//! Namespaces: the rules that put a topic or group name into a namespace
//! and take it out again (Java `NamespaceUtil`, used by the remoting
//! client's `ClientConfig.setNamespace`).
//!
//! A name `orders` in the namespace `prod` is `prod%orders` on the broker;
//! the retry and dead-letter topics keep their prefix in front:
//! `%RETRY%prod%billing`, `%DLQ%prod%billing`. System topics (`TBW102`,
//! `SCHEDULE_TOPIC_XXXX`, `rmq_sys_…`, …), system groups (`CID_RMQ_SYS_…`)
//! and names already in the namespace are left as they are, so wrapping
//! twice changes nothing.
//!
//! ```
//! use rmq_protocol::namespace::Namespace;
//!
//! let ns = Namespace::new("prod");
//! assert_eq!(ns.wrap("orders"), "prod%orders");
//! assert_eq!(ns.wrap("%RETRY%billing"), "%RETRY%prod%billing");
//! assert_eq!(ns.wrap("prod%orders"), "prod%orders");
//! assert_eq!(ns.wrap("TBW102"), "TBW102");
//! assert_eq!(ns.unwrap("%DLQ%prod%billing"), "%DLQ%billing");
//! // Another namespace's name is not this one's to unwrap.
//! assert_eq!(ns.unwrap("test%orders"), "test%orders");
//! ```

use std::fmt;
use std::sync::Arc;

use crate::MessageQueue;
use crate::names::{DLQ_TOPIC_PREFIX, RETRY_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX};

/// What separates the namespace from the name (Java
/// `NamespaceUtil.NAMESPACE_SEPARATOR`).
pub const SEPARATOR: char = '%';

/// Prefix of system consumer groups, never wrapped (Java
/// `MixAll.CID_RMQ_SYS_PREFIX`).
pub const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// The broker's system topics, never wrapped (Java
/// `TopicValidator.SYSTEM_TOPIC_SET`); topics starting with
/// [`SYSTEM_TOPIC_PREFIX`] are system topics too.
pub const SYSTEM_TOPICS: &[&str] = &[
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "CHECKPOINT_TOPIC",
];

/// Whether `resource` is a system topic or a system group, which no
/// namespace applies to (Java `NamespaceUtil.isSystemResource`).
pub fn is_system_resource(resource: &str) -> bool {
    !resource.is_empty()
        && (SYSTEM_TOPICS.contains(&resource)
            || resource.starts_with(SYSTEM_TOPIC_PREFIX)
            || resource.starts_with(SYSTEM_GROUP_PREFIX))
}

/// The `%RETRY%` or `%DLQ%` prefix of `resource`, if any.
fn group_topic_prefix(resource: &str) -> &'static str {
    if resource.trim().is_empty() {
        ""
    } else if resource.starts_with(RETRY_TOPIC_PREFIX) {
        RETRY_TOPIC_PREFIX
    } else if resource.starts_with(DLQ_TOPIC_PREFIX) {
        DLQ_TOPIC_PREFIX
    } else {
        ""
    }
}

/// `resource` without its `%RETRY%` or `%DLQ%` prefix (Java
/// `NamespaceUtil.withOutRetryAndDLQ`).
pub fn without_retry_and_dlq(resource: &str) -> &str {
    resource
        .strip_prefix(group_topic_prefix(resource))
        .unwrap_or(resource)
}

/// Whether `resource` is already in `namespace` (its name, past a
/// `%RETRY%` or `%DLQ%` prefix, starts with `<namespace>%`). System
/// resources and an empty namespace never are (Java
/// `NamespaceUtil.isAlreadyWithNamespace`).
pub fn is_wrapped(resource: &str, namespace: &str) -> bool {
    if namespace.is_empty() || resource.is_empty() || is_system_resource(resource) {
        return false;
    }
    without_retry_and_dlq(resource)
        .strip_prefix(namespace)
        .is_some_and(|rest| rest.starts_with(SEPARATOR))
}

/// `resource` in `namespace`: `<namespace>%<name>`, after the `%RETRY%` or
/// `%DLQ%` prefix if there is one. An empty namespace or name, a system
/// resource and a name already in `namespace` are returned unchanged (Java
/// `NamespaceUtil.wrapNamespace`).
pub fn wrap(namespace: &str, resource: &str) -> String {
    if namespace.is_empty()
        || resource.is_empty()
        || is_system_resource(resource)
        || is_wrapped(resource, namespace)
    {
        return resource.to_owned();
    }
    let prefix = group_topic_prefix(resource);
    let name = without_retry_and_dlq(resource);
    let mut out = String::with_capacity(resource.len() + namespace.len() + 1);
    out.push_str(prefix);
    out.push_str(namespace);
    out.push(SEPARATOR);
    out.push_str(name);
    out
}

/// The retry topic of `group` in `namespace`: `%RETRY%<namespace>%<group>`
/// (Java `NamespaceUtil.wrapNamespaceAndRetry`).
pub fn retry_topic(namespace: &str, group: &str) -> String {
    format!("{RETRY_TOPIC_PREFIX}{}", wrap(namespace, group))
}

/// The dead-letter topic of `group` in `namespace`:
/// `%DLQ%<namespace>%<group>`.
pub fn dlq_topic(namespace: &str, group: &str) -> String {
    format!("{DLQ_TOPIC_PREFIX}{}", wrap(namespace, group))
}

/// `resource` without whatever namespace it is in: the part before the
/// first `%` of its name goes, a `%RETRY%` or `%DLQ%` prefix stays. System
/// resources and names in no namespace are returned unchanged (Java
/// `NamespaceUtil.withoutNamespace(String)`).
pub fn strip_namespace(resource: &str) -> String {
    if resource.is_empty() || is_system_resource(resource) {
        return resource.to_owned();
    }
    let prefix = group_topic_prefix(resource);
    match without_retry_and_dlq(resource).split_once(SEPARATOR) {
        Some((namespace, name)) if !namespace.is_empty() => format!("{prefix}{name}"),
        _ => resource.to_owned(),
    }
}

/// `resource` out of `namespace`: like [`strip_namespace`], but only when
/// `resource` is in `namespace`; any other name, and any name with an
/// empty namespace, is returned unchanged (Java
/// `NamespaceUtil.withoutNamespace(String, String)`).
pub fn unwrap(namespace: &str, resource: &str) -> String {
    if namespace.is_empty() || resource.is_empty() {
        return resource.to_owned();
    }
    let bare = without_retry_and_dlq(resource);
    if bare
        .strip_prefix(namespace)
        .is_some_and(|rest| rest.starts_with(SEPARATOR))
    {
        return strip_namespace(resource);
    }
    resource.to_owned()
}

/// The namespace `resource` is in, `""` for none or a system resource
/// (Java `NamespaceUtil.getNamespaceFromResource`).
pub fn namespace_of(resource: &str) -> &str {
    if resource.is_empty() || is_system_resource(resource) {
        return "";
    }
    match without_retry_and_dlq(resource).split_once(SEPARATOR) {
        Some((namespace, _)) => namespace,
        None => "",
    }
}

/// Why a namespace cannot be used, if it cannot: it must be non-empty and
/// made of letters, digits, `_`, `-` and `|` only (the characters the
/// broker accepts in names, without `%`, which would make the wrapped
/// names ambiguous).
pub fn check(namespace: &str) -> Result<(), String> {
    if namespace.is_empty() {
        return Err("the namespace is empty".to_owned());
    }
    if let Some(c) = namespace
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|')))
    {
        return Err(format!(
            "the namespace {namespace:?} contains {c:?}; only letters, digits, '_', '-' and '|' \
             are allowed"
        ));
    }
    Ok(())
}

/// The namespace of a producer or consumer: none (the default) or a name
/// its topics and groups are wrapped into. Cheap to clone.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Namespace(Option<Arc<str>>);

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.as_str(), f)
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Namespace {
    /// The namespace `name`; an empty name is no namespace.
    pub fn new(name: &str) -> Self {
        if name.is_empty() {
            Namespace(None)
        } else {
            Namespace(Some(Arc::from(name)))
        }
    }

    /// No namespace.
    pub const fn none() -> Self {
        Namespace(None)
    }

    /// Whether there is no namespace (every method then returns names
    /// unchanged).
    pub fn is_none(&self) -> bool {
        self.0.is_none()
    }

    /// The name, `""` for none.
    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or_default()
    }

    /// `resource` in this namespace ([`wrap`]).
    pub fn wrap(&self, resource: &str) -> String {
        wrap(self.as_str(), resource)
    }

    /// `resource` out of this namespace ([`unwrap`]).
    pub fn unwrap(&self, resource: &str) -> String {
        unwrap(self.as_str(), resource)
    }

    /// Wraps `resource` where it is ([`wrap`]); nothing is allocated
    /// without a namespace.
    pub fn wrap_in_place(&self, resource: &mut String) {
        if !self.is_none() {
            *resource = self.wrap(resource);
        }
    }

    /// Unwraps `resource` where it is ([`unwrap`]); nothing is allocated
    /// without a namespace or when `resource` is in none.
    pub fn unwrap_in_place(&self, resource: &mut String) {
        if !self.is_none() && resource.contains(SEPARATOR) {
            *resource = self.unwrap(resource);
        }
    }

    /// `queue` with its topic in this namespace.
    pub fn wrap_queue(&self, queue: &MessageQueue) -> MessageQueue {
        let mut q = queue.clone();
        self.wrap_in_place(&mut q.topic);
        q
    }

    /// `queue` with its topic out of this namespace.
    pub fn unwrap_queue(&self, queue: &MessageQueue) -> MessageQueue {
        let mut q = queue.clone();
        self.unwrap_in_place(&mut q.topic);
        q
    }

    /// The retry topic of `group` (a name the user gave, or already
    /// wrapped) in this namespace ([`retry_topic`]).
    pub fn retry_topic(&self, group: &str) -> String {
        retry_topic(self.as_str(), group)
    }

    /// The dead-letter topic of `group` in this namespace ([`dlq_topic`]).
    pub fn dlq_topic(&self, group: &str) -> String {
        dlq_topic(self.as_str(), group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_plain_retry_and_dlq_names() {
        assert_eq!(wrap("ns", "orders"), "ns%orders");
        assert_eq!(wrap("ns", "%RETRY%group"), "%RETRY%ns%group");
        assert_eq!(wrap("ns", "%DLQ%group"), "%DLQ%ns%group");
        assert_eq!(retry_topic("ns", "group"), "%RETRY%ns%group");
        assert_eq!(dlq_topic("ns", "group"), "%DLQ%ns%group");
        // Already wrapped: unchanged, so wrapping is idempotent.
        for name in ["ns%orders", "%RETRY%ns%group", "%DLQ%ns%group"] {
            assert_eq!(wrap("ns", name), name);
            assert_eq!(wrap("ns", &wrap("ns", name)), name);
        }
        assert_eq!(retry_topic("ns", "ns%group"), "%RETRY%ns%group");
        // Another namespace's name gets this one in front (as in Java).
        assert_eq!(wrap("ns", "other%orders"), "ns%other%orders");
        // A name that merely starts with the namespace is not in it.
        assert_eq!(wrap("ns", "nsorders"), "ns%nsorders");
    }

    #[test]
    fn no_namespace_and_empty_names_change_nothing() {
        assert_eq!(wrap("", "orders"), "orders");
        assert_eq!(wrap("ns", ""), "");
        assert_eq!(unwrap("", "ns%orders"), "ns%orders");
        assert_eq!(unwrap("ns", ""), "");
        assert_eq!(strip_namespace(""), "");
        assert_eq!(retry_topic("", "g"), "%RETRY%g");
        let none = Namespace::none();
        assert!(none.is_none());
        assert_eq!(none, Namespace::new(""));
        assert_eq!(none.wrap("orders"), "orders");
        let mut s = String::from("ns%orders");
        none.unwrap_in_place(&mut s);
        assert_eq!(s, "ns%orders");
    }

    #[test]
    fn system_resources_are_never_wrapped() {
        for name in SYSTEM_TOPICS.iter().copied().chain([
            "rmq_sys_wheel",
            "CID_RMQ_SYS_TRANS",
            "CID_RMQ_SYS_x",
        ]) {
            assert!(is_system_resource(name), "{name}");
            assert_eq!(wrap("ns", name), name);
            assert!(!is_wrapped(name, "ns"));
            assert_eq!(strip_namespace(name), name);
            assert_eq!(namespace_of(name), "");
        }
        assert!(!is_system_resource(""));
        assert!(!is_system_resource("orders"));
        // A system group's retry topic is not a system resource.
        assert_eq!(
            wrap("ns", "%RETRY%CID_RMQ_SYS_x"),
            "%RETRY%ns%CID_RMQ_SYS_x"
        );
    }

    #[test]
    fn unwraps_only_its_own_namespace() {
        assert_eq!(unwrap("ns", "ns%orders"), "orders");
        assert_eq!(unwrap("ns", "%RETRY%ns%group"), "%RETRY%group");
        assert_eq!(unwrap("ns", "%DLQ%ns%group"), "%DLQ%group");
        assert_eq!(unwrap("ns", "other%orders"), "other%orders");
        assert_eq!(unwrap("ns", "%RETRY%other%g"), "%RETRY%other%g");
        assert_eq!(unwrap("ns", "orders"), "orders");
        assert_eq!(unwrap("ns", "nsx%orders"), "nsx%orders");
        assert_eq!(unwrap("ns", "TBW102"), "TBW102");
        // The round trip of every kind of name.
        for name in ["orders", "%RETRY%g", "%DLQ%g", "a-b_c|d"] {
            assert_eq!(unwrap("ns", &wrap("ns", name)), name);
        }
    }

    #[test]
    fn strips_any_namespace() {
        assert_eq!(strip_namespace("ns%orders"), "orders");
        assert_eq!(strip_namespace("%RETRY%ns%g"), "%RETRY%g");
        assert_eq!(strip_namespace("%DLQ%ns%g"), "%DLQ%g");
        assert_eq!(strip_namespace("orders"), "orders");
        assert_eq!(strip_namespace("%RETRY%g"), "%RETRY%g");
        // Only the first namespace goes.
        assert_eq!(strip_namespace("a%b%c"), "b%c");
        // A name starting with '%' (no namespace before it) stays.
        assert_eq!(strip_namespace("%x"), "%x");
    }

    #[test]
    fn finds_the_namespace_of_a_name() {
        assert_eq!(namespace_of("ns%orders"), "ns");
        assert_eq!(namespace_of("%RETRY%ns%g"), "ns");
        assert_eq!(namespace_of("%DLQ%ns%g"), "ns");
        assert_eq!(namespace_of("orders"), "");
        assert_eq!(namespace_of("%RETRY%g"), "");
        assert_eq!(namespace_of(""), "");
        assert!(is_wrapped("ns%orders", "ns"));
        assert!(is_wrapped("%RETRY%ns%g", "ns"));
        assert!(!is_wrapped("ns%orders", ""));
        assert!(!is_wrapped("nsorders", "ns"));
        assert!(!is_wrapped("", "ns"));
        assert_eq!(without_retry_and_dlq("%RETRY%a"), "a");
        assert_eq!(without_retry_and_dlq("%DLQ%a"), "a");
        assert_eq!(without_retry_and_dlq("a"), "a");
        assert_eq!(without_retry_and_dlq(""), "");
    }

    #[test]
    fn queues_and_in_place_helpers() {
        let ns = Namespace::new("ns");
        assert_eq!(ns.as_str(), "ns");
        assert_eq!(ns.to_string(), "ns");
        let q = MessageQueue::new("orders", "broker-a", 3);
        let w = ns.wrap_queue(&q);
        assert_eq!(w, MessageQueue::new("ns%orders", "broker-a", 3));
        assert_eq!(ns.unwrap_queue(&w), q);
        let mut s = String::from("orders");
        ns.wrap_in_place(&mut s);
        assert_eq!(s, "ns%orders");
        ns.unwrap_in_place(&mut s);
        assert_eq!(s, "orders");
        assert_eq!(ns.retry_topic("g"), "%RETRY%ns%g");
        assert_eq!(ns.retry_topic("ns%g"), "%RETRY%ns%g");
        assert_eq!(ns.dlq_topic("g"), "%DLQ%ns%g");
    }

    #[test]
    fn namespace_names_are_checked() {
        assert!(check("prod").is_ok());
        assert!(check("MQ_INST_1-a|b").is_ok());
        assert!(check("").is_err());
        for bad in ["a%b", "a b", "a.b", "é"] {
            let e = check(bad).unwrap_err();
            assert!(e.contains("only letters"), "{e}");
        }
    }
}
