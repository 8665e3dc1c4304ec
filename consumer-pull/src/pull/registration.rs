//! The explicit pull consumer as its client instance sees it
//! ([`Registered`]): the heartbeat entry.

use rmq_consumer_base::{Expression, Registered};
use rmq_protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData};

use crate::pull::inner::Inner;

impl Registered for Inner {
    const CONSUME_TYPE: ConsumeType = ConsumeType::ConsumeActively;

    /// The registered topics with a `*` subscription; Java's pull consumer
    /// announces LAST as where it consumes from (it starts nowhere itself).
    fn consumer_data(&self) -> ConsumerData {
        let version = self.core.started_at_ms();
        let subscriptions = self
            .config
            .register_topics
            .iter()
            .map(|t| Expression::all().to_subscription(t, version))
            .collect();
        ConsumerData {
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            ..self
                .config
                .options
                .consumer_data(Self::CONSUME_TYPE, subscriptions)
        }
    }
}
