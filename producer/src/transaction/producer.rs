//! [`TransactionProducer`]: half message, local transaction, END_TRANSACTION
//! (Java `DefaultMQProducerImpl.sendMessageInTransaction` / `endTransaction`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rmq_client_core::{SendResult, SendStatus};
use rmq_protocol::Message;
use rmq_protocol::header::EndTransactionRequestHeader;
use rmq_protocol::message::{parse_offset_msg_id, property};

use super::check::{CheckPool, guarded};
use super::listener::{TransactionListener, TransactionState};
use crate::error::{Error, Unsent};
use crate::msg_id::{next_message_id_v1, next_uniq_id};
use crate::producer::Producer;
use crate::validate::check_no_delay;

/// A running transactional producer (Java `TransactionMQProducer`): sends
/// half messages, runs the local transaction, commits or rolls back, and
/// answers the broker's check-backs for its group. Made by
/// [`ProducerBuilder::transaction_listener`](crate::ProducerBuilder::transaction_listener).
///
/// A cheap-to-clone handle. Plain sends go through
/// [`producer`](TransactionProducer::producer) (same group, same client
/// instance). Call [`shutdown`](TransactionProducer::shutdown) once when
/// done.
///
/// How a transaction ends:
///
/// | `execute` | END_TRANSACTION | then |
/// |---|---|---|
/// | `Commit` | commit | delivered to consumers |
/// | `Rollback` | rollback | dropped |
/// | `Unknown`, panic, timeout | unknown (the broker waits) | [`TransactionListener::check`] on a producer of the group, after `transactionTimeOut` (default 6 s), then every `transactionCheckInterval` (default 30 s on 5.x, 60 s on 4.9.x) |
/// | (process gone) | none | as `Unknown` |
pub struct TransactionProducer<A: Send + 'static = ()> {
    pub(crate) inner: Arc<TxInner<A>>,
}

pub(crate) struct TxInner<A: Send + 'static> {
    pub(crate) producer: Producer,
    pub(crate) listener: Arc<dyn TransactionListener<A>>,
    pub(crate) execute_timeout: Duration,
    pub(crate) checks: CheckPool,
}

impl<A: Send + 'static> Drop for TxInner<A> {
    fn drop(&mut self) {
        // The producer's own drop unregisters the group in the background.
        self.checks.abort();
    }
}

impl<A: Send + 'static> Clone for TransactionProducer<A> {
    fn clone(&self) -> Self {
        TransactionProducer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<A: Send + 'static> fmt::Debug for TransactionProducer<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransactionProducer")
            .field("producer", &self.inner.producer)
            .field("execute_timeout", &self.inner.execute_timeout)
            .finish_non_exhaustive()
    }
}

impl<A: Send + 'static> TransactionProducer<A> {
    /// The running producer: `producer` with its listener, execute timeout
    /// and started check pool.
    pub(crate) fn running(
        producer: Producer,
        listener: Arc<dyn TransactionListener<A>>,
        execute_timeout: Duration,
        checks: CheckPool,
    ) -> Self {
        TransactionProducer {
            inner: Arc::new(TxInner {
                producer,
                listener,
                execute_timeout,
                checks,
            }),
        }
    }

    /// The underlying producer, for plain sends in the same group.
    pub fn producer(&self) -> &Producer {
        &self.inner.producer
    }

    /// Sends `msg` as a half message, runs
    /// [`TransactionListener::execute`] with `arg`, and ends the
    /// transaction with its answer; returns the half message's send result
    /// and the local state.
    ///
    /// * The message gets `TRAN_MSG=true` and `PGROUP=<group>` (and a
    ///   `UNIQ_KEY`, the transaction's id); it is sent like
    ///   [`Producer::send`] (retries included).
    /// * `execute` runs only if the broker stored the half message with
    ///   `SendOk`; a stored-but-not-OK status (flush or slave problem) rolls
    ///   back without running it, as Java does.
    /// * A panicking or timed-out (`execute_timeout`) `execute` counts as
    ///   [`TransactionState::Unknown`]: the broker checks back.
    /// * END_TRANSACTION is oneway; if it cannot be written the broker
    ///   checks back too (logged, not an error).
    ///
    /// # Errors
    ///
    /// An [`Error::Send`] handing the message back, when the half message
    /// was not stored (`execute` did not run): as [`Producer::send`], and
    /// [`InvalidMessage::TransactionDelay`](crate::InvalidMessage::TransactionDelay)
    /// for a message with a delay.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after the half message was stored leaves the
    /// transaction to the check-back (the local transaction may or may not
    /// have run).
    pub async fn send_in_transaction(
        &self,
        mut msg: Message,
        arg: A,
    ) -> rmq_error::Result<(SendResult, TransactionState)> {
        if let Err(e) = check_no_delay(&msg) {
            return Err(Error::Send {
                topic: msg.topic.clone(),
                attempts: 0,
                source: Box::new(e.into()),
                unsent: Unsent::Message(Box::new(msg)),
            }
            .into());
        }
        let producer = &self.inner.producer;
        let group = producer.config().group();
        msg.set_property(property::TRAN_MSG, "true");
        msg.set_property(property::PGROUP, group);
        if msg.unique_key().is_none_or(str::is_empty) {
            // Through the proxy, a version-1 id, as the Java gRPC client's.
            let id = if producer.is_grpc() {
                next_message_id_v1()
            } else {
                next_uniq_id()
            };
            msg.set_property(property::UNIQ_KEY, id);
        }
        let sent = producer.send_detailed(msg.clone()).await?;

        let (state, remark) = if sent.status == SendStatus::SendOk {
            let (state, failure) = guarded(
                self.inner.execute_timeout,
                self.inner.listener.execute(&msg, arg),
            )
            .await;
            let remark = failure.map(|why| {
                tracing::error!(%group, msg_id = %sent.msg_id, "local transaction {why}; ending as unknown");
                format!("executeLocalTransactionBranch exception: {why}")
            });
            (state, remark)
        } else {
            tracing::warn!(%group, msg_id = %sent.msg_id, status = ?sent.status,
                "half message stored but not OK; rolling back");
            (TransactionState::Rollback, None)
        };
        if state != TransactionState::Commit {
            tracing::info!(%group, msg_id = %sent.msg_id, topic = %msg.topic, %state, "local transaction not committed");
        }
        self.end_transaction(&msg, &sent, state, remark).await;
        Ok((sent, state))
    }

    /// END_TRANSACTION for a half message this producer sent (Java
    /// `endTransaction`); failures are logged, the broker checks back.
    async fn end_transaction(
        &self,
        msg: &Message,
        sent: &SendResult,
        state: TransactionState,
        remark: Option<String>,
    ) {
        let producer = &self.inner.producer;
        if let Some(session) = producer.grpc_session() {
            end_over_grpc(session, &msg.topic, sent, state).await;
            return;
        }
        let broker = &sent.message_queue.broker_name;
        let topic = producer.namespace().wrap(&msg.topic);
        let header = match end_header(producer.config().group(), &topic, sent, state) {
            Ok(h) => h,
            Err(why) => {
                tracing::error!(msg_id = %sent.msg_id, "cannot end the transaction: {why}; the broker checks back");
                return;
            }
        };
        let Some(instance) = producer.client_instance() else {
            tracing::error!(msg_id = %sent.msg_id, "a transaction producer without a client instance");
            return;
        };
        let Some(addr) = instance.find_broker_addr_in_publish(broker) else {
            tracing::warn!(msg_id = %sent.msg_id, broker = %broker,
                "no address for the broker of the half message; the broker checks back");
            return;
        };
        let timeout = producer.config().send_timeout();
        if let Err(e) = instance
            .end_transaction_oneway(&addr, &header, remark, timeout)
            .await
        {
            tracing::warn!(msg_id = %sent.msg_id, broker = %addr, %state, error = %rmq_protocol::ErrorChain(&e),
                "END_TRANSACTION not sent; the broker checks back");
        }
    }

    /// Stops the producer: stops taking check-backs (queued ones are
    /// dropped: the broker asks again), waits up to the send timeout for
    /// checks that are running to answer, then shuts the producer down as
    /// [`Producer::shutdown`] does. Idempotent.
    ///
    /// # Errors
    ///
    /// What [`Producer::shutdown`] returns.
    pub async fn shutdown(&self) -> rmq_error::Result<()> {
        let grace = self.inner.producer.config().send_timeout();
        self.inner.checks.shutdown(grace).await;
        self.inner.producer.shutdown().await
    }
}

/// `EndTransaction` through the proxy for a half message this producer sent; `Unknown` sends
/// nothing (as Java's gRPC client: the proxy asks later). Failures are logged: the proxy asks.
async fn end_over_grpc(
    session: &rmq_grpc::Session,
    topic: &str,
    sent: &SendResult,
    state: TransactionState,
) {
    let commit = match state {
        TransactionState::Commit => true,
        TransactionState::Rollback => false,
        TransactionState::Unknown => return,
    };
    let Some(transaction_id) = sent.transaction_id.as_deref().filter(|t| !t.is_empty()) else {
        tracing::warn!(msg_id = %sent.msg_id, "the proxy returned no transaction id; it checks back");
        return;
    };
    if let Err(e) =
        crate::grpc::end_transaction(session, topic, &sent.msg_id, transaction_id, commit, false)
            .await
    {
        tracing::warn!(msg_id = %sent.msg_id, %state, error = %rmq_protocol::ErrorChain(&e),
            "EndTransaction not sent; the proxy checks back");
    }
}

/// The END_TRANSACTION header of a half message sent by this producer:
/// `tranStateTableOffset` = the send's queue offset, `commitLogOffset` from
/// its offset message id, `msgId` = its `UNIQ_KEY`.
fn end_header(
    group: &str,
    topic: &str,
    sent: &SendResult,
    state: TransactionState,
) -> std::result::Result<EndTransactionRequestHeader, String> {
    let (_, commit_log_offset) = parse_offset_msg_id(&sent.offset_msg_id)
        .map_err(|e| format!("the broker's offset message id is unusable ({e})"))?;
    Ok(EndTransactionRequestHeader {
        producer_group: group.to_owned(),
        tran_state_table_offset: sent.queue_offset,
        commit_log_offset,
        commit_or_rollback: state.commit_or_rollback(),
        from_transaction_check: Some(false),
        msg_id: sent.msg_id.clone(),
        transaction_id: sent.transaction_id.clone(),
        topic: Some(topic.to_owned()),
        broker_name: Some(sent.message_queue.broker_name.clone()),
    })
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use rmq_protocol::MessageQueue;
    use rmq_protocol::message::offset_msg_id;

    use super::*;

    #[test]
    fn end_header_of_a_send() {
        let store: SocketAddr = "127.0.0.1:10911".parse().unwrap();
        let sent = SendResult {
            status: SendStatus::SendOk,
            msg_id: "U1".into(),
            offset_msg_id: offset_msg_id(store, 4242),
            message_queue: MessageQueue::new("T", "broker-a", 1),
            queue_offset: 7,
            transaction_id: Some("U1".into()),
            region_id: "DefaultRegion".into(),
            trace_on: true,
            recall_handle: None,
        };
        let h = end_header("PG", "T", &sent, TransactionState::Rollback).unwrap();
        assert_eq!(h.producer_group, "PG");
        assert_eq!(h.tran_state_table_offset, 7);
        assert_eq!(h.commit_log_offset, 4242);
        assert_eq!(h.commit_or_rollback, 12);
        assert_eq!(h.from_transaction_check, Some(false));
        assert_eq!(h.msg_id, "U1");
        assert_eq!(h.transaction_id.as_deref(), Some("U1"));
        assert_eq!(h.topic.as_deref(), Some("T"));
        assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
        let bad = SendResult {
            offset_msg_id: "nope".into(),
            ..sent
        };
        assert!(end_header("PG", "T", &bad, TransactionState::Commit).is_err());
    }
}
