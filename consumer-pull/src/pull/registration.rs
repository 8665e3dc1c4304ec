//! [`Registration`]: the explicit pull consumer as the client instance sees
//! it (heartbeat data).

use std::sync::{Arc, Weak};

use rmq_client_core::ConsumerHandle;
use rmq_consumer_base::Expression;
use rmq_protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData};

use crate::pull::inner::Inner;

/// Registered in the client instance; holds the consumer weakly.
pub(crate) struct Registration {
    group: String,
    inner: Weak<Inner>,
}

impl Registration {
    pub(crate) fn new(inner: &Arc<Inner>) -> Arc<Self> {
        Arc::new(Registration {
            group: inner.core.group().to_owned(),
            inner: Arc::downgrade(inner),
        })
    }
}

impl ConsumerHandle for Registration {
    fn consumer_data(&self) -> ConsumerData {
        let Some(inner) = self.inner.upgrade() else {
            return ConsumerData {
                group_name: self.group.clone(),
                consume_type: ConsumeType::ConsumeActively,
                ..ConsumerData::default()
            };
        };
        let version = inner.core.started_at_ms();
        let subscriptions = inner
            .config
            .register_topics
            .iter()
            .map(|t| Expression::all().to_subscription(t, version))
            .collect();
        ConsumerData {
            // Java's pull consumer announces LAST; it starts nowhere itself.
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            ..inner
                .config
                .options
                .consumer_data(ConsumeType::ConsumeActively, subscriptions)
        }
    }
}
