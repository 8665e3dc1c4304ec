//! [`PushConsumerBuilder`]: settings with Java defaults; `start()` and
//! its variants are in `builder/start.rs`.

use std::time::Duration;

use rmq_client_core::ClientConfigSource;
use rmq_consumer_base::MaxReconsume;

mod start;

use crate::config::PushConsumerConfig;

/// Builds and starts a [`PushConsumer`](crate::PushConsumer). Every setter documents its Java
/// name and default; [`start`](Self::start) validates everything first.
///
/// ```no_run
/// # async fn demo() -> rmq_error::Result<()> {
/// use std::time::Duration;
/// use rmq_consumer_push::{ConsumeFrom, ConsumeResult, MessageModel, PushConsumer, listener_fn};
///
/// let consumer = PushConsumer::builder()
///     .group("billing")
///     .namesrv_addr("127.0.0.1:9876")
///     .message_model(MessageModel::Clustering)
///     .consume_from(ConsumeFrom::FirstOffset)
///     .subscribe("orders", "paid || refunded")
///     .subscribe_sql("payments", "amount > 100")
///     .consume_timeout(Duration::from_secs(60))
///     .start(listener_fn(|_msgs, _ctx| Box::pin(async { ConsumeResult::Success })))
///     .await?;
/// # consumer.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `start` is called"]
pub struct PushConsumerBuilder {
    config: PushConsumerConfig,
    client: ClientConfigSource,
    endpoint: Option<String>,
}

rmq_consumer_base::group_setters!(PushConsumerBuilder, PushConsumerConfig, rebalance);

impl PushConsumerBuilder {
    /// Most listener calls in flight at once (Java `consumeThreadMin` /
    /// `consumeThreadMax`). 1–1000. Default: 20.
    pub fn consume_concurrency(mut self, n: usize) -> Self {
        self.config.consume_concurrency = n;
        self
    }

    /// Most messages per listener call (Java `consumeMessageBatchMaxSize`).
    /// 1–1024. Default: 1.
    pub fn consume_batch_max_size(mut self, n: usize) -> Self {
        self.config.consume_batch_max_size = n;
        self
    }

    /// Most messages per pull (Java `pullBatchSize`). 1–1024. Default: 32.
    /// The broker caps a pull at 32 messages / 256 KiB from memory anyway.
    pub fn pull_batch_size(mut self, n: usize) -> Self {
        // Out of range (> i32::MAX) fails the 1–1024 check at start.
        self.config.pull_batch_size = i32::try_from(n).unwrap_or(i32::MAX);
        self
    }

    /// Pause between pulls of a queue that found messages (Java
    /// `pullInterval`). At most 65 535 ms. Default: 0.
    pub fn pull_interval(mut self, interval: Duration) -> Self {
        self.config.pull_interval = interval;
        self
    }

    /// Flow control: most messages held per queue (Java
    /// `pullThresholdForQueue`). 1–65 535. Default: 1000. A hard limit here:
    /// pulls ask for no more than fits.
    pub fn pull_threshold_for_queue(mut self, n: usize) -> Self {
        self.config.pull_threshold_for_queue = n;
        self
    }

    /// Flow control: pulling pauses while a queue's held bodies take more
    /// than this many MiB (Java `pullThresholdSizeForQueue`). 1–1024.
    /// Default: 100. Checked before each pull, so one pull may go over.
    pub fn pull_threshold_size_for_queue_mib(mut self, mib: usize) -> Self {
        self.config.pull_threshold_size_for_queue_mib = mib;
        self
    }

    /// Flow control: pulling pauses while a queue's held offsets span more
    /// than this (Java `consumeConcurrentlyMaxSpan`) — one slow message
    /// holds back the commit offset, this bounds how far pulling runs ahead.
    /// 1–65 535. Default: 2000. Checked before each pull.
    pub fn consume_concurrently_max_span(mut self, span: i64) -> Self {
        self.config.consume_concurrently_max_span = span;
        self
    }

    /// Failed redeliveries before a message goes to `%DLQ%<group>` (Java
    /// `maxReconsumeTimes`). −1 means 16 for concurrent consumption and
    /// unlimited (`i32::MAX`, Java's orderly default) for orderly
    /// consumption, where suspended messages are counted locally.
    /// Default: −1.
    #[deprecated(
        since = "0.1.0",
        note = "use `max_reconsume(MaxReconsume::Times(n))` (or `MaxReconsume::Default` / `MaxReconsume::Unlimited` for the -1 / i32::MAX sentinels)"
    )]
    pub fn max_reconsume_times(mut self, times: i32) -> Self {
        self.config.max_reconsume_times = times;
        self
    }

    /// Failed redeliveries before a message goes to `%DLQ%<group>` (Java
    /// `maxReconsumeTimes`): `MaxReconsume::Times(n)`,
    /// `MaxReconsume::Unlimited`, or `MaxReconsume::Default` — 16 for
    /// concurrent consumption, unlimited for orderly consumption (where
    /// suspended messages are counted locally). Default:
    /// `MaxReconsume::Default`.
    pub fn max_reconsume(mut self, max: MaxReconsume) -> Self {
        self.config.max_reconsume_times = max.to_java();
        self
    }

    /// A listener call running longer than this is dropped (at its next
    /// `.await`) and counts as `ReconsumeLater` (Java `consumeTimeout`, in
    /// minutes; Java sends such messages back from a periodic scan instead
    /// of cancelling the call). Default: 15 min.
    pub fn consume_timeout(mut self, timeout: Duration) -> Self {
        self.config.consume_timeout = timeout;
        self
    }

    /// Long-polling hold time requested from the broker (Java
    /// `BROKER_SUSPEND_MAX_TIME_MILLIS`); the pull call's timeout is this +
    /// 15 s. At most 60 s. Default: 15 s.
    pub fn suspend_timeout(mut self, hold: Duration) -> Self {
        self.config.suspend_timeout = hold;
        self
    }

    /// Pause after a failed pull (Java `pullTimeDelayMillsWhenException`).
    /// Default: 1 s (what Java does in effect; see
    /// [`PushConsumerConfig::pull_delay_when_exception`]).
    pub fn pull_delay_when_exception(mut self, delay: Duration) -> Self {
        self.config.pull_delay_when_exception = delay;
        self
    }

    /// Pause while a queue is over a flow-control threshold (Java
    /// `PULL_TIME_DELAY_MILLS_WHEN_CACHE_FLOW_CONTROL`). Default: 50 ms.
    pub fn pull_delay_when_flow_control(mut self, delay: Duration) -> Self {
        self.config.pull_delay_when_flow_control = delay;
        self
    }

    /// Pause after the broker answered FLOW_CONTROL (Java
    /// `PULL_TIME_DELAY_MILLS_WHEN_BROKER_FLOW_CONTROL`). Default: 20 ms.
    pub fn pull_delay_when_broker_flow_control(mut self, delay: Duration) -> Self {
        self.config.pull_delay_when_broker_flow_control = delay;
        self
    }

    /// Pause before consuming a message again locally after its send-back
    /// failed (Java `submitConsumeRequestLater`, 5 s). Default: 5 s.
    pub fn reconsume_delay_when_send_back_failed(mut self, delay: Duration) -> Self {
        self.config.reconsume_delay_when_send_back_failed = delay;
        self
    }

    /// Period of the rebalance (Java `rocketmq.client.rebalance.waitInterval`).
    /// Default: 20 s.
    pub fn rebalance_interval(mut self, interval: Duration) -> Self {
        self.config.rebalance_interval = interval;
        self
    }

    /// A queue that has not pulled for this long is recreated at the next
    /// rebalance (Java `rocketmq.client.pull.pullMaxIdleTime`). Default: 120 s.
    pub fn pull_max_idle_time(mut self, idle: Duration) -> Self {
        self.config.pull_max_idle_time = idle;
        self
    }

    /// RocketMQ message trace (Java `enableMsgTrace`, default off): a
    /// `SubBefore` record per message before each listener call and a
    /// `SubAfter` after it (Java `ConsumeMessageTraceHookImpl`) go to the
    /// trace topic, written in batches by a background task through this
    /// consumer's client instance (signed as it when ACL is on); records
    /// still queued are sent at shutdown. The broker must have the topic
    /// (`traceTopicEnable=true` creates `RMQ_SYS_TRACE_TOPIC`).
    pub fn enable_trace(mut self, enable: bool) -> Self {
        self.config.enable_trace = enable;
        self
    }

    /// The trace topic instead of `RMQ_SYS_TRACE_TOPIC` (Java
    /// `customizedTraceTopic`).
    pub fn trace_topic(mut self, topic: impl Into<String>) -> Self {
        self.config.trace_topic = Some(topic.into());
        self
    }

    /// How long [`PushConsumer::shutdown`](crate::PushConsumer::shutdown) waits for listener calls in
    /// flight (Java `awaitTerminationMillisWhenShutdown`, 0 there).
    /// Default: 30 s.
    pub fn shutdown_await_timeout(mut self, timeout: Duration) -> Self {
        self.config.shutdown_await_timeout = timeout;
        self
    }

    /// Orderly: how long a queue pauses after its listener returned
    /// [`SuspendCurrentQueueAMoment`](crate::OrderlyResult::SuspendCurrentQueueAMoment)
    /// or [`Rollback`](crate::OrderlyResult::Rollback) — the default of
    /// [`OrderlyContext::suspend_current_queue_time`](crate::OrderlyContext::suspend_current_queue_time)
    /// (Java `suspendCurrentQueueTimeMillis`). 10 ms ..= 30 s. Default: 1 s.
    pub fn suspend_current_queue_time(mut self, time: Duration) -> Self {
        self.config.suspend_current_queue_time = time;
        self
    }

    /// Orderly, clustering: how often the broker locks of the assigned
    /// queues are renewed (Java system property
    /// `rocketmq.client.rebalance.lockInterval`). Must be shorter than
    /// [`lock_lease`](Self::lock_lease). Default: 20 s.
    pub fn lock_renew_interval(mut self, interval: Duration) -> Self {
        self.config.lock_renew_interval = interval;
        self
    }

    /// Orderly, clustering: a queue whose broker lock was not confirmed for
    /// this long stops being consumed until it is locked again (Java system
    /// property `rocketmq.client.rebalance.lockMaxLiveTime`). Must be
    /// longer than the renew interval and shorter than the broker's 60 s
    /// lock lease. Default: 30 s.
    pub fn lock_lease(mut self, lease: Duration) -> Self {
        self.config.lock_lease = lease;
        self
    }

    /// Pop instead of pull (Java `setClientRebalance(false)`; RocketMQ 5):
    /// the consumer asks the brokers which queues to read
    /// (QUERY_ASSIGNMENT, after setting the group's request mode of each
    /// topic to POP, sharing every queue with every member), pops messages
    /// (each hidden from the rest of the group for
    /// [`pop_invisible_time`](Self::pop_invisible_time)), acks what the
    /// listener consumed (batched) and, on `ReconsumeLater`, hides the
    /// messages for the delay of their next delay level (then the broker
    /// delivers them again with reconsume times + 1); after
    /// [`max_reconsume_times`](Self::max_reconsume_times) they go to
    /// `%DLQ%<group>`. No queue is owned, so more members than queues all
    /// receive and a member leaving stalls nothing. With
    /// [`start_orderly`](Self::start_orderly) the pops are orderly
    /// (`order=true`): the broker gives each queue's messages to one member
    /// at a time, in offset order, and blocks the queue until they are acked
    /// or hidden again (a suspend hides them for the suspend time; their
    /// reconsume times count the deliveries). Clustering mode only; the
    /// listener API, concurrency and the
    /// per-queue count and size thresholds are as in pull mode (the offset
    /// span does not apply: the broker keeps the offsets). A 4.x broker
    /// fails [`start`](Self::start) with
    /// [`Error::PopNotSupported`](crate::Error::PopNotSupported).
    /// Default: false.
    pub fn pop_mode(mut self, on: bool) -> Self {
        self.config.pop_mode = on;
        self
    }

    /// Pop mode: how long a popped message stays hidden before the broker
    /// delivers it again unless acked (Java `popInvisibleTime`). A message
    /// whose listener call outlives it may be consumed twice. 1 s ..= 12 h.
    /// Default: 60 s.
    pub fn pop_invisible_time(mut self, invisible: Duration) -> Self {
        self.config.pop_invisible_time = invisible;
        self
    }

    /// Receive through the RocketMQ 5.x proxy at `endpoint` (`host:port` of
    /// its gRPC port, e.g. `127.0.0.1:8081`) instead of pulling from the
    /// brokers: the same listener and stream API, over the proxy's
    /// `QueryAssignment`, `ReceiveMessage`, `AckMessage`,
    /// `ChangeInvisibleDuration` and `ForwardMessageToDeadLetterQueue`
    /// (as the Java gRPC client's `PushConsumer`).
    ///
    /// - Every assignment of the proxy (a broker, or one queue of a FIFO
    ///   group) has a receive loop that long-polls up to
    ///   [`pull_batch_size`](Self::pull_batch_size) messages while it
    ///   holds fewer than
    ///   [`pull_threshold_for_queue`](Self::pull_threshold_for_queue)
    ///   messages and
    ///   [`pull_threshold_size_for_queue_mib`](Self::pull_threshold_size_for_queue_mib)
    ///   MiB; the proxy keeps received messages hidden while they are
    ///   consumed (it renews their invisible time).
    /// - Consumed messages are acked. A failed one (`ReconsumeLater`, a
    ///   panic, the consume timeout) is hidden for the proxy's backoff of
    ///   its delivery attempt (`Retry::Level(n)`: the delay of level `n`),
    ///   then delivered again with `reconsume_times` + 1; when its attempts
    ///   are used up (the group's `retryMaxTimes` + 1) or the call asks for
    ///   `Retry::Dlq`, it goes to `%DLQ%<group>`.
    /// - FIFO — [`start_orderly`](Self::start_orderly), or a group with
    ///   `consumeMessageOrderly=true`: the messages of one message group
    ///   are consumed one call at a time, in order; a failed call is tried
    ///   again locally after the backoff until the attempts are used up,
    ///   then its messages go to the DLQ. `start_orderly` needs such a
    ///   group.
    ///
    /// What the proxy decides cannot be set here: [`start`](Self::start)
    /// fails with [`Error::Config`](crate::Error::Config) for
    /// [`namesrv_addr`](Self::namesrv_addr) or
    /// [`client_config`](Self::client_config), broadcasting,
    /// [`consume_from`](Self::consume_from) other than the last offset, an
    /// [`offset_store`](Self::offset_store), an
    /// [`allocate_strategy`](Self::allocate_strategy),
    /// [`max_reconsume`](Self::max_reconsume) (set the group's
    /// `retryMaxTimes`), [`pop_mode`](Self::pop_mode),
    /// [`enable_trace`](Self::enable_trace) and
    /// [`suspend_current_queue_time`](Self::suspend_current_queue_time)
    /// (FIFO retries wait for the proxy's backoff). Settings of offsets,
    /// pulls and queue locks have no effect. Topics need their 5.x message
    /// type (`+message.type=NORMAL|FIFO|DELAY`).
    ///
    /// ```no_run
    /// # async fn demo() -> rmq_error::Result<()> {
    /// use rmq_consumer_push::{ConsumeResult, PushConsumer, listener_fn};
    ///
    /// let consumer = PushConsumer::builder()
    ///     .group("billing")
    ///     .endpoint("127.0.0.1:8081") // instead of .namesrv_addr(..)
    ///     .subscribe("orders", "paid || refunded")
    ///     .start(listener_fn(|_msgs, _ctx| Box::pin(async { ConsumeResult::Success })))
    ///     .await?;
    /// # consumer.shutdown().await?;
    /// # Ok(()) }
    /// ```
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// Validates the settings (what [`start`](Self::start) does first).
    ///
    /// # Errors
    ///
    /// [`Error::Config`](crate::Error::Config) naming the first bad setting.
    pub fn validate(&self) -> rmq_error::Result<()> {
        self.validate_detailed().map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use rmq_protocol::body::{ExpressionType, MessageModel};
    use rmq_rebalance::AllocateAveragelyByCircle;

    use super::*;
    use crate::ConsumeFrom;

    #[test]
    fn setters_reach_the_config() {
        let b = PushConsumerBuilder::default()
            .group("G")
            .message_model(MessageModel::Broadcasting)
            .consume_from(ConsumeFrom::FirstOffset)
            .allocate_strategy(AllocateAveragelyByCircle)
            .subscribe("A", "x || y")
            .subscribe_sql("B", "a > 5")
            .subscribe("A", "*")
            .consume_concurrency(4)
            .consume_batch_max_size(8)
            .pull_batch_size(16)
            .pull_interval(Duration::from_millis(10))
            .pull_threshold_for_queue(50)
            .pull_threshold_size_for_queue_mib(2)
            .consume_concurrently_max_span(300)
            .max_reconsume(MaxReconsume::Times(2))
            .consume_timeout(Duration::from_secs(5))
            .suspend_timeout(Duration::from_secs(3))
            .pull_delay_when_exception(Duration::from_millis(300))
            .pull_delay_when_flow_control(Duration::from_millis(5))
            .pull_delay_when_broker_flow_control(Duration::from_millis(6))
            .reconsume_delay_when_send_back_failed(Duration::from_millis(700))
            .rebalance_interval(Duration::from_secs(2))
            .pull_max_idle_time(Duration::from_secs(9))
            .shutdown_await_timeout(Duration::from_secs(1))
            .offset_store_dir("/tmp/x")
            .suspend_current_queue_time(Duration::from_millis(300))
            .lock_renew_interval(Duration::from_secs(2))
            .lock_lease(Duration::from_secs(5));
        assert!(b.validate().is_ok());
        let c = b.config();
        assert_eq!(c.group(), "G");
        assert_eq!(c.message_model(), MessageModel::Broadcasting);
        assert_eq!(c.consume_from(), ConsumeFrom::FirstOffset);
        assert_eq!(c.allocate_strategy().name(), "AVG_BY_CIRCLE");
        assert_eq!(c.subscriptions().len(), 2);
        assert_eq!(c.subscriptions()[0].topic, "B");
        assert_eq!(c.subscriptions()[0].expression_type, ExpressionType::Sql92);
        assert_eq!(c.subscriptions()[1].expression, "*");
        assert_eq!(c.consume_concurrency(), 4);
        assert_eq!(c.consume_batch_max_size(), 8);
        assert_eq!(c.pull_batch_size(), 16);
        assert_eq!(c.pull_interval(), Duration::from_millis(10));
        assert_eq!(c.pull_threshold_for_queue(), 50);
        assert_eq!(c.pull_threshold_size_for_queue_mib(), 2);
        assert_eq!(c.consume_concurrently_max_span(), 300);
        assert_eq!(c.effective_max_reconsume_times(), 2);
        assert_eq!(c.consume_timeout(), Duration::from_secs(5));
        assert_eq!(c.suspend_timeout(), Duration::from_secs(3));
        assert_eq!(c.pull_delay_when_exception(), Duration::from_millis(300));
        assert_eq!(c.pull_delay_when_flow_control(), Duration::from_millis(5));
        assert_eq!(
            c.pull_delay_when_broker_flow_control(),
            Duration::from_millis(6)
        );
        assert_eq!(
            c.reconsume_delay_when_send_back_failed(),
            Duration::from_millis(700)
        );
        assert_eq!(c.rebalance_interval(), Duration::from_secs(2));
        assert_eq!(c.pull_max_idle_time(), Duration::from_secs(9));
        assert_eq!(c.shutdown_await_timeout(), Duration::from_secs(1));
        assert_eq!(c.offset_store_dir(), Some(std::path::Path::new("/tmp/x")));
        assert_eq!(c.suspend_current_queue_time(), Duration::from_millis(300));
        assert_eq!(c.lock_renew_interval(), Duration::from_secs(2));
        assert_eq!(c.lock_lease(), Duration::from_secs(5));
        assert!(!c.is_orderly());
    }
}
