//! The push consumer as a `futures::Stream` of [`Delivery`]s: a listener
//! that hands every message to the stream and waits for its decision.
//!
//! Everything else is the concurrent push consumer's: the process queues
//! and their commit rule (a queue's offset never passes a message whose
//! delivery is not acked), flow control, send-back, retries, DLQ. A
//! delivery occupies one listener call (one of `consume_concurrency`
//! permits) until it is decided, so deliveries in flight are bounded.

use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::{FusedStream, Stream};
use rmq_protocol::{MessageExt, MessageQueue};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::listener::concurrent::{ConsumeContext, ConsumeResult, MessageListener};

/// What the application decided about a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Ack,
    Later,
}

/// One message of a [`DeliveryStream`], waiting for a decision.
///
/// [`ack`](Self::ack) when it is consumed; [`reconsume_later`](Self::reconsume_later)
/// when it failed (clustering: it goes back to the broker and returns
/// through `%RETRY%<group>` after a delay, with `reconsume_times` + 1;
/// broadcasting: it is dropped, logged, as Java does). Dropping an
/// undecided delivery counts as `reconsume_later`: an error path or a
/// panic never loses a message. Until it is decided, its queue's committed
/// offset stays below it.
///
/// Derefs to the [`MessageExt`].
pub struct Delivery {
    msg: MessageExt,
    queue: MessageQueue,
    reply: Option<oneshot::Sender<Decision>>,
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delivery")
            .field("msg_id", &self.msg.msg_id)
            .field("queue", &self.queue)
            .field("queue_offset", &self.msg.queue_offset)
            .field("reconsume_times", &self.msg.reconsume_times)
            .finish_non_exhaustive()
    }
}

impl Delivery {
    /// The message (retried messages carry their original topic and
    /// `reconsume_times` > 0).
    pub fn message(&self) -> &MessageExt {
        &self.msg
    }

    /// The queue it was pulled from (for a retried message: the group's
    /// `%RETRY%` queue).
    pub fn queue(&self) -> &MessageQueue {
        &self.queue
    }

    /// The message is consumed: its offset may be committed.
    pub fn ack(mut self) {
        self.decide(Decision::Ack);
    }

    /// The message failed: consume it again later (see [`Delivery`]).
    pub fn reconsume_later(mut self) {
        self.decide(Decision::Later);
    }

    fn decide(&mut self, decision: Decision) {
        if let Some(reply) = self.reply.take() {
            // The listener call is gone only when the consumer was dropped
            // or its consume timeout passed: nothing left to tell.
            let _ = reply.send(decision);
        }
    }
}

impl Deref for Delivery {
    type Target = MessageExt;

    fn deref(&self) -> &MessageExt {
        &self.msg
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.decide(Decision::Later);
    }
}

/// What the listener and the stream share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The consumer's `stop_consume` token, once the consumer runs.
    stop: OnceLock<CancellationToken>,
}

impl Shared {
    pub(crate) fn set_stop(&self, token: CancellationToken) {
        let _ = self.stop.set(token);
    }
}

/// The listener behind a [`DeliveryStream`].
pub(crate) struct StreamListener {
    tx: mpsc::Sender<Delivery>,
    shared: Arc<Shared>,
}

impl StreamListener {
    /// A listener and its stream; `capacity` deliveries wait in the
    /// channel at most (more listener calls wait to hand theirs over).
    pub(crate) fn new(capacity: usize) -> (StreamListener, DeliveryStream) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let shared = Arc::new(Shared::default());
        (
            StreamListener {
                tx,
                shared: shared.clone(),
            },
            DeliveryStream {
                rx,
                shared,
                stopped: None,
                done: false,
            },
        )
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Hands `msg` to the stream; `None` when the stream is gone or the
    /// consumer stops.
    async fn hand_over(
        &self,
        msg: &MessageExt,
        queue: &MessageQueue,
    ) -> Option<oneshot::Receiver<Decision>> {
        let (reply, decided) = oneshot::channel();
        let delivery = Delivery {
            msg: msg.clone(),
            queue: queue.clone(),
            reply: Some(reply),
        };
        let sent = match self.shared.stop.get() {
            Some(stop) => tokio::select! {
                biased;
                () = stop.cancelled() => return None,
                r = self.tx.send(delivery) => r,
            },
            None => self.tx.send(delivery).await,
        };
        sent.ok().map(|()| decided)
    }
}

#[async_trait::async_trait]
impl MessageListener for StreamListener {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult {
        let mut waiting = Vec::with_capacity(msgs.len());
        for msg in msgs {
            match self.hand_over(msg, ctx.queue()).await {
                Some(decided) => waiting.push(decided),
                None => break,
            }
        }
        // The messages acked in a row from the first one count as consumed;
        // from the first one not acked on, the batch failed.
        let mut acked = 0usize;
        for decided in waiting {
            if decided.await == Ok(Decision::Ack) && acked < msgs.len() {
                acked += 1;
            } else {
                break;
            }
        }
        if acked == msgs.len() {
            ConsumeResult::Success
        } else if acked == 0 {
            ConsumeResult::ReconsumeLater
        } else {
            ctx.set_success_count(acked);
            ConsumeResult::Success
        }
    }
}

/// The messages of a push consumer started with
/// [`start_stream`](crate::PushConsumerBuilder::start_stream), as
/// [`Delivery`]s.
///
/// At most `consume_concurrency` deliveries (default 20) are undecided at
/// once: the next one waits until one is acked, reconsumed later or
/// dropped. Retried messages arrive like any other. The stream ends
/// (`None`) once the consumer is shut down and the deliveries handed over
/// before were read. Keep it until then: dropping it while the consumer
/// runs makes every further message "reconsume later".
///
/// # Cancel safety
///
/// `next().await` is cancel-safe: a delivery leaves the channel only when
/// it is returned.
#[must_use = "streams do nothing unless polled"]
pub struct DeliveryStream {
    rx: mpsc::Receiver<Delivery>,
    shared: Arc<Shared>,
    stopped: Option<BoxFuture<'static, ()>>,
    done: bool,
}

impl fmt::Debug for DeliveryStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeliveryStream")
            .field("waiting", &self.rx.len())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Stream for DeliveryStream {
    type Item = Delivery;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(d)) => return Poll::Ready(Some(d)),
            Poll::Ready(None) => {
                self.done = true;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        if self.stopped.is_none() {
            if let Some(stop) = self.shared.stop.get() {
                let stop = stop.clone();
                self.stopped = Some(Box::pin(async move { stop.cancelled_owned().await }));
            }
        }
        if let Some(stopped) = self.stopped.as_mut() {
            if stopped.as_mut().poll(cx).is_ready() {
                // Stopped: nothing new is handed over; whatever was is read.
                return match self.rx.try_recv() {
                    Ok(d) => Poll::Ready(Some(d)),
                    Err(_) => {
                        self.done = true;
                        Poll::Ready(None)
                    }
                };
            }
        }
        Poll::Pending
    }
}

impl FusedStream for DeliveryStream {
    fn is_terminated(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn msg(offset: i64) -> MessageExt {
        MessageExt {
            queue_offset: offset,
            ..MessageExt::default()
        }
    }

    /// Runs one listener call over `n` messages, deciding each with `decide`.
    async fn call(n: i64, decide: impl Fn(Delivery) + Send + 'static) -> (ConsumeResult, i32) {
        let (listener, mut stream) = StreamListener::new(2);
        let reader = tokio::spawn(async move {
            while let Some(d) = stream.next().await {
                decide(d);
            }
        });
        let msgs: Vec<MessageExt> = (0..n).map(msg).collect();
        let mut ctx = ConsumeContext::new(MessageQueue::new("T", "b", 0));
        let result = listener.consume(&msgs, &mut ctx).await;
        drop(listener);
        reader.await.expect("reader");
        (result, ctx.ack_index())
    }

    #[tokio::test]
    async fn decisions_become_the_call_result() {
        assert_eq!(call(3, Delivery::ack).await.0, ConsumeResult::Success);
        assert_eq!(
            call(1, Delivery::reconsume_later).await.0,
            ConsumeResult::ReconsumeLater
        );
        assert_eq!(call(1, drop).await.0, ConsumeResult::ReconsumeLater);
        // Acked in a row up to offset 1, then a drop: 0 and 1 are consumed.
        let (result, ack_index) = call(4, |d| {
            if d.queue_offset < 2 {
                d.ack();
            }
        })
        .await;
        assert_eq!((result, ack_index), (ConsumeResult::Success, 1));
    }

    #[tokio::test]
    async fn a_dropped_stream_fails_the_call_and_stop_ends_the_stream() {
        let (listener, stream) = StreamListener::new(1);
        drop(stream);
        let mut ctx = ConsumeContext::new(MessageQueue::new("T", "b", 0));
        assert_eq!(
            listener.consume(&[msg(0)], &mut ctx).await,
            ConsumeResult::ReconsumeLater
        );
        let (listener, mut stream) = StreamListener::new(1);
        let stop = CancellationToken::new();
        listener.shared().set_stop(stop.clone());
        stop.cancel();
        assert!(stream.next().await.is_none());
        assert!(stream.is_terminated());
        assert_eq!(
            listener.consume(&[msg(0)], &mut ctx).await,
            ConsumeResult::ReconsumeLater
        );
    }
}
