//! [`ClientSettings`], the `Settings` command sent on the telemetry stream, and
//! the builders of subscriptions, filter expressions and resources.

use std::sync::PoisonError;
use std::time::Duration;

use super::Inner;
use super::convert::{duration, hostname};
use crate::proto;
use crate::proto::telemetry_command::Command;

/// What kind of client the session speaks for, and what it publishes or
/// subscribes to: the `Settings` sent on the telemetry stream.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// `PRODUCER`, `SIMPLE_CONSUMER`, ...
    pub client_type: proto::ClientType,
    /// The consumer group (consumers only).
    pub group: Option<String>,
    /// Publishing or subscription settings.
    pub pub_sub: Option<proto::settings::PubSub>,
}

impl ClientSettings {
    /// The settings of a producer of `topics` (more may be sent to later).
    pub fn producer(topics: &[String], max_body_size: i32) -> Self {
        ClientSettings {
            client_type: proto::ClientType::Producer,
            group: None,
            pub_sub: Some(proto::settings::PubSub::Publishing(proto::Publishing {
                topics: topics.iter().map(|t| resource("", t)).collect(),
                max_body_size,
                validate_message_type: true,
            })),
        }
    }

    /// The settings of a consumer of `group` (`SIMPLE_CONSUMER` or
    /// `PUSH_CONSUMER`) with its subscriptions; `fifo` asks the proxy for
    /// FIFO delivery per message group (push consumers of a FIFO group).
    pub fn consumer(
        client_type: proto::ClientType,
        group: &str,
        subscriptions: Vec<proto::SubscriptionEntry>,
        fifo: bool,
        long_polling: Duration,
    ) -> Self {
        ClientSettings {
            client_type,
            group: Some(group.to_owned()),
            pub_sub: Some(consumer_pub_sub(group, subscriptions, fifo, long_polling)),
        }
    }
}

/// The `Subscription` settings of a consumer of `group` (`fifo == false`
/// leaves it to the group's `consumeMessageOrderly`).
pub fn consumer_pub_sub(
    group: &str,
    subscriptions: Vec<proto::SubscriptionEntry>,
    fifo: bool,
    long_polling: Duration,
) -> proto::settings::PubSub {
    proto::settings::PubSub::Subscription(proto::Subscription {
        group: Some(resource("", group)),
        subscriptions,
        fifo: fifo.then_some(true),
        receive_batch_size: None,
        long_polling_timeout: Some(duration(long_polling)),
        lite_subscription_quota: None,
        max_lite_topic_size: None,
    })
}

/// One subscription entry: `topic` filtered by a tag expression
/// (`sql == false`) or an SQL92 one.
pub fn subscription_entry(topic: &str, sql: bool, expression: &str) -> proto::SubscriptionEntry {
    proto::SubscriptionEntry {
        topic: Some(resource("", topic)),
        expression: Some(filter_expression(sql, expression)),
    }
}

/// A `FilterExpression` of tags (`sql == false`) or SQL92.
pub fn filter_expression(sql: bool, expression: &str) -> proto::FilterExpression {
    let kind = if sql {
        proto::FilterType::Sql
    } else {
        proto::FilterType::Tag
    };
    proto::FilterExpression {
        r#type: kind as i32,
        expression: expression.to_owned(),
    }
}

/// A `Resource` (namespace + name).
pub fn resource(namespace: &str, name: &str) -> proto::Resource {
    proto::Resource {
        resource_namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

impl Inner {
    pub(super) fn settings_command(&self) -> proto::TelemetryCommand {
        let s = &self.settings;
        let pub_sub = self
            .pub_sub
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let settings = proto::Settings {
            client_type: Some(s.client_type as i32),
            access_point: Some(self.access_point()),
            backoff_policy: None,
            request_timeout: Some(duration(self.config.request_timeout)),
            pub_sub,
            user_agent: Some(proto::Ua {
                language: proto::Language::Rust as i32,
                version: env!("CARGO_PKG_VERSION").to_owned(),
                platform: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
                hostname: hostname(),
            }),
            metric: Some(proto::Metric {
                on: false,
                endpoints: None,
            }),
        };
        proto::TelemetryCommand {
            status: None,
            command: Some(Command::Settings(settings)),
        }
    }
}
