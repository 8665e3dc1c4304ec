//! The batch sends of [`Producer`]: `send_batch` and the auto-batching path
//! (adding to a pending batch, flushing it).

use std::sync::Arc;

use rmq_client_core::SendResult;
use rmq_protocol::Message;
use tracing::Instrument;

use super::{Backend, Producer, hand_back};
use crate::batching::{Accumulator, Added, Entry};
use crate::error::{Error, Result, Unsent};
use crate::prepare::{encode_stamped_batch, prepare_batch, prepare_message, stamp};
use crate::send::Outcome;

impl Producer {
    /// Adds `msg` to its topic's pending batch and waits for that batch's
    /// answer (see [`crate::Batching`]).
    pub(super) async fn send_batched(
        &self,
        mut msg: Message,
        acc: &Arc<Accumulator>,
    ) -> Result<SendResult> {
        // Wrapped before it joins a batch: batches are keyed by topic.
        crate::prepare::enter_namespace(&mut msg, self.namespace());
        if let Err(e) = crate::validate::check_message(&msg, self.config().max_message_size) {
            return hand_back(
                self.namespace(),
                Outcome::failed(e.into()),
                Unsent::Message(Box::new(msg)),
            );
        }
        stamp(&mut msg);
        // The message carries the caller's trace context; the batch's
        // `send` span (see `flush`) follows from the caller's span.
        let caller = tracing::Span::current();
        crate::telemetry::propagate(&caller, std::slice::from_mut(&mut msg));
        let Some(permit) = acc.room(msg.body.len()).await else {
            return hand_back(
                self.namespace(),
                Outcome::failed(Error::Shutdown),
                Unsent::Message(Box::new(msg)),
            );
        };
        let topic = msg.topic.clone();
        let (reply, answer) = tokio::sync::oneshot::channel();
        // Counted by `shutdown`'s wait until the flushes below are spawned:
        // a batch added before `take_all` is sent before the client closes.
        let adding = self.inner.tasks.token();
        let (added, earlier) = match acc.add(Entry {
            msg,
            reply,
            caller,
            _permit: permit,
        }) {
            Ok(added) => added,
            Err(entry) => {
                return hand_back(
                    self.namespace(),
                    Outcome::failed(Error::Shutdown),
                    Unsent::Message(Box::new(entry.msg)),
                );
            }
        };
        if let Some(batch) = earlier {
            self.spawn_flush(batch);
        }
        match added {
            Added::Flush(batch) => self.spawn_flush(batch),
            Added::StartTimer(key, generation) => {
                let producer = self.clone();
                let acc = acc.clone();
                self.inner.tasks.spawn(async move {
                    tokio::time::sleep(acc.config.linger).await;
                    let batch = acc.take(&key, generation);
                    producer.flush(batch).await;
                });
            }
            Added::Queued => {}
        }
        drop(adding);
        match answer.await {
            Ok((result, attempts, msg)) => hand_back(
                self.namespace(),
                Outcome { attempts, result },
                Unsent::Message(Box::new(msg)),
            ),
            // The flush task ended without answering (the runtime shut down).
            Err(_) => Err(Error::Send {
                topic,
                attempts: 0,
                source: Box::new(Error::Shutdown),
                unsent: Unsent::Batch(Vec::new()),
            }),
        }
    }

    pub(super) fn spawn_flush(&self, batch: Vec<Entry>) {
        let producer = self.clone();
        self.inner
            .tasks
            .spawn(async move { producer.flush(batch).await });
    }

    /// Sends one pending batch (a lone message as a plain send) and answers
    /// each of its callers. The batch has one `send` span (following from
    /// its callers' spans), its metrics and, with trace on, a `Pub` record
    /// per message.
    async fn flush(&self, batch: Vec<Entry>) {
        let Backend::Remoting(sender) = &self.inner.backend else {
            return;
        };
        let Some(first) = batch.first() else {
            return;
        };
        let retries = self.config().retry_times_when_send_failed;
        let trace_started = crate::message_trace::started(&self.inner.backend);
        let obs = self.inner.telemetry.start(&first.msg.topic, batch.len());
        let mut msgs = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        for e in batch {
            obs.span().follows_from(&e.caller);
            msgs.push(e.msg);
            replies.push((e.reply, e._permit));
        }
        // A lone message goes as a plain send; a batch's messages were
        // checked and stamped by `send_batched` (and `Accumulator::accepts`
        // kept out timer, delayed and transactional ones), so it is only
        // encoded, and its ids come back for the split.
        let (outcome, ids) = async {
            if let [only] = msgs.as_mut_slice() {
                let outcome = match prepare_message(only, self.config()) {
                    Err(e) => Outcome::failed(e),
                    Ok(prepared) => sender.send_with_retries(&prepared, retries).await,
                };
                (outcome, None)
            } else {
                match encode_stamped_batch(&msgs, None, self.config()) {
                    Err(e) => (Outcome::failed(e), None),
                    Ok(mut prepared) => {
                        let outcome = sender.send_with_retries(&prepared, retries).await;
                        (outcome, prepared.batch_ids.take())
                    }
                }
            }
        }
        .instrument(obs.span().clone())
        .await;
        obs.finish(&outcome);
        let n = msgs.len();
        match msgs.as_slice() {
            [only] => {
                crate::message_trace::on_sent(&self.inner.backend, trace_started, only, &outcome);
            }
            all => {
                crate::message_trace::on_batch_sent(
                    &self.inner.backend,
                    trace_started,
                    all,
                    &outcome,
                );
            }
        }
        let attempts = outcome.attempts;
        match outcome.result {
            Ok(sent) if n == 1 => {
                for ((reply, _permit), msg) in replies.into_iter().zip(msgs) {
                    let _ = reply.send((Ok(sent.clone()), attempts, msg));
                }
            }
            Ok(sent) => {
                let ids = ids.unwrap_or_else(|| {
                    msgs.iter()
                        .map(|m| m.unique_key().unwrap_or_default().to_owned())
                        .collect()
                });
                let results = crate::batching::split_result(sent, ids);
                for (((reply, _permit), msg), r) in replies.into_iter().zip(msgs).zip(results) {
                    let _ = reply.send((Ok(r), attempts, msg));
                }
            }
            Err(e) => {
                let cause = Arc::new(e);
                for ((reply, _permit), msg) in replies.into_iter().zip(msgs) {
                    let e = Error::BatchFailed {
                        messages: n,
                        source: cause.clone(),
                    };
                    let _ = reply.send((Err(e), attempts, msg));
                }
            }
        }
    }

    /// Sends messages of one topic in one request (Java `send(Collection)`,
    /// SEND_BATCH_MESSAGE): stored contiguously in one queue. Retried like
    /// [`send`](Producer::send).
    ///
    /// Rules: at least one message, one topic (not a retry topic), no delay
    /// level, one `WAIT` value, every message valid, at most
    /// `max_message_size` bytes encoded. Bodies are not compressed. Each
    /// message gets its own `UNIQ_KEY`; [`SendResult::msg_id`] lists them in
    /// order, joined with `,`, and `queue_offset` is the first message's.
    /// The batch has one `send` span; with message trace on, each message
    /// gets its own `Pub` record.
    ///
    /// # Errors
    ///
    /// An [`Error::Send`] handing the batch back.
    pub async fn send_batch(&self, mut msgs: Vec<Message>) -> rmq_error::Result<SendResult> {
        let retries = self.config().retry_times_when_send_failed;
        let trace_started = crate::message_trace::started(&self.inner.backend);
        let obs = self
            .inner
            .telemetry
            .start(msgs.first().map_or("", |m| m.topic.as_str()), msgs.len());
        obs.propagate(&mut msgs);
        let outcome = async {
            match (self.check_running(), &self.inner.backend) {
                (Err(e), _) => Outcome::failed(e),
                (Ok(()), Backend::Grpc(g)) => g.send(&mut msgs).await,
                (Ok(()), Backend::Remoting(sender)) => {
                    match prepare_batch(&mut msgs, self.config()) {
                        Err(e) => Outcome::failed(e),
                        Ok(prepared) => sender.send_with_retries(&prepared, retries).await,
                    }
                }
            }
        }
        .instrument(obs.span().clone())
        .await;
        obs.finish(&outcome);
        crate::message_trace::on_batch_sent(&self.inner.backend, trace_started, &msgs, &outcome);
        hand_back(self.namespace(), outcome, Unsent::Batch(msgs)).map_err(Into::into)
    }
}
