//! [`Registration`]: what a consumer registers in its client instance — a
//! [`ConsumerHandle`] holding the consumer's state weakly, so that the
//! instance never keeps a dropped consumer alive — and [`Registered`], what
//! that state answers while it lives.

use std::fmt;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use rmq_client_core::ConsumerHandle;
use rmq_protocol::body::{
    ConsumeMessageDirectlyResult, ConsumeType, ConsumerData, ConsumerRunningInfo,
};
use rmq_protocol::{MessageExt, MessageQueue};

/// What a consumer's state answers the client instance (its heartbeat and
/// the broker → client requests), through its [`Registration`]. The methods
/// are called from the instance's tasks: cheap, never blocking; real work
/// goes to the consumer's own tasks.
pub trait Registered: Send + Sync + 'static {
    /// How the consumer consumes: passively (push) or actively (pull).
    const CONSUME_TYPE: ConsumeType;

    /// The heartbeat entry (see [`ConsumerHandle::consumer_data`]).
    fn consumer_data(&self) -> ConsumerData;

    /// NOTIFY_CONSUMER_IDS_CHANGED: rebalance soon. Default: nothing.
    fn notify_ids_changed(&self) {}

    /// RESET_CONSUMER_CLIENT_OFFSET: the broker resets the group's offsets
    /// of `topic`. Default: ignored.
    fn reset_offset(self: Arc<Self>, topic: &str, offsets: Vec<(MessageQueue, i64)>) {
        let _ = (topic, offsets);
    }

    /// GET_CONSUMER_RUNNING_INFO; `None`: the subscriptions and consume
    /// type of [`consumer_data`](Self::consumer_data). Default: `None`.
    fn running_info(&self) -> Option<ConsumerRunningInfo> {
        None
    }

    /// CONSUME_MESSAGE_DIRECTLY: consume `msg` on an admin's request;
    /// `None` when this consumer cannot. Default: `None`.
    fn consume_directly(
        self: Arc<Self>,
        msg: MessageExt,
        broker_name: Option<String>,
    ) -> Option<BoxFuture<'static, ConsumeMessageDirectlyResult>> {
        let _ = (msg, broker_name);
        None
    }
}

/// The [`ConsumerHandle`] a consumer registers: forwards to its state `T`
/// while the consumer lives; once it is gone, the heartbeat entry names only
/// the group and every broker request is ignored.
pub struct Registration<T> {
    group: String,
    inner: Weak<T>,
}

impl<T: Registered> Registration<T> {
    /// The registration of `inner`, a consumer of `group`.
    pub fn new(group: &str, inner: &Arc<T>) -> Arc<Self> {
        Arc::new(Registration {
            group: group.to_owned(),
            inner: Arc::downgrade(inner),
        })
    }
}

impl<T> fmt::Debug for Registration<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("group", &self.group)
            .field("alive", &(self.inner.strong_count() > 0))
            .finish()
    }
}

impl<T: Registered> ConsumerHandle for Registration<T> {
    fn consumer_data(&self) -> ConsumerData {
        match self.inner.upgrade() {
            Some(inner) => inner.consumer_data(),
            None => ConsumerData {
                group_name: self.group.clone(),
                consume_type: T::CONSUME_TYPE,
                ..ConsumerData::default()
            },
        }
    }

    fn notify_ids_changed(&self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.notify_ids_changed();
        }
    }

    fn reset_offset(&self, topic: &str, offsets: Vec<(MessageQueue, i64)>) {
        if let Some(inner) = self.inner.upgrade() {
            inner.reset_offset(topic, offsets);
        }
    }

    fn running_info(&self) -> ConsumerRunningInfo {
        let Some(inner) = self.inner.upgrade() else {
            return ConsumerRunningInfo::default();
        };
        inner
            .running_info()
            .unwrap_or_else(|| ConsumerRunningInfo::of_consumer(inner.consumer_data()))
    }

    fn consume_message_directly(
        &self,
        msg: MessageExt,
        broker_name: Option<String>,
    ) -> BoxFuture<'static, Option<ConsumeMessageDirectlyResult>> {
        let consumed = self
            .inner
            .upgrade()
            .and_then(|inner| inner.consume_directly(msg, broker_name));
        Box::pin(async move {
            match consumed {
                Some(consumed) => Some(consumed.await),
                None => None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmq_protocol::body::PROP_CONSUME_TYPE;

    use super::*;

    #[derive(Default)]
    struct State {
        notified: AtomicUsize,
    }

    impl Registered for State {
        const CONSUME_TYPE: ConsumeType = ConsumeType::ConsumeActively;

        fn consumer_data(&self) -> ConsumerData {
            ConsumerData {
                group_name: "alive".into(),
                consume_type: Self::CONSUME_TYPE,
                ..ConsumerData::default()
            }
        }

        fn notify_ids_changed(&self) {
            self.notified.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn forwards_while_alive_then_names_only_the_group() {
        let state = Arc::new(State::default());
        let r = Registration::new("G", &state);
        assert_eq!(r.consumer_data().group_name, "alive");
        r.notify_ids_changed();
        assert_eq!(state.notified.load(Ordering::SeqCst), 1);
        let info = r.running_info();
        assert_eq!(
            info.properties.get(PROP_CONSUME_TYPE).map(String::as_str),
            Some("CONSUME_ACTIVELY")
        );
        assert!(
            r.consume_message_directly(MessageExt::default(), None)
                .await
                .is_none()
        );
        drop(state);
        let data = r.consumer_data();
        assert_eq!(data.group_name, "G");
        assert_eq!(data.consume_type, ConsumeType::ConsumeActively);
        r.notify_ids_changed();
        assert!(r.running_info().mq_table.is_empty());
    }
}
