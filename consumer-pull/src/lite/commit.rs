//! The commit methods of [`LitePullConsumer`]: the committed offset of a
//! queue, commit everything handed out, commit messages or offsets (with
//! auto-commit off).

use rmq_offset_store::{PersistMode, ReadOffsetType};
use rmq_protocol::{MessageExt, MessageQueue};

use crate::error::{Error, unify};
use crate::lite::consumer::LitePullConsumer;
use crate::lite::inner;

impl LitePullConsumer {
    /// The group's committed offset of `queue` (the next offset to read):
    /// the one committed by this consumer if any, else the one stored by
    /// the broker (clustering) or the local file (broadcasting) (Java
    /// `committed`). `None` when there is none.
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] when the store could not be asked;
    /// [`Error::Shutdown`].
    pub async fn committed(&self, queue: &MessageQueue) -> rmq_error::Result<Option<i64>> {
        unify(async {
            let inner = self.running()?;
            let queue = &inner.core.namespace().wrap_queue(queue);
            Ok(inner
                .core
                .offset_store()
                .read_offset(queue, ReadOffsetType::MemoryFirstThenStore)
                .await?)
        })
        .await
    }

    /// Commits, for every assigned queue, the offset after its last
    /// handed-out message (everything handed out counts as committed, also
    /// messages still being worked on: see
    /// [`commit_message`](Self::commit_message) for at-least-once), and waits until the broker (or the local file)
    /// stored them (Java `commitSync`).
    ///
    /// # Errors
    ///
    /// [`Error::OffsetStore`] naming the queues whose offsets were not
    /// stored; [`Error::Shutdown`].
    pub async fn commit(&self) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.running()?;
            inner.commit(PersistMode::Sync).await
        })
        .await
    }

    /// Commits one handed-out message (rdkafka `commit_message`): with
    /// [`auto_commit(false)`](super::LitePullConsumerBuilder::auto_commit), the
    /// consumer tracks every message `poll` or a stream hands out, and a
    /// queue's committed offset is its smallest handed-out message not
    /// committed yet (one past the last handed-out one when all are). So
    /// messages finishing out of order (a `buffer_unordered` stage) or
    /// never (a crash) are read again after a restart, never skipped.
    /// Commit the messages a `filter` drops too, or their queue's offset
    /// stays at them. Waits until the broker (or the local file) stored the
    /// offset.
    ///
    /// The message names its queue and offset (`topic`, `broker_name`,
    /// `queue_id`, `queue_offset`). A message of before a
    /// [`seek`](Self::seek) of its queue changes nothing.
    ///
    /// ```no_run
    /// # async fn demo() -> rmq_error::Result<()> {
    /// use futures::StreamExt;
    /// use rmq_consumer_pull::LitePullConsumer;
    ///
    /// let consumer = LitePullConsumer::builder()
    ///     .group("analytics")
    ///     .subscribe("clicks", "*")
    ///     .auto_commit(false)
    ///     .start()
    ///     .await?;
    /// let c = &consumer;
    /// consumer
    ///     .stream()
    ///     .filter_map(|msg| async move { msg.ok() })
    ///     .map(|msg| async move {
    ///         // ... handle the message, out of order with the others ...
    ///         c.commit_message(&msg).await
    ///     })
    ///     .buffer_unordered(8)
    ///     .for_each(|committed| async move {
    ///         if let Err(e) = committed {
    ///             eprintln!("commit failed: {e}");
    ///         }
    ///     })
    ///     .await;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] with auto-commit on (it commits
    /// everything handed out); [`Error::NotAssigned`] when the message's
    /// queue is not assigned any more (a rebalance moved it: another member
    /// reads it again from the last committed offset);
    /// [`Error::OffsetStore`] when the offset was not stored;
    /// [`Error::Shutdown`].
    pub async fn commit_message(&self, msg: &MessageExt) -> rmq_error::Result<()> {
        self.commit_messages(std::slice::from_ref(msg)).await
    }

    /// [`commit_message`](Self::commit_message) for several messages at
    /// once, with one store call per queue.
    ///
    /// # Errors
    ///
    /// As [`commit_message`](Self::commit_message); a queue not assigned
    /// fails the call after the other queues' offsets were stored.
    pub async fn commit_messages(&self, msgs: &[MessageExt]) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.running()?;
            let mut missing = None;
            inner
                .commit_marked(|buffer| {
                    let mut positions: Vec<(MessageQueue, i64)> = Vec::new();
                    for msg in msgs {
                        let mut mq = queue_of(msg);
                        // The message's topic left the namespace.
                        inner.core.namespace().wrap_in_place(&mut mq.topic);
                        match inner::marked(&mq, buffer.mark(&mq, msg.queue_offset)) {
                            Ok(Some(p)) => match positions.iter_mut().find(|(q, _)| *q == p.0) {
                                Some(slot) => slot.1 = p.1,
                                None => positions.push(p),
                            },
                            Ok(None) => {}
                            Err(e) => missing = Some(e),
                        }
                    }
                    Ok(positions)
                })
                .await?;
            missing.map_or(Ok(()), Err)
        })
        .await
    }

    /// Commits the next offset to read of each given queue (Java
    /// `commitSync(Map)`): every handed-out message of the queue below it
    /// counts as committed; the stored offset is the queue's smallest
    /// uncommitted one (see [`commit_message`](Self::commit_message)), or
    /// the given offset when it is past everything handed out. Needs
    /// [`auto_commit(false)`](super::LitePullConsumerBuilder::auto_commit).
    ///
    /// # Errors
    ///
    /// [`Error::NotAssigned`] naming the first queue that is not assigned
    /// (then nothing is committed); otherwise as
    /// [`commit_message`](Self::commit_message).
    pub async fn commit_offsets(
        &self,
        offsets: impl IntoIterator<Item = (MessageQueue, i64)>,
    ) -> rmq_error::Result<()> {
        unify(async {
            let inner = self.running()?;
            let ns = inner.core.namespace();
            let offsets: Vec<(MessageQueue, i64)> = offsets
                .into_iter()
                .map(|(q, o)| (ns.wrap_queue(&q), o))
                .collect();
            inner
                .commit_marked(|buffer| {
                    if let Some((mq, _)) = offsets.iter().find(|(mq, _)| !buffer.contains(mq)) {
                        return Err(Error::NotAssigned { queue: mq.clone() });
                    }
                    let mut positions = Vec::with_capacity(offsets.len());
                    for (mq, offset) in &offsets {
                        if let Some(p) = inner::marked(mq, buffer.mark_below(mq, *offset))? {
                            positions.push(p);
                        }
                    }
                    Ok(positions)
                })
                .await
        })
        .await
    }
}

/// The queue a handed-out message was pulled from.
fn queue_of(msg: &MessageExt) -> MessageQueue {
    MessageQueue::new(msg.topic.as_str(), msg.broker_name.as_str(), msg.queue_id)
}
