//! A consumer's session ([`start_session`]) and what its settings and
//! receives say of its subscriptions: the subscription entries
//! ([`subscription_entries`]) and a filter ([`filter_expression`]).

use std::time::Duration;

use rmq_client_core::ClientConfig;
use rmq_grpc::{ClientSettings, Session, proto};
use rmq_protocol::body::ExpressionType;

use crate::error::{Error, Kind};
use crate::grpc::grpc_config;
use crate::subscription::{Expression, Subscription};

/// What a consumer's session says of it: a `client_type`
/// (`PUSH_CONSUMER`, `SIMPLE_CONSUMER`) of `group` subscribed to `subs`,
/// asking for FIFO delivery or not, long-polling for `long_polling`.
#[derive(Debug, Clone, Copy)]
pub struct ConsumerSession<'a> {
    /// The kind of consumer.
    pub client_type: proto::ClientType,
    /// The group.
    pub group: &'a str,
    /// The subscriptions.
    pub subs: &'a [Subscription],
    /// FIFO delivery per message group (an orderly push consumer).
    pub fifo: bool,
    /// The long-polling timeout of its receives.
    pub long_polling: Duration,
}

/// Starts the session of `consumer` with the proxy at `endpoint`, with the
/// credentials and TLS of `client` ([`grpc_config`]); the proxy's settings
/// are answered once it returns.
///
/// # Errors
///
/// [`Error::Config`] for an invalid endpoint, credentials or TLS settings;
/// the session's error when it cannot start.
pub async fn start_session<K: Kind>(
    endpoint: &str,
    client: &ClientConfig,
    consumer: ConsumerSession<'_>,
) -> Result<Session, Error<K>> {
    let grpc = grpc_config(endpoint, client)
        .map_err(|e| Error::Config(rmq_protocol::ErrorChain(&e).to_string()))?;
    let settings = ClientSettings::consumer(
        consumer.client_type,
        consumer.group,
        subscription_entries(consumer.subs),
        consumer.fifo,
        consumer.long_polling,
    );
    Ok(Session::start(grpc, settings, None).await?)
}

/// The subscription entries of the session settings.
pub fn subscription_entries(subs: &[Subscription]) -> Vec<proto::SubscriptionEntry> {
    subs.iter()
        .map(|s| {
            let e = s.filter();
            rmq_grpc::subscription_entry(&s.topic, is_sql(&e), e.text())
        })
        .collect()
}

/// The `FilterExpression` of a receive by `filter`.
pub fn filter_expression(filter: &Expression) -> proto::FilterExpression {
    rmq_grpc::filter_expression(is_sql(filter), filter.text())
}

fn is_sql(e: &Expression) -> bool {
    e.kind() == ExpressionType::Sql92
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_sql() {
        let subs = [
            Subscription::new("A", "x || y"),
            Subscription::new("B", Expression::sql("a > 1")),
        ];
        let entries = subscription_entries(&subs);
        let got: Vec<(String, i32, String)> = entries
            .into_iter()
            .map(|e| {
                let f = e.expression.unwrap_or_default();
                (e.topic.unwrap_or_default().name, f.r#type, f.expression)
            })
            .collect();
        let (tag, sql) = (proto::FilterType::Tag as i32, proto::FilterType::Sql as i32);
        assert_eq!(
            got,
            [
                ("A".to_owned(), tag, "x || y".to_owned()),
                ("B".to_owned(), sql, "a > 1".to_owned())
            ]
        );
        let f = filter_expression(&Expression::all());
        assert_eq!((f.r#type, f.expression.as_str()), (tag, "*"));
    }
}
