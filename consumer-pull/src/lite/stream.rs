//! [`MessageStream`]: the lite pull consumer's buffer as a
//! `futures::Stream`.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::{FusedStream, Stream};

use crate::error::{Error, Result};
use crate::lite::inner::Inner;
use rmq_protocol::MessageExt;

/// The messages of a [`LitePullConsumer`](crate::LitePullConsumer), one at
/// a time (from [`stream`](crate::LitePullConsumer::stream)).
///
/// Items are owned [`MessageExt`]s (bodies are `Bytes`, cheap to keep).
/// Errors of the background pulls arrive as `Err` items and the stream
/// goes on; it ends (`None`) only after the consumer is shut down (or all
/// its handles were dropped). Reading slowly is fine: the consumer's
/// buffer is bounded, so pulling slows down instead of memory growing.
///
/// # Cancel safety
///
/// `next().await` is cancel-safe: a message leaves the consumer's buffer
/// only in the synchronous step that returns it, so dropping a pending
/// `next()` (e.g. in `select!`) loses nothing.
#[must_use = "streams do nothing unless polled"]
pub struct MessageStream {
    inner: Arc<Inner>,
    pending: Option<BoxFuture<'static, Option<Result<MessageExt>>>>,
    done: bool,
}

impl fmt::Debug for MessageStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageStream")
            .field("group", &self.inner.core.group())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl MessageStream {
    pub(crate) fn new(inner: Arc<Inner>) -> Self {
        MessageStream {
            inner,
            pending: None,
            done: false,
        }
    }
}

/// Waits for the next message (or error); `None` after shutdown.
async fn next_item(inner: Arc<Inner>) -> Option<Result<MessageExt>> {
    loop {
        let notified = inner.msg_ready.notified();
        tokio::pin!(notified);
        // Register before looking: a wake-up after the look is not lost.
        notified.as_mut().enable();
        match inner.try_take(1) {
            Some(Ok(mut msgs)) => {
                if let Some(msg) = msgs.pop() {
                    return Some(Ok(msg));
                }
            }
            Some(Err(Error::Shutdown)) => return None,
            Some(Err(e)) => return Some(Err(e)),
            None => notified.await,
        }
    }
}

impl Stream for MessageStream {
    type Item = rmq_error::Result<MessageExt>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let inner = self.inner.clone();
        let fut = self
            .pending
            .get_or_insert_with(|| Box::pin(next_item(inner)));
        match fut.as_mut().poll(cx) {
            Poll::Ready(item) => {
                self.pending = None;
                if item.is_none() {
                    self.done = true;
                }
                Poll::Ready(item.map(|r| r.map_err(Into::into)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl FusedStream for MessageStream {
    fn is_terminated(&self) -> bool {
        self.done
    }
}
