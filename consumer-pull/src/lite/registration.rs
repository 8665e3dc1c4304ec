//! [`Registration`]: the lite pull consumer as the client instance sees it
//! (heartbeat data, group membership changes).

use std::sync::{Arc, Weak};

use rmq_client_core::ConsumerHandle;
use rmq_protocol::body::{ConsumeType, ConsumerData};

use crate::lite::inner::Inner;

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
        let subscriptions = inner
            .state()
            .subscriptions
            .values()
            .map(|s| (**s).clone())
            .collect();
        inner
            .config
            .options
            .consumer_data(ConsumeType::ConsumeActively, subscriptions)
    }

    fn notify_ids_changed(&self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.trigger.notify();
        }
    }
}
