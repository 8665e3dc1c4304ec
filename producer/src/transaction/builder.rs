//! [`TransactionProducerBuilder`]: a [`ProducerBuilder`] plus a
//! [`TransactionListener`] and the check-back settings.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rmq_client_core::{ClientInstance, ProducerHandle as _, TransactionCheckRequest};
use rmq_grpc::ServerCommand;
use rmq_protocol::header::{CheckTransactionStateRequestHeader, EndTransactionRequestHeader};
use rmq_protocol::namespace::Namespace;
use tokio::sync::mpsc;

use super::check::{ANSWER_TIMEOUT, Answer, CheckOptions, CheckPool};
use super::listener::TransactionListener;
use super::producer::TransactionProducer;
use crate::builder::ProducerBuilder;
use crate::error::{Error, Result};
use crate::validate::check_topic;

/// Default of [`TransactionProducerBuilder::check_concurrency`] (Java
/// `checkThreadPoolMaxSize`).
pub const DEFAULT_CHECK_CONCURRENCY: usize = 1;
/// Default of [`TransactionProducerBuilder::check_queue_capacity`] (Java
/// `checkRequestHoldMax`).
pub const DEFAULT_CHECK_QUEUE_CAPACITY: usize = 2000;
/// Default of [`TransactionProducerBuilder::check_timeout`] and
/// [`TransactionProducerBuilder::execute_timeout`].
pub const DEFAULT_LISTENER_TIMEOUT: Duration = Duration::from_secs(60);

impl ProducerBuilder {
    /// Makes this a transactional producer (Java `TransactionMQProducer`)
    /// with `listener` for the local transactions and the broker's
    /// check-backs. Call it after the producer settings; the returned
    /// builder has the transaction settings and starts a
    /// [`TransactionProducer`].
    ///
    /// ```no_run
    /// # async fn demo() -> rmq_error::Result<()> {
    /// use rmq_producer::{Message, Producer, TransactionState, transaction_fn};
    ///
    /// let producer = Producer::builder()
    ///     .group("orders-tx")
    ///     .transaction_listener(transaction_fn(
    ///         |_msg, order_id: u64| Box::pin(async move {
    ///             let _ = order_id; // write the order ...
    ///             TransactionState::Commit
    ///         }),
    ///         |_msg| Box::pin(async { TransactionState::Unknown }), // look it up ...
    ///     ))
    ///     .topics(["orders"]) // take over check-backs of orders at once
    ///     .start()
    ///     .await?;
    /// let (sent, state) = producer
    ///     .send_in_transaction(Message::new("orders", "created").with_keys(["42"]), 42)
    ///     .await?;
    /// println!("{} {state}", sent.msg_id);
    /// producer.shutdown().await?;
    /// # Ok(()) }
    /// ```
    pub fn transaction_listener<A, L>(self, listener: L) -> TransactionProducerBuilder<A>
    where
        A: Send + 'static,
        L: TransactionListener<A>,
    {
        TransactionProducerBuilder {
            producer: self,
            listener: Arc::new(listener),
            topics: Vec::new(),
            check: CheckOptions {
                concurrency: DEFAULT_CHECK_CONCURRENCY,
                queue_capacity: DEFAULT_CHECK_QUEUE_CAPACITY,
                timeout: DEFAULT_LISTENER_TIMEOUT,
            },
            execute_timeout: DEFAULT_LISTENER_TIMEOUT,
        }
    }
}

/// Builds and starts a [`TransactionProducer`]; made by
/// [`ProducerBuilder::transaction_listener`].
#[must_use = "a builder does nothing until `start` is called"]
pub struct TransactionProducerBuilder<A: Send + 'static = ()> {
    producer: ProducerBuilder,
    listener: Arc<dyn TransactionListener<A>>,
    topics: Vec<String>,
    check: CheckOptions,
    execute_timeout: Duration,
}

impl<A: Send + 'static> fmt::Debug for TransactionProducerBuilder<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransactionProducerBuilder")
            .field("producer", &self.producer)
            .field("topics", &self.topics)
            .field("check", &self.check)
            .field("execute_timeout", &self.execute_timeout)
            .finish_non_exhaustive()
    }
}

impl<A: Send + 'static> TransactionProducerBuilder<A> {
    /// Topics whose brokers this producer heartbeats to from the start
    /// (their routes are looked up in `start`), so that it takes part in
    /// the check-backs of its group at once — e.g. of half messages a
    /// crashed member of the group left — rather than only after its first
    /// send. A broker checks back only producers that heartbeat to it.
    /// Through a proxy ([`ProducerBuilder::endpoint`]) these are the topics
    /// the session declares: the proxy hands the orphaned transactions of a
    /// topic only to producers that declared it, so list every topic of
    /// [`send_in_transaction`](TransactionProducer::send_in_transaction).
    /// Default: none. Repeated calls add topics.
    pub fn topics<I, S>(mut self, topics: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.topics.extend(topics.into_iter().map(Into::into));
        self
    }

    /// Checks run at once (Java `checkThreadPoolMaxSize`). Default: 1.
    pub fn check_concurrency(mut self, checks: usize) -> Self {
        self.check.concurrency = checks;
        self
    }

    /// Checks that may wait for a free slot (Java `checkRequestHoldMax`);
    /// more are dropped with a warning (the broker asks again after its
    /// check interval). Default: 2000.
    pub fn check_queue_capacity(mut self, checks: usize) -> Self {
        self.check.queue_capacity = checks;
        self
    }

    /// Longest a [`TransactionListener::check`] may run; then it is dropped
    /// and answered as `Unknown` (Java has no limit). Default: 60 s.
    pub fn check_timeout(mut self, timeout: Duration) -> Self {
        self.check.timeout = timeout;
        self
    }

    /// Longest a [`TransactionListener::execute`] may run; then it is
    /// dropped at its next `.await` and counts as `Unknown`, so the broker
    /// checks back (Java has no limit). Default: 60 s.
    pub fn execute_timeout(mut self, timeout: Duration) -> Self {
        self.execute_timeout = timeout;
        self
    }

    fn validate(&self) -> Result<()> {
        if self.check.concurrency == 0 {
            return Err(Error::Config("check_concurrency must be at least 1".into()));
        }
        if self.check.queue_capacity == 0 {
            return Err(Error::Config(
                "check_queue_capacity must be at least 1".into(),
            ));
        }
        if self.check.timeout.is_zero() || self.execute_timeout.is_zero() {
            return Err(Error::Config(
                "check_timeout and execute_timeout must be more than zero".into(),
            ));
        }
        for topic in &self.topics {
            check_topic(topic).map_err(|e| Error::Config(format!("topics: {e}")))?;
        }
        Ok(())
    }

    /// Validates the settings, joins (or starts) the client instance, looks
    /// up the routes of the [`topics`](Self::topics), starts the check pool,
    /// registers the group with its check handler (which heartbeats to the
    /// brokers of those routes at once) and returns the running producer.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an invalid setting, [`Error::Client`] when the
    /// client configuration is invalid, the group is already registered in
    /// this client instance, or a topic of [`topics`](Self::topics) has no
    /// route ([`rmq_client_core::Error::RouteNotFound`]: create the topic
    /// first).
    pub async fn start(self) -> rmq_error::Result<TransactionProducer<A>> {
        self.start_detailed().await.map_err(Into::into)
    }

    /// [`start`](Self::start) with this crate's error.
    async fn start_detailed(self) -> Result<TransactionProducer<A>> {
        self.validate()?;
        if self.producer.has_endpoint() {
            return self.start_grpc().await;
        }
        let (config, instance) = self.producer.join_instance()?;
        let group = config.group.clone();
        let unreachable = match crate::builder::probe_name_servers(&config, &instance).await {
            Ok(unreachable) => unreachable,
            Err(e) => {
                instance.release().await;
                return Err(e);
            }
        };
        for topic in &self.topics {
            if let Err(e) = instance.route(&config.namespace.wrap(topic)).await {
                instance.release().await;
                return Err(e.into());
            }
        }
        let (queue, checks) = CheckPool::start(
            &group,
            &config.namespace,
            Arc::clone(&self.listener),
            self.check,
            end_transaction_sender(instance.clone()),
        );
        if let Err(e) = instance.register_producer_handle(&group, queue).await {
            checks.abort();
            instance.release().await;
            return Err(e.into());
        }
        let producer = ProducerBuilder::running(config, instance, unreachable);
        tracing::info!(%group, topics = ?self.topics, "transactional producer started");
        Ok(TransactionProducer::running(
            producer,
            self.listener,
            self.execute_timeout,
            checks,
        ))
    }
}

impl<A: Send + 'static> TransactionProducerBuilder<A> {
    /// Through the proxy: the session declares the [`topics`](Self::topics), whose orphaned
    /// transactions the proxy hands to this producer (`RecoverOrphanedTransactionCommand`); they
    /// go through the same check pool as the broker's check-backs, answered with
    /// `EndTransaction` (source `SOURCE_SERVER_CHECK`).
    async fn start_grpc(self) -> Result<TransactionProducer<A>> {
        let group = self.producer.group_name().to_owned();
        let (commands_tx, mut commands) = mpsc::channel(self.check.queue_capacity.max(1));
        let producer = self.producer.start_grpc(&self.topics, commands_tx).await?;
        let Some(session) = producer.grpc_session().cloned() else {
            return Err(Error::Config("a proxy producer without a session".into()));
        };
        let (queue, checks) = CheckPool::start(
            &group,
            &Namespace::none(),
            Arc::clone(&self.listener),
            self.check,
            grpc_answer(session),
        );
        checks.spawn_feeder(async move {
            while let Some(command) = commands.recv().await {
                let ServerCommand::RecoverOrphanedTransaction(c) = command else {
                    continue;
                };
                match orphan_check(c) {
                    Ok(request) => queue.check_transaction_state(request),
                    Err(why) => {
                        tracing::warn!("orphaned transaction command not usable: {why}");
                    }
                }
            }
        });
        tracing::info!(%group, topics = ?self.topics, "transactional producer started (gRPC)");
        Ok(TransactionProducer::running(
            producer,
            self.listener,
            self.execute_timeout,
            checks,
        ))
    }
}

/// An orphaned transaction of the proxy as a check request: the half message, its topic, id
/// and transaction id (no broker address: the answer goes back through the proxy).
fn orphan_check(
    c: rmq_grpc::proto::RecoverOrphanedTransactionCommand,
) -> std::result::Result<TransactionCheckRequest, String> {
    let msg = c.message.ok_or("no message")?;
    let message = rmq_grpc::half_message_ext(msg, "").map_err(|e| e.to_string())?;
    if c.transaction_id.is_empty() {
        return Err(format!("message {}: no transaction id", message.msg_id));
    }
    let header = CheckTransactionStateRequestHeader {
        topic: Some(message.message.topic.clone()),
        msg_id: Some(message.msg_id.clone()),
        transaction_id: Some(c.transaction_id),
        ..CheckTransactionStateRequestHeader::default()
    };
    Ok(TransactionCheckRequest {
        broker_addr: String::new(),
        header,
        message,
    })
}

/// The check answers of a proxy producer go out as `EndTransaction` through its session;
/// `Unknown` sends nothing (the proxy asks again). Failures are logged.
fn grpc_answer(session: rmq_grpc::Session) -> Answer {
    Arc::new(move |_addr, header, _remark| {
        let session = session.clone();
        Box::pin(async move {
            let commit = match header.commit_or_rollback {
                EndTransactionRequestHeader::COMMIT => true,
                EndTransactionRequestHeader::ROLLBACK => false,
                _ => return,
            };
            let (Some(topic), Some(transaction_id)) = (&header.topic, &header.transaction_id)
            else {
                return;
            };
            if let Err(e) = crate::grpc::end_transaction(
                &session,
                topic,
                &header.msg_id,
                transaction_id,
                commit,
                true,
            )
            .await
            {
                tracing::warn!(msg_id = %header.msg_id, error = %rmq_protocol::ErrorChain(&e),
                    "cannot answer an orphaned transaction (the proxy asks again later)");
            }
        })
    })
}

/// The check answers go out through the client instance (END_TRANSACTION,
/// oneway); failures are logged.
fn end_transaction_sender(instance: ClientInstance) -> Answer {
    Arc::new(move |addr, header, remark| {
        let instance = instance.clone();
        Box::pin(async move {
            if let Err(e) = instance
                .end_transaction_oneway(&addr, &header, remark, ANSWER_TIMEOUT)
                .await
            {
                tracing::warn!(broker = %addr, msg_id = %header.msg_id, error = %rmq_protocol::ErrorChain(&e),
                    "cannot answer a transaction check (the broker asks again later)");
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transaction::listener::{TransactionState, transaction_fn};

    fn builder() -> TransactionProducerBuilder<()> {
        ProducerBuilder::default()
            .group("g")
            .transaction_listener(transaction_fn(
                |_, ()| Box::pin(async { TransactionState::Commit }),
                |_| Box::pin(async { TransactionState::Commit }),
            ))
    }

    #[test]
    fn setters_and_defaults() {
        let b = builder();
        assert_eq!(b.check.concurrency, 1);
        assert_eq!(b.check.queue_capacity, 2000);
        assert_eq!(b.check.timeout, Duration::from_secs(60));
        assert_eq!(b.execute_timeout, Duration::from_secs(60));
        let b = b
            .topics(["a", "b"])
            .topics(vec![String::from("c")])
            .check_concurrency(4)
            .check_queue_capacity(10)
            .check_timeout(Duration::from_secs(1))
            .execute_timeout(Duration::from_secs(2));
        assert_eq!(b.topics, ["a", "b", "c"]);
        assert_eq!(b.check.concurrency, 4);
        assert_eq!(b.check.queue_capacity, 10);
        assert_eq!(b.check.timeout, Duration::from_secs(1));
        assert_eq!(b.execute_timeout, Duration::from_secs(2));
        assert!(format!("{b:?}").contains("topics"));
    }

    #[tokio::test]
    async fn start_rejects_bad_settings_before_connecting() {
        for b in [
            builder().check_concurrency(0),
            builder().check_queue_capacity(0),
            builder().check_timeout(Duration::ZERO),
            builder().execute_timeout(Duration::ZERO),
            builder().topics(["bad topic"]),
            ProducerBuilder::default().transaction_listener(transaction_fn(
                |_, ()| Box::pin(async { TransactionState::Commit }),
                |_| Box::pin(async { TransactionState::Commit }),
            )),
        ] {
            let e = b.start().await.unwrap_err();
            assert!(matches!(e.downcast_ref(), Some(Error::Config(_))), "{e}");
        }
    }
}
