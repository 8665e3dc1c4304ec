//! [`PopLoop`]: pops one assigned queue (usually `queueId -1`: any queue
//! of the broker) while its messages in hand stay under the flow-control
//! thresholds (Java `DefaultMQPushConsumerImpl.popMessage`).

use std::sync::Arc;
use std::time::Duration;

use rmq_client_core::{PopStatus, is_pop_unsupported, now_ms};
use rmq_consumer_base::offsets;
use rmq_protocol::header::PopMessageRequestHeader;
use rmq_protocol::pop::{ExtraInfo, POP_CK, pop_retry_origin};
use rmq_protocol::{MessageExt, MessageQueue};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, trace, warn};

use crate::config::ConsumeFrom;
use crate::in_hand::{InHand, body_bytes};
use crate::inner::{Inner, Listener};
use crate::pop::orderly::OrderlyPop;
use crate::pop::settle::{Popped, Settler};

/// ConsumeInitMode (Java): where a group without an offset starts.
const INIT_MODE_MIN: i32 = 0;
const INIT_MODE_MAX: i32 = 1;
/// Logs one flow-control warning every this many pauses.
const FLOW_CONTROL_LOG_EVERY: u64 = 1000;
/// Orderly pop: the longest poll while a queue is hidden (suspended), so
/// that it is popped again soon after it becomes visible (a long poll is
/// only woken by new messages).
const HIDDEN_POLL: Duration = Duration::from_secs(1);

pub(crate) struct PopLoop {
    inner: Arc<Inner>,
    mq: MessageQueue,
    cancel: CancellationToken,
    settler: Settler,
    held: Arc<InHand>,
    flow_controlled: u64,
    /// Orderly consumers: pops with `order=true`, consumed before the
    /// next pop.
    orderly: Option<OrderlyPop>,
    /// Orderly pop: the attempt id of a pop that got no answer, sent again
    /// so that the broker answers the messages it popped for it at once
    /// instead of keeping their queues blocked.
    attempt_id: Option<String>,
    attempts: u64,
    /// Orderly pop: a queue is hidden until about then; poll shortly.
    hidden_until: Option<tokio::time::Instant>,
}

impl PopLoop {
    pub(crate) fn spawn(
        inner: &Arc<Inner>,
        mq: MessageQueue,
        cancel: CancellationToken,
        settler: Settler,
    ) {
        let span = rmq_consumer_base::queue_span(&mq);
        let orderly = match &inner.listener {
            Listener::Orderly(l) => {
                Some(OrderlyPop::new(inner.clone(), l.clone(), settler.clone()))
            }
            Listener::Concurrent(_) => None,
        };
        let mut this = PopLoop {
            inner: inner.clone(),
            mq,
            cancel,
            settler,
            held: Arc::new(InHand::default()),
            flow_controlled: 0,
            orderly,
            attempt_id: None,
            attempts: 0,
            hidden_until: None,
        };
        inner
            .core
            .tasks()
            .spawn(async move { this.run().await }.instrument(span));
    }

    async fn run(&mut self) {
        while !self.cancel.is_cancelled() {
            let pause = self.iteration().await;
            if pause > Duration::ZERO {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = self.cancel.cancelled() => break,
                }
            }
        }
        debug!("pop loop stopped");
    }

    /// One pop; answers the pause before the next.
    async fn iteration(&mut self) -> Duration {
        let inner = self.inner.clone();
        let cfg = &inner.config;
        let count = self.held.count();
        let over = if count >= cfg.pull_threshold_for_queue {
            Some("message count")
        } else if self.held.bytes() / (1024 * 1024) > cfg.pull_threshold_size_for_queue_mib {
            Some("message size")
        } else {
            None
        };
        if let Some(reason) = over {
            self.flow_controlled = self.flow_controlled.wrapping_add(1);
            if self.flow_controlled % FLOW_CONTROL_LOG_EVERY == 1 {
                warn!(
                    reason,
                    times = self.flow_controlled,
                    "flow control: the queue holds too much; popping paused"
                );
            }
            return cfg.pull_delay_when_flow_control;
        }
        let room = cfg.pull_threshold_for_queue.saturating_sub(count).max(1);
        let max = i32::try_from(room).map_or(cfg.pull_batch_size, |r| r.min(cfg.pull_batch_size));
        let Some(sub) = cfg
            .subscriptions
            .iter()
            .rev()
            .find(|s| s.topic == self.mq.topic)
        else {
            warn!("no subscription for the queue's topic");
            return cfg.pull_delay_when_exception;
        };
        let instance = self.inner.core.instance();
        let order = self.orderly.is_some();
        let attempt_id = order.then(|| {
            let attempts = &mut self.attempts;
            self.attempt_id
                .get_or_insert_with(|| {
                    *attempts = attempts.wrapping_add(1);
                    format!("{}-{}-{}", instance.client_id(), now_ms(), attempts)
                })
                .clone()
        });
        let poll = match self.hidden_until {
            Some(until) => until
                .saturating_duration_since(tokio::time::Instant::now())
                .clamp(Duration::from_millis(100), HIDDEN_POLL)
                .min(cfg.suspend_timeout),
            None => cfg.suspend_timeout,
        };
        let addr = match offsets::master_addr::<crate::PushConsumerKind>(instance, &self.mq).await {
            Ok(a) => a,
            Err(e) => {
                debug!(error = %rmq_protocol::ErrorChain(&e), "no address for the queue's broker; retrying later");
                return cfg.pull_delay_when_exception;
            }
        };
        let header = PopMessageRequestHeader {
            consumer_group: self.inner.core.group().to_owned(),
            topic: self.mq.topic.clone(),
            queue_id: self.mq.queue_id,
            max_msg_nums: max,
            invisible_time: millis(cfg.pop_invisible_time),
            poll_time: millis(poll),
            born_time: now_ms(),
            init_mode: match cfg.consume_from() {
                ConsumeFrom::FirstOffset => INIT_MODE_MIN,
                _ => INIT_MODE_MAX,
            },
            exp_type: Some(sub.expression_type.to_string()),
            exp: Some(sub.expression.clone()),
            order: Some(order),
            attempt_id,
            broker_name: Some(self.mq.broker_name.clone()),
        };
        trace!(max, addr, "pop");
        let popped = tokio::select! {
            r = instance.pop_message(&addr, &self.mq.broker_name, header, None) => r,
            () = self.cancel.cancelled() => return Duration::ZERO,
        };
        // An answer (even a refusal) ends the attempt; a lost one is retried
        // with the same id.
        if popped
            .as_ref()
            .map_or_else(|e| e.response_code().is_some(), |_| true)
        {
            self.attempt_id = None;
        }
        match popped {
            Ok(result) => match result.status {
                PopStatus::Found => {
                    self.hidden_until = None;
                    self.dispatch(result.messages, &addr).await;
                    cfg.pull_interval
                }
                PopStatus::PollingFull => cfg.pull_delay_when_broker_flow_control,
                _ => Duration::ZERO,
            },
            Err(e) if e.is_auth() => {
                warn!(error = %rmq_protocol::ErrorChain(&e), backoff = ?rmq_client_core::AUTH_FAILURE_BACKOFF, "pop refused: not authenticated or not authorized; backing off");
                rmq_client_core::AUTH_FAILURE_BACKOFF
            }
            Err(e) if is_pop_unsupported(&e) => {
                warn!(
                    addr,
                    "the broker does not pop (RocketMQ 5 needed); retrying later"
                );
                cfg.pull_delay_when_exception
            }
            Err(e) => {
                if !self.cancel.is_cancelled() {
                    warn!(error = %rmq_protocol::ErrorChain(&e), "pop failed; retrying later");
                }
                cfg.pull_delay_when_exception
            }
        }
    }

    /// Gives popped messages to the settler in listener batches; a message
    /// redelivered more often than allowed goes to the DLQ instead.
    /// Orderly: consumes them before answering.
    async fn dispatch(&mut self, msgs: Vec<MessageExt>, addr: &str) {
        let group = self.inner.core.group();
        let max_reconsume = self.inner.config.effective_max_reconsume_times();
        let mut batch: Vec<Popped> = Vec::with_capacity(msgs.len());
        for mut msg in msgs {
            if let Some(origin) = pop_retry_origin(&msg.topic, group) {
                msg.topic = origin.to_owned();
            }
            let Some(ck) = msg.property(POP_CK).and_then(|c| ExtraInfo::parse(c).ok()) else {
                warn!(msg_id = %msg.msg_id, "popped message without a checkpoint; skipped (it comes back after its invisible time)");
                continue;
            };
            let popped = Popped {
                topic: self.mq.topic.clone(),
                ck,
                addr: addr.to_owned(),
                msg,
            };
            // Orderly: checked after a failed call (Java `checkReconsumeTimes`).
            if self.orderly.is_none() && popped.msg.reconsume_times > max_reconsume {
                self.settler.to_dlq(&popped).await;
                continue;
            }
            batch.push(popped);
        }
        if let Some(orderly) = &self.orderly {
            self.held
                .add(batch.len(), body_bytes(batch.iter().map(|p| &p.msg)));
            let hidden = orderly.consume(&self.mq, batch).await;
            self.held.clear();
            self.hidden_until = hidden.map(|d| tokio::time::Instant::now() + d);
            return;
        }
        let size = self.inner.config.consume_batch_max_size.max(1);
        while !batch.is_empty() {
            let rest = batch.split_off(batch.len().min(size));
            let call = std::mem::replace(&mut batch, rest);
            self.settler.submit(&self.mq, &self.held, call);
        }
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
