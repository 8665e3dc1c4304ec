//! The send path: queue choice, one attempt, and the retry loop of Java's
//! `sendDefaultImpl` (Java `DefaultMQProducerImpl`). No lock is held across an
//! await; every await is bounded by the send's deadline.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use futures::FutureExt;
use rmq_client_core::{ClientInstance, SendResult, SendStatus};
use rmq_protocol::message::property;
use rmq_protocol::{MessageQueue, ResponseCode};
use tokio::time::Instant;

use crate::config::ProducerConfig;
use crate::error::{Error, Result};
use crate::fault::{FaultTable, select_queue};
use crate::health::Health;
use crate::prepare::Prepared;
use crate::route::{PublishQueues, Routes};

/// Everything a send needs; shared by all handles of one producer.
#[derive(Debug)]
pub(crate) struct Sender {
    pub(crate) config: ProducerConfig,
    pub(crate) instance: ClientInstance,
    pub(crate) routes: Routes,
    pub(crate) faults: FaultTable,
    /// Round-robin position over publish queues (Java: a thread-local counter).
    pub(crate) counter: AtomicUsize,
    /// The message trace writer, when trace is on.
    pub(crate) trace: Option<rmq_client_core::trace::TraceDispatcher>,
    /// The producer's state and events (shared with its handle).
    pub(crate) health: Arc<Health>,
}

/// What a send loop did: attempts made and the outcome.
pub(crate) struct Outcome<T> {
    pub(crate) attempts: u32,
    pub(crate) result: Result<T>,
}

impl<T> Outcome<T> {
    /// Failed before any attempt.
    pub(crate) fn failed(e: Error) -> Self {
        Outcome {
            attempts: 0,
            result: Err(e),
        }
    }

    /// The result of a single attempt.
    pub(crate) fn once(result: Result<T>) -> Self {
        Outcome {
            attempts: 1,
            result,
        }
    }
}

impl Sender {
    /// Runs `fut` until `deadline`; running out is [`Error::Timeout`] with `last`.
    ///
    /// A combinator, not an `async fn`: an `async fn` would hold `fut` twice
    /// in its state (the argument and the awaited timeout).
    fn by_deadline<'a, T>(
        &'a self,
        deadline: Instant,
        last: Option<Error>,
        fut: impl Future<Output = Result<T>> + 'a,
    ) -> impl Future<Output = Result<T>> + 'a {
        tokio::time::timeout_at(deadline, fut).map(move |r| match r {
            Ok(r) => r,
            Err(_) => Err(self.timeout(last)),
        })
    }

    fn timeout(&self, last: Option<Error>) -> Error {
        Error::Timeout {
            timeout: self.config.send_timeout,
            last: last.map(Box::new),
        }
    }

    /// The topic's publish queues, within the deadline.
    pub(crate) async fn publish_queues(
        &self,
        topic: &str,
        deadline: Instant,
    ) -> Result<PublishQueues> {
        let lookup =
            self.routes
                .publish_queues(&self.instance, topic, self.config.default_topic_queue_nums);
        self.by_deadline(deadline, None, lookup).await
    }

    /// The deadline of a send starting now (the send timeout from now) and
    /// the topic's publish queues, found within it.
    async fn start_send(&self, topic: &str) -> Result<(Instant, PublishQueues)> {
        let deadline = Instant::now() + self.config.send_timeout;
        Ok((deadline, self.publish_queues(topic, deadline).await?))
    }

    /// The latency fault table, when latency fault tolerance is on.
    fn latency_faults(&self) -> Option<&FaultTable> {
        self.config
            .send_latency_fault_enable
            .then_some(&self.faults)
    }

    /// The master address of `queue`'s broker (refreshing the topic's route
    /// once when unknown, Java `sendKernelImpl`), through the VIP channel
    /// when configured.
    ///
    /// A message that asks for a broker feature ([`Prepared::requires`]: a
    /// delivery time, 5.0; a priority, 5.4; a lite topic, 5.5) goes only to
    /// a broker that reports that version or newer
    /// ([`ClientInstance::broker_version`]: learnt from its heartbeat
    /// answers); an older broker would store it as an ordinary message
    /// (and deliver a timer message at once), so that is
    /// [`Error::Unsupported`].
    async fn broker_addr(&self, queue: &MessageQueue, prepared: &Prepared) -> Result<String> {
        let addr = self.instance.master_addr(queue).await?;
        if let Some(needs) = prepared.requires {
            // Boxed: only such messages ask, and inline the call would
            // make every send's future kilobytes large.
            let version = Box::pin(self.instance.broker_version(&addr)).await?;
            if version < needs.since {
                return Err(Error::Unsupported {
                    feature: needs.feature,
                    broker: queue.broker_name.clone(),
                    version,
                    needs: needs.since,
                });
            }
        }
        Ok(self.instance.config().send_addr(&addr))
    }

    /// One request on `queue`, answered (or failed) by `deadline`.
    async fn attempt(
        &self,
        prepared: &Prepared,
        queue: &MessageQueue,
        deadline: Instant,
        last: Option<Error>,
    ) -> Result<SendResult> {
        let call = async {
            let addr = self.broker_addr(queue, prepared).await?;
            let timeout = deadline.saturating_duration_since(Instant::now());
            let header = prepared.header(
                &self.config.group,
                queue,
                self.config.default_topic_queue_nums,
            );
            let body = prepared.body.clone();
            let result = match &prepared.batch_ids {
                None if prepared.reply => {
                    Box::pin(self.send_reply(&addr, &queue.broker_name, header, body, timeout))
                        .await?
                }
                None => {
                    self.instance
                        .send_message(&addr, &queue.broker_name, header, body, timeout)
                        .await?
                }
                Some(ids) => {
                    self.instance
                        .send_batch(&addr, &queue.broker_name, header, body, ids, timeout)
                        .await?
                }
            };
            Ok(result)
        };
        self.by_deadline(deadline, last, call).await
    }

    /// A reply (SEND_REPLY_MESSAGE_V2). The broker's SYSTEM_ERROR `push
    /// reply message fail` (the requester is not connected to it) is
    /// [`Error::ReplyNotDelivered`], not retried: the broker stored the
    /// reply, and another attempt would store it again.
    async fn send_reply(
        &self,
        addr: &str,
        broker_name: &str,
        header: rmq_protocol::header::SendMessageRequestHeaderV2,
        body: bytes::Bytes,
        timeout: std::time::Duration,
    ) -> Result<SendResult> {
        let msg_id = header
            .properties
            .as_deref()
            .and_then(|p| rmq_protocol::message::find_property(p, property::UNIQ_KEY))
            .unwrap_or_default()
            .to_owned();
        let requester = header
            .properties
            .as_deref()
            .and_then(|p| rmq_protocol::message::find_property(p, property::REPLY_TO_CLIENT))
            .unwrap_or_default()
            .to_owned();
        let sent = self
            .instance
            .send_reply_message(addr, broker_name, header, body, msg_id, timeout)
            .await;
        match sent {
            Err(rmq_client_core::Error::Broker {
                code: ResponseCode::SYSTEM_ERROR,
                remark: Some(remark),
                ..
            }) if remark.contains("push reply message") => {
                Err(Error::ReplyNotDelivered { requester, remark })
            }
            other => Ok(other?),
        }
    }

    /// Java `sendDefaultImpl` in sync mode: up to `1 + retries` attempts
    /// within the send timeout, each on a queue chosen round-robin that
    /// avoids the brokers that failed so far (and, with latency fault
    /// tolerance, brokers recently slow or failing).
    ///
    /// Retried: transport errors and timeouts, the broker codes Java
    /// retries, and (with `retry_another_broker_when_not_store_ok`) a
    /// stored-but-not-OK status. A non-retryable error ends the loop.
    pub(crate) async fn send_with_retries(
        &self,
        prepared: &Prepared,
        retries: u32,
    ) -> Outcome<SendResult> {
        let (deadline, publish) = match self.start_send(&prepared.topic).await {
            Ok(started) => started,
            Err(e) => return Outcome::failed(e),
        };
        let faults = self.latency_faults();
        if let Some(f) = faults {
            f.forget_gone(Instant::now(), |b| {
                self.instance.find_broker_addr_in_publish(b).is_some()
            });
        }
        let total = retries.saturating_add(1);
        let mut failed: Vec<String> = Vec::new();
        let mut last_err: Option<Error> = None;
        let mut last_stored: Option<SendResult> = None;
        let mut attempts = 0u32;
        while attempts < total {
            let now = Instant::now();
            if now >= deadline {
                let result = match last_stored {
                    Some(r) => Ok(r),
                    None => Err(self.timeout(last_err)),
                };
                return Outcome { attempts, result };
            }
            let Some(queue) = select_queue(publish.queues(), &self.counter, &failed, faults, now)
            else {
                return Outcome {
                    attempts,
                    result: Err(Error::NoWritableQueue {
                        topic: prepared.topic.clone(),
                    }),
                };
            };
            attempts += 1;
            let started = Instant::now();
            let result = self
                .attempt(prepared, queue, deadline, last_err.take())
                .await;
            let latency = started.elapsed();
            let broker = &queue.broker_name;
            match result {
                Ok(sent) => {
                    self.faults.update(broker, latency, false, Instant::now());
                    let retry = sent.status != SendStatus::SendOk
                        && self.config.retry_another_broker_when_not_store_ok
                        && attempts < total;
                    if !retry {
                        return Outcome {
                            attempts,
                            result: Ok(sent),
                        };
                    }
                    tracing::warn!(
                        topic = %prepared.topic, broker = %broker, status = ?sent.status,
                        "stored but not OK; sending again to another broker"
                    );
                    failed.push(broker.clone());
                    last_stored = Some(sent);
                }
                Err(e) if e.is_retryable() => {
                    self.faults.update(broker, latency, true, Instant::now());
                    if let Error::Timeout { last, .. } = e {
                        // The deadline passed during the attempt: give up now.
                        let result = match last_stored {
                            Some(r) => Ok(r),
                            None => Err(self.timeout(last.map(|b| *b))),
                        };
                        return Outcome { attempts, result };
                    }
                    tracing::warn!(
                        topic = %prepared.topic, broker = %broker, queue_id = queue.queue_id,
                        attempt = attempts, error = %rmq_protocol::ErrorChain(&e), "send attempt failed"
                    );
                    failed.push(broker.clone());
                    last_err = Some(e);
                }
                Err(e) => {
                    let result = match last_stored {
                        Some(r) => Ok(r),
                        None => Err(e),
                    };
                    return Outcome { attempts, result };
                }
            }
        }
        let result = match (last_stored, last_err) {
            (Some(r), _) => Ok(r),
            (None, Some(e)) => Err(e),
            (None, None) => Err(self.timeout(None)),
        };
        Outcome { attempts, result }
    }

    /// One attempt on a queue the caller chose (`send_to_queue`,
    /// `send_with_selector`): no retry, as in Java.
    pub(crate) async fn send_once(
        &self,
        prepared: &Prepared,
        queue: &MessageQueue,
        deadline: Instant,
    ) -> Result<SendResult> {
        let started = Instant::now();
        let result = self.attempt(prepared, queue, deadline, None).await;
        self.record(&queue.broker_name, started, &result);
        result
    }

    /// A oneway send: one attempt on a round-robin queue, no answer awaited.
    pub(crate) async fn send_oneway(&self, prepared: &Prepared) -> Outcome<()> {
        let (deadline, publish) = match self.start_send(&prepared.topic).await {
            Ok(started) => started,
            Err(e) => return Outcome::failed(e),
        };
        let faults = self.latency_faults();
        let Some(queue) =
            select_queue(publish.queues(), &self.counter, &[], faults, Instant::now())
        else {
            return Outcome::failed(Error::NoWritableQueue {
                topic: prepared.topic.clone(),
            });
        };
        let started = Instant::now();
        let call = async {
            let addr = self.broker_addr(queue, prepared).await?;
            let header = prepared.header(
                &self.config.group,
                queue,
                self.config.default_topic_queue_nums,
            );
            let timeout = deadline.saturating_duration_since(Instant::now());
            let body = prepared.body.clone();
            if prepared.reply {
                self.instance
                    .send_reply_message_oneway(&addr, header, body, timeout)
                    .await?;
            } else {
                self.instance
                    .send_message_oneway(&addr, header, body, timeout)
                    .await?;
            }
            Ok(())
        };
        let result = self.by_deadline(deadline, None, call).await;
        self.record(&queue.broker_name, started, &result);
        Outcome {
            attempts: 1,
            result,
        }
    }

    /// Records an attempt's latency; retryable failures isolate the broker.
    fn record<T>(&self, broker: &str, started: Instant, result: &Result<T>) {
        let failed = matches!(result, Err(e) if e.is_retryable());
        self.faults
            .update(broker, started.elapsed(), failed, Instant::now());
    }
}
