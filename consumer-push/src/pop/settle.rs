//! Listener calls of popped messages and what follows them: acks (one
//! acker task batches them per broker: BATCH_ACK_MESSAGE), a longer
//! invisible time for messages to consume again, the DLQ for messages
//! redelivered too often (Java `ConsumeMessagePopConcurrentlyService`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::body::{BatchAck, BatchAckMessageRequestBody};
use rmq_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ConsumerSendMsgBackRequestHeader,
};
use rmq_protocol::message::property;
use rmq_protocol::pop::ExtraInfo;
use rmq_protocol::{MessageExt, MessageQueue};
use tokio::sync::mpsc;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::in_hand::{InHand, body_bytes};
use crate::inner::Inner;
use crate::listener::concurrent::ConsumeContext;
use crate::listener::concurrent_settle::first_failed;
use crate::service::concurrent::call_listener;

/// Acks waiting for the acker (a full queue makes settling wait).
const ACK_QUEUE: usize = 4096;
/// Most acks in one BATCH_ACK_MESSAGE round.
const ACK_BATCH: usize = 256;
/// The broker's default delay levels (`messageDelayLevel`): the invisible
/// time a message to consume again gets, by its next delay level (the gRPC
/// consumer uses them for `Retry::Level`).
pub(crate) const DELAY_LEVELS: [Duration; 18] = [
    Duration::from_secs(1),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(30),
    Duration::from_secs(60),
    Duration::from_secs(120),
    Duration::from_secs(180),
    Duration::from_secs(240),
    Duration::from_secs(300),
    Duration::from_secs(360),
    Duration::from_secs(420),
    Duration::from_secs(480),
    Duration::from_secs(540),
    Duration::from_secs(600),
    Duration::from_secs(1200),
    Duration::from_secs(1800),
    Duration::from_secs(3600),
    Duration::from_secs(7200),
];

/// A popped message and where to ack it.
pub(crate) struct Popped {
    /// The subscribed topic (the message may come from its retry topic).
    pub(crate) topic: String,
    pub(crate) ck: ExtraInfo,
    /// The broker that popped it.
    pub(crate) addr: String,
    pub(crate) msg: MessageExt,
}

/// What acks a message.
#[derive(Debug, Clone)]
pub(crate) struct Handle {
    topic: String,
    ck: ExtraInfo,
    addr: String,
}

impl Popped {
    /// What acks or hides this message.
    pub(crate) fn handle(&self) -> Handle {
        Handle {
            topic: self.topic.clone(),
            ck: self.ck.clone(),
            addr: self.addr.clone(),
        }
    }
}

/// Submits listener calls and settles their messages; cheap to clone.
/// The acker task ends when the last clone is gone.
#[derive(Clone)]
pub(crate) struct Settler {
    inner: Arc<Inner>,
    acks: mpsc::Sender<Handle>,
}

/// Spawns the acker task; answers the settler feeding it.
pub(crate) fn spawn(inner: &Arc<Inner>) -> Settler {
    let (tx, rx) = mpsc::channel(ACK_QUEUE);
    let acker = inner.clone();
    let span = info_span!(parent: None, "pop_acker", group = %inner.core.group());
    inner
        .core
        .tasks()
        .spawn(async move { run_acker(&acker, rx).await }.instrument(span));
    Settler {
        inner: inner.clone(),
        acks: tx,
    }
}

/// Acks what comes, batching whatever is queued at that moment (no added
/// latency). Drains the queue before it ends, so a shutdown acks every
/// message consumed before it.
async fn run_acker(inner: &Inner, mut rx: mpsc::Receiver<Handle>) {
    let mut batch = Vec::with_capacity(ACK_BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < ACK_BATCH {
            match rx.try_recv() {
                Ok(h) => batch.push(h),
                Err(_) => break,
            }
        }
        ack_all(inner, &batch).await;
        batch.clear();
    }
    debug!("pop acker stopped");
}

/// ACK_MESSAGE for a lone message of a broker, BATCH_ACK_MESSAGE for more.
/// A failure is logged: the messages then come back after their invisible
/// time (consumed twice, never lost).
async fn ack_all(inner: &Inner, handles: &[Handle]) {
    let group = inner.core.group();
    let instance = inner.core.instance();
    let mut by_broker: BTreeMap<(&str, &str), Vec<&Handle>> = BTreeMap::new();
    for h in handles {
        by_broker
            .entry((h.addr.as_str(), h.ck.broker_name.as_str()))
            .or_default()
            .push(h);
    }
    for ((addr, broker), hs) in by_broker {
        let result = if let [one] = hs.as_slice() {
            let header = AckMessageRequestHeader {
                consumer_group: group.to_owned(),
                topic: one.ck.real_topic(&one.topic, group),
                queue_id: one.ck.queue_id,
                extra_info: one.ck.to_string(),
                offset: one.ck.queue_offset,
                broker_name: Some(broker.to_owned()),
            };
            instance.ack_message(addr, header).await
        } else {
            match batch_body(group, broker, &hs) {
                Some(body) => instance.batch_ack_message(addr, &body).await,
                None => {
                    warn!(
                        addr,
                        "a popped message lies before its checkpoint; not acked (it comes back)"
                    );
                    continue;
                }
            }
        };
        if let Err(e) = result {
            warn!(addr, count = hs.len(), error = %rmq_protocol::ErrorChain(&e), "ack failed; the messages come back after their invisible time");
        }
    }
}

/// The BATCH_ACK_MESSAGE body of `hs` (one broker): one entry per
/// checkpoint, a bit per message (its offset after the checkpoint's).
fn batch_body(group: &str, broker: &str, hs: &[&Handle]) -> Option<BatchAckMessageRequestBody> {
    type CkKey<'a> = (&'a str, &'a str, i32, i64, i64, i64, i32);
    let mut acks: BTreeMap<CkKey<'_>, BatchAck> = BTreeMap::new();
    for h in hs {
        let ck = &h.ck;
        let bit = u32::try_from(ck.queue_offset - ck.ck_queue_offset).ok()?;
        let key = (
            h.topic.as_str(),
            ck.retry.as_str(),
            ck.queue_id,
            ck.ck_queue_offset,
            ck.pop_time,
            ck.invisible_time,
            ck.revive_qid,
        );
        acks.entry(key)
            .or_insert_with(|| BatchAck {
                consumer_group: group.to_owned(),
                topic: h.topic.clone(),
                retry: ck.retry.as_str().to_owned(),
                start_offset: ck.ck_queue_offset,
                queue_id: ck.queue_id,
                revive_queue_id: ck.revive_qid,
                pop_time: ck.pop_time,
                invisible_time: ck.invisible_time,
                bit_set: Default::default(),
            })
            .bit_set
            .insert(bit);
    }
    Some(BatchAckMessageRequestBody {
        broker_name: broker.to_owned(),
        acks: acks.into_values().collect(),
    })
}

impl Settler {
    /// Consumes `batch` (one listener call) in a task: waits for a
    /// concurrency permit, calls the listener, acks what it consumed and
    /// settles the rest. The messages count in `held` until then.
    pub(crate) fn submit(&self, mq: &MessageQueue, held: &Arc<InHand>, batch: Vec<Popped>) {
        let Some(first) = batch.first() else {
            return;
        };
        let queue = MessageQueue::new(mq.topic.clone(), mq.broker_name.clone(), first.ck.queue_id);
        let (mut msgs, handles): (Vec<MessageExt>, Vec<Handle>) = batch
            .into_iter()
            .map(|p| {
                (
                    p.msg,
                    Handle {
                        topic: p.topic,
                        ck: p.ck,
                        addr: p.addr,
                    },
                )
            })
            .unzip();
        held.add(msgs.len(), body_bytes(&msgs));
        let this = self.clone();
        let held = held.clone();
        self.inner.core.tasks().spawn(async move {
            let abort = this.inner.core.cancel().clone();
            tokio::select! {
                () = this.consume(queue, &mut msgs, handles) => {}
                () = abort.cancelled() => {}
            }
            held.remove(msgs.len(), body_bytes(&msgs));
        });
    }

    async fn consume(&self, queue: MessageQueue, msgs: &mut [MessageExt], handles: Vec<Handle>) {
        let inner = &self.inner;
        let permit = tokio::select! {
            permit = inner.semaphore.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return,
            },
            // Not consumed: they come back after their invisible time.
            () = inner.stop_consume.cancelled() => return,
        };
        rmq_consumer_base::mark_consume_start(msgs);
        let mut ctx = ConsumeContext::new(queue);
        let result = call_listener(inner, msgs, &mut ctx).await;
        drop(permit);
        let first_failed = first_failed(result, ctx.ack_index(), msgs.len());
        for (i, h) in handles.into_iter().enumerate() {
            let Some(msg) = msgs.get(i) else {
                continue;
            };
            if i >= first_failed {
                self.later(msg, h, ctx.delay_level_when_next_consume())
                    .await;
            } else if self.acks.send(h).await.is_err() {
                warn!("the acker stopped; a consumed message comes back");
            }
        }
    }

    /// A message to consume again: hidden for the delay of its next delay
    /// level (`level`, or 3 + its reconsume times when 0, as the broker
    /// picks for a send-back), then the broker delivers it again; to the
    /// DLQ when `level` is negative or it was delivered max reconsume
    /// times + 1 times. A failed change lets the pop invisible time lapse.
    async fn later(&self, msg: &MessageExt, h: Handle, level: i32) {
        let inner = &self.inner;
        if level < 0 || msg.reconsume_times >= inner.config.effective_max_reconsume_times() {
            self.dlq(msg, h).await;
            return;
        }
        let level = if level > 0 {
            level
        } else {
            msg.reconsume_times.saturating_add(3)
        };
        let index = usize::try_from(level.clamp(1, 18) - 1).unwrap_or(0);
        let delay = DELAY_LEVELS
            .get(index)
            .copied()
            .unwrap_or(Duration::from_secs(10));
        self.hide(msg, &h, delay).await;
    }

    /// Hides a popped message for `delay` from now
    /// (CHANGE_MESSAGE_INVISIBLETIME); `false` when the broker did not
    /// take it (the message then comes back after its current invisible
    /// time).
    pub(crate) async fn hide(&self, msg: &MessageExt, h: &Handle, delay: Duration) -> bool {
        let inner = &self.inner;
        let group = inner.core.group();
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: group.to_owned(),
            topic: h.ck.real_topic(&h.topic, group),
            queue_id: h.ck.queue_id,
            extra_info: h.ck.to_string(),
            offset: h.ck.queue_offset,
            invisible_time: i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
            broker_name: Some(h.ck.broker_name.clone()),
        };
        match inner
            .core
            .instance()
            .change_invisible_time(&h.addr, header)
            .await
        {
            Ok(_) => true,
            Err(e) => {
                warn!(msg_id = %msg.msg_id, error = %rmq_protocol::ErrorChain(&e), "cannot change the invisible time; the message comes back after the pop invisible time");
                false
            }
        }
    }

    /// Queues the ack of a consumed message (the acker batches them);
    /// `false` when the acker stopped (the message then comes back).
    pub(crate) async fn ack(&self, h: Handle) -> bool {
        if self.acks.send(h).await.is_err() {
            warn!("the acker stopped; a consumed message comes back");
            return false;
        }
        true
    }

    /// A popped message redelivered more often than allowed (checked when
    /// popped).
    pub(crate) async fn to_dlq(&self, popped: &Popped) {
        self.dlq(&popped.msg, popped.handle()).await;
    }

    /// CONSUMER_SEND_MSG_BACK straight to `%DLQ%<group>`, then the ack. A
    /// failure is logged and answers `false`; the message then comes back
    /// after its invisible time.
    pub(crate) async fn dlq(&self, msg: &MessageExt, h: Handle) -> bool {
        let inner = &self.inner;
        let header = ConsumerSendMsgBackRequestHeader {
            offset: msg.commit_log_offset,
            group: inner.core.group().to_owned(),
            delay_level: -1,
            origin_msg_id: Some(
                msg.property(property::ORIGIN_MESSAGE_ID)
                    .unwrap_or(&msg.msg_id)
                    .to_owned(),
            ),
            origin_topic: Some(msg.topic.clone()),
            unit_mode: Some(false),
            max_reconsume_times: Some(inner.config.effective_max_reconsume_times()),
            broker_name: Some(h.ck.broker_name.clone()),
        };
        match inner
            .core
            .instance()
            .consumer_send_back(&h.addr, header)
            .await
        {
            Ok(()) => {
                info!(msg_id = %msg.msg_id, reconsume_times = msg.reconsume_times, "message moved to the DLQ");
                if self.acks.send(h).await.is_err() {
                    warn!(msg_id = %msg.msg_id, "the acker stopped; a message moved to the DLQ comes back");
                }
                true
            }
            Err(e) => {
                warn!(msg_id = %msg.msg_id, error = %rmq_protocol::ErrorChain(&e), "moving a message to the DLQ failed; it comes back after its invisible time");
                false
            }
        }
    }
}
