//! The push consumer as its client instance sees it ([`Registered`]):
//! heartbeat data and broker → client requests.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use rmq_consumer_base::{Registered, restore_retry_topic};
use rmq_protocol::body::{
    CmResult, ConsumeMessageDirectlyResult, ConsumeType, ConsumerData, ConsumerRunningInfo,
    PROP_CONSUME_TYPE, PROP_CONSUMEORDERLY, PROP_CONSUMER_START_TIMESTAMP,
    PROP_THREADPOOL_CORE_SIZE, ProcessQueueInfo,
};
use rmq_protocol::{MessageExt, MessageQueue};
use tracing::warn;

use crate::inner::{Inner, Listener};
use crate::listener::call::guarded;
use crate::listener::concurrent::{ConsumeContext, ConsumeResult};
use crate::listener::orderly::{OrderlyContext, OrderlyResult};

fn to_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl Registered for Inner {
    const CONSUME_TYPE: ConsumeType = ConsumeType::ConsumePassively;

    fn consumer_data(&self) -> ConsumerData {
        self.config
            .options
            .consumer_data(Self::CONSUME_TYPE, self.subscriptions.all())
    }

    fn notify_ids_changed(&self) {
        self.trigger.notify();
    }

    fn reset_offset(self: Arc<Self>, topic: &str, offsets: Vec<(MessageQueue, i64)>) {
        if !self.is_closed() {
            crate::pull::rebalance::spawn_reset(&self, topic.to_owned(), offsets);
        }
    }

    fn running_info(&self) -> Option<ConsumerRunningInfo> {
        let inner = self;
        let cfg = &inner.config;
        let mut info = ConsumerRunningInfo {
            subscription_set: inner.subscriptions.all(),
            ..ConsumerRunningInfo::default()
        };
        let props = &mut info.properties;
        for (k, v) in [
            (
                PROP_CONSUME_TYPE,
                ConsumeType::ConsumePassively.as_str().to_owned(),
            ),
            (PROP_CONSUMEORDERLY, inner.is_orderly().to_string()),
            (
                PROP_THREADPOOL_CORE_SIZE,
                cfg.consume_concurrency.to_string(),
            ),
            (
                PROP_CONSUMER_START_TIMESTAMP,
                inner.core.started_at_ms().to_string(),
            ),
            ("consumerGroup", cfg.group().to_owned()),
            ("messageModel", cfg.message_model().as_str().to_owned()),
            (
                "consumeFromWhere",
                cfg.consume_from().as_java().as_str().to_owned(),
            ),
            (
                "allocateMessageQueueStrategy",
                cfg.allocate_strategy().name().to_owned(),
            ),
            ("consumeThreadMin", cfg.consume_concurrency.to_string()),
            ("consumeThreadMax", cfg.consume_concurrency.to_string()),
            ("pullBatchSize", cfg.pull_batch_size.to_string()),
            (
                "consumeMessageBatchMaxSize",
                cfg.consume_batch_max_size.to_string(),
            ),
            (
                "pullThresholdForQueue",
                cfg.pull_threshold_for_queue.to_string(),
            ),
            (
                "consumeConcurrentlyMaxSpan",
                cfg.consume_concurrently_max_span.to_string(),
            ),
            ("maxReconsumeTimes", cfg.max_reconsume_times.to_string()),
            (
                "consumeTimeout",
                (cfg.consume_timeout.as_secs() / 60).to_string(),
            ),
        ] {
            props.insert(k.to_owned(), v);
        }
        let now_ms = rmq_client_core::now_ms();
        let ago = |d: std::time::Duration| {
            now_ms.saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        };
        for snap in inner.inspect() {
            let mut pq = ProcessQueueInfo {
                commit_offset: snap.committed_offset.unwrap_or(-1),
                cached_msg_min_offset: snap.min_offset.unwrap_or(0),
                cached_msg_max_offset: snap.max_offset.unwrap_or(0),
                cached_msg_count: to_i32(snap.count),
                cached_msg_size_in_mib: to_i32(snap.bytes / (1024 * 1024)),
                dropped: snap.dropped,
                last_pull_timestamp: ago(snap.since_last_pull),
                last_consume_timestamp: ago(snap.since_last_consume),
                ..ProcessQueueInfo::default()
            };
            if let Some(state) = inner.locks.as_ref().and_then(|l| l.state(&snap.queue)) {
                pq.locked = state.locked;
                pq.last_lock_timestamp = ago(state.last_lock.elapsed());
            }
            info.mq_table.insert(snap.queue, pq);
        }
        let (status, figures) =
            inner
                .metrics
                .running_info(Instant::now(), inner.total_lag(), inner.queue_calls());
        info.status_table.extend(status);
        info.properties.extend(figures);
        Some(info)
    }

    fn consume_directly(
        self: Arc<Self>,
        msg: MessageExt,
        broker_name: Option<String>,
    ) -> Option<BoxFuture<'static, ConsumeMessageDirectlyResult>> {
        let inner = self;
        Some(Box::pin(async move {
            let mut msg = msg;
            restore_retry_topic(&mut msg, &inner.retry_topic);
            inner
                .core
                .namespace()
                .unwrap_in_place(&mut msg.message.topic);
            let broker = broker_name.unwrap_or_else(|| msg.broker_name.clone());
            let mq = MessageQueue::new(msg.topic.clone(), broker, msg.queue_id);
            let started = Instant::now();
            let msgs = [msg];
            let timeout = inner.config.consume_timeout;
            let (outcome, order, auto_commit) = match &inner.listener {
                Listener::Concurrent(listener) => {
                    let mut ctx = ConsumeContext::new(mq);
                    let r = guarded(timeout, listener.consume(&msgs, &mut ctx))
                        .await
                        .map_err(|f| f.to_string());
                    let r = r.map(|r| match r {
                        ConsumeResult::Success => CmResult::CrSuccess,
                        ConsumeResult::ReconsumeLater => CmResult::CrLater,
                    });
                    (r, false, true)
                }
                Listener::Orderly(listener) => {
                    let suspend = inner.config.suspend_current_queue_time;
                    let mut ctx = OrderlyContext::new(mq, suspend);
                    let r = guarded(timeout, listener.consume(&msgs, &mut ctx))
                        .await
                        .map_err(|f| f.to_string());
                    let r = r.map(|r| match r {
                        OrderlyResult::Success => CmResult::CrSuccess,
                        OrderlyResult::SuspendCurrentQueueAMoment => CmResult::CrLater,
                        OrderlyResult::Commit => CmResult::CrCommit,
                        OrderlyResult::Rollback => CmResult::CrRollback,
                    });
                    (r, true, ctx.auto_commit())
                }
            };
            let (result, remark) = match outcome {
                Ok(result) => (result, None),
                Err(text) => {
                    warn!(group = %inner.core.group(), error = text, "the listener failed (consume directly)");
                    (CmResult::CrThrowException, Some(text))
                }
            };
            ConsumeMessageDirectlyResult {
                order,
                auto_commit,
                consume_result: Some(result),
                remark,
                spent_time_millis: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
            }
        }))
    }
}
