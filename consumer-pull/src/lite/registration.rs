//! The lite pull consumer as its client instance sees it
//! ([`Registered`]): the heartbeat entry, group membership changes and
//! offset resets by the broker.

use std::sync::Arc;

use rmq_consumer_base::Registered;
use rmq_protocol::MessageQueue;
use rmq_protocol::body::{ConsumeType, ConsumerData};

use crate::lite::assignment;
use crate::lite::inner::Inner;

impl Registered for Inner {
    const CONSUME_TYPE: ConsumeType = ConsumeType::ConsumeActively;

    fn consumer_data(&self) -> ConsumerData {
        let subscriptions = self
            .state()
            .subscriptions
            .values()
            .map(|s| (**s).clone())
            .collect();
        self.config
            .options
            .consumer_data(Self::CONSUME_TYPE, subscriptions)
    }

    fn notify_ids_changed(&self) {
        self.trigger.notify();
    }

    fn reset_offset(self: Arc<Self>, topic: &str, offsets: Vec<(MessageQueue, i64)>) {
        if !self.is_closed() {
            assignment::spawn_reset(&self, topic.to_owned(), offsets);
        }
    }
}
