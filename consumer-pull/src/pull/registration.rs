//! The explicit pull consumer as its client instance sees it
//! ([`Registered`]): the heartbeat entry and offset resets by the broker.

use std::sync::Arc;

use rmq_consumer_base::{Expression, Registered};
use rmq_offset_store::PersistMode;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData};
use tracing::{info, warn};

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

    /// RESET_CONSUMER_CLIENT_OFFSET (brokers without server-side reset,
    /// e.g. 4.9.x): the new offsets replace the in-memory consume offsets
    /// and are persisted, so that neither
    /// [`fetch_consume_offset`](crate::PullConsumer::fetch_consume_offset)
    /// nor the periodic persist brings the old ones back. Brokers with
    /// server-side reset (5.x) keep the offsets themselves and answer a pull
    /// from an older offset with `OffsetIllegal` and the reset offset.
    fn reset_offset(self: Arc<Self>, topic: &str, offsets: Vec<(MessageQueue, i64)>) {
        if self.core.is_closed() {
            return;
        }
        let topic = topic.to_owned();
        let inner = self.clone();
        self.core.tasks().spawn(async move {
            let store = inner.core.offset_store();
            for (mq, offset) in offsets.iter().filter(|(mq, _)| mq.topic == topic) {
                store.update_offset(mq, *offset, false);
                info!(group = %inner.core.group(), queue = %mq, offset, "offset reset by the broker");
            }
            for (mq, _) in offsets.iter().filter(|(mq, _)| mq.topic == topic) {
                let persisted = tokio::select! {
                    r = store.persist(mq, PersistMode::Sync) => r,
                    () = inner.core.cancel().cancelled() => return,
                };
                if let Err(e) = persisted {
                    warn!(queue = %mq, error = %rmq_protocol::ErrorChain(&e), "cannot persist the reset offset");
                }
            }
        });
    }
}
