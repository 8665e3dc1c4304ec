//! The unary calls of [`Session`]: routes, sends, recalls, transactions,
//! assignments, receives, acks, invisibility, dead-letter forwarding,
//! heartbeats.

use std::sync::PoisonError;
use std::time::Duration;

use super::{Session, duration, resource};
use crate::error::{Error, Result, check_status};
use crate::proto;

/// The proxy's shortest long poll (its `grpcClientConsumerMinLongPollingTimeoutMillis`
/// default): a shorter one asked for is held this long.
const PROXY_MIN_LONG_POLLING: Duration = Duration::from_secs(5);

impl Session {
    /// `QueryRoute`: the queues of `topic`.
    ///
    /// # Errors
    ///
    /// The call's error; [`Error::Proxy`] `TOPIC_NOT_FOUND` for an unknown topic.
    pub async fn query_route(&self, topic: &str) -> Result<Vec<proto::MessageQueue>> {
        let req = proto::QueryRouteRequest {
            topic: Some(resource(&self.inner.config.namespace, topic)),
            endpoints: Some(self.inner.access_point()),
        };
        let resp = self
            .inner
            .call(
                "QueryRoute",
                |mut c, r| async move { c.query_route(r).await },
                req,
            )
            .await?;
        check_status("QueryRoute", resp.status.as_ref())?;
        Ok(resp.message_queues)
    }

    /// `SendMessage`: one entry per message, in order.
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`] when the whole request failed.
    /// A per-message failure is in its entry's status.
    pub async fn send_message(
        &self,
        messages: Vec<proto::Message>,
    ) -> Result<Vec<proto::SendResultEntry>> {
        let req = proto::SendMessageRequest { messages };
        let resp = self
            .inner
            .call(
                "SendMessage",
                |mut c, r| async move { c.send_message(r).await },
                req,
            )
            .await?;
        if resp.entries.is_empty() {
            check_status("SendMessage", resp.status.as_ref())?;
            return Err(Error::Protocol {
                rpc: "SendMessage",
                reason: "no result entry".into(),
            });
        }
        Ok(resp.entries)
    }

    /// `EndTransaction`: commits or rolls back a half message.
    ///
    /// # Errors
    ///
    /// The call's error.
    pub async fn end_transaction(&self, req: proto::EndTransactionRequest) -> Result<()> {
        let resp = self
            .inner
            .call(
                "EndTransaction",
                |mut c, r| async move { c.end_transaction(r).await },
                req,
            )
            .await?;
        check_status("EndTransaction", resp.status.as_ref())
    }

    /// `RecallMessage` (5.3.2+): recalls the timer message of
    /// `recall_handle` (a send result's) sent to `topic`; answers the
    /// message's id. The proxy checks that `topic` is of type `DELAY`.
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`]: `MESSAGE_PROPERTY_CONFLICT_WITH_TYPE`
    /// for a topic of another type; `INTERNAL_SERVER_ERROR` with the
    /// broker's words for a refusal (`recall handle is invalid`, `recall
    /// failed, timestamp invalid`, `recall failed, operation is forbidden`,
    /// `recall failed, topic not match`).
    pub async fn recall_message(&self, topic: &str, recall_handle: &str) -> Result<String> {
        let req = proto::RecallMessageRequest {
            topic: Some(resource(&self.inner.config.namespace, topic)),
            recall_handle: recall_handle.to_owned(),
        };
        let resp = self
            .inner
            .call(
                "RecallMessage",
                |mut c, r| async move { c.recall_message(r).await },
                req,
            )
            .await?;
        check_status("RecallMessage", resp.status.as_ref())?;
        Ok(resp.message_id)
    }

    /// Replaces the publishing / subscription settings and sends them on
    /// the telemetry stream (best effort: a reopened stream sends them too).
    pub async fn update_pub_sub(&self, pub_sub: proto::settings::PubSub) {
        *self
            .inner
            .pub_sub
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(pub_sub);
        let tx = self
            .inner
            .telemetry_tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(tx) = tx {
            let cmd = self.inner.settings_command();
            let sent = tokio::time::timeout(self.inner.config.request_timeout, tx.send(cmd)).await;
            if !matches!(sent, Ok(Ok(()))) {
                tracing::debug!("settings not sent on the telemetry stream; sent when it reopens");
            }
        }
    }

    /// `QueryAssignment`: the queues of `topic` the proxy lets this
    /// consumer of `group` receive from (the Java client asks before each
    /// round of receives).
    ///
    /// # Errors
    ///
    /// The call's error; [`Error::Proxy`] `TOPIC_NOT_FOUND` for an unknown topic.
    pub async fn query_assignment(
        &self,
        topic: &str,
        group: &str,
    ) -> Result<Vec<proto::Assignment>> {
        let ns = &self.inner.config.namespace;
        let req = proto::QueryAssignmentRequest {
            topic: Some(resource(ns, topic)),
            group: Some(resource(ns, group)),
            endpoints: Some(self.inner.access_point()),
        };
        let resp = self
            .inner
            .call(
                "QueryAssignment",
                |mut c, r| async move { c.query_assignment(r).await },
                req,
            )
            .await?;
        check_status("QueryAssignment", resp.status.as_ref())?;
        Ok(resp.assignments)
    }

    /// `ReceiveMessage` (server streaming): the messages of one long poll,
    /// collected until the stream ends. Not retried (a retry could only
    /// hide more messages); the deadline is the long-polling time (at least
    /// the proxy's minimum, 5 s) plus the request timeout.
    /// `MESSAGE_NOT_FOUND` is an empty answer.
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`] for another status.
    pub async fn receive_message(
        &self,
        mut req: proto::ReceiveMessageRequest,
        long_polling: Duration,
    ) -> Result<Vec<proto::Message>> {
        const RPC: &str = "ReceiveMessage";
        if self.inner.shutdown.is_cancelled() {
            return Err(Error::Shutdown);
        }
        let ns = &self.inner.config.namespace;
        if !ns.is_empty() {
            if let Some(g) = req.group.as_mut() {
                g.resource_namespace.clone_from(ns);
            }
        }
        req.long_polling_timeout = Some(duration(long_polling));
        // The proxy holds a poll at least its minimum (and refuses one whose
        // deadline leaves less than that), whatever was asked.
        let deadline = long_polling
            .max(PROXY_MIN_LONG_POLLING)
            .saturating_add(self.inner.config.request_timeout);
        let mut request = self.inner.request(req);
        request.set_timeout(deadline);
        let mut client = self.inner.client.clone();
        let collect = async move {
            let mut stream = client
                .receive_message(request)
                .await
                .map_err(|s| Error::rpc(RPC, &s))?
                .into_inner();
            let mut out = Vec::new();
            let mut status = None;
            while let Some(item) = stream.message().await.map_err(|s| Error::rpc(RPC, &s))? {
                match item.content {
                    Some(proto::receive_message_response::Content::Message(m)) => out.push(m),
                    Some(proto::receive_message_response::Content::Status(s)) => status = Some(s),
                    Some(proto::receive_message_response::Content::DeliveryTimestamp(_)) | None => {
                    }
                }
            }
            match status {
                Some(s) if s.code == proto::Code::MessageNotFound as i32 => {}
                Some(s) if out.is_empty() => check_status(RPC, Some(&s))?,
                _ => {}
            }
            Ok(out)
        };
        tokio::select! {
            () = self.inner.shutdown.cancelled() => Err(Error::Shutdown),
            r = tokio::time::timeout(deadline, collect) => r.map_err(|_| Error::Timeout { rpc: RPC, after: deadline })?,
        }
    }

    /// `AckMessage`: acks `(message id, receipt handle)` entries of `topic`
    /// for `group`; answers one result entry per ack (check each status).
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`] when the whole request failed.
    pub async fn ack_message(
        &self,
        topic: &str,
        group: &str,
        entries: Vec<(String, String)>,
    ) -> Result<Vec<proto::AckMessageResultEntry>> {
        let ns = &self.inner.config.namespace;
        let req = proto::AckMessageRequest {
            group: Some(resource(ns, group)),
            topic: Some(resource(ns, topic)),
            entries: entries
                .into_iter()
                .map(|(message_id, receipt_handle)| proto::AckMessageEntry {
                    message_id,
                    receipt_handle,
                    lite_topic: None,
                })
                .collect(),
        };
        let resp = self
            .inner
            .call(
                "AckMessage",
                |mut c, r| async move { c.ack_message(r).await },
                req,
            )
            .await?;
        if resp.entries.is_empty() {
            check_status("AckMessage", resp.status.as_ref())?;
        }
        Ok(resp.entries)
    }

    /// `ChangeInvisibleDuration`: hides the message of `receipt_handle`
    /// for `invisible` from now; answers the new receipt handle.
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`] (e.g. `INVALID_RECEIPT_HANDLE`
    /// when the message came back already).
    pub async fn change_invisible_duration(
        &self,
        topic: &str,
        group: &str,
        message_id: &str,
        receipt_handle: &str,
        invisible: Duration,
    ) -> Result<String> {
        let ns = &self.inner.config.namespace;
        let req = proto::ChangeInvisibleDurationRequest {
            group: Some(resource(ns, group)),
            topic: Some(resource(ns, topic)),
            receipt_handle: receipt_handle.to_owned(),
            invisible_duration: Some(duration(invisible)),
            message_id: message_id.to_owned(),
            lite_topic: None,
            suspend: None,
        };
        let resp = self
            .inner
            .call(
                "ChangeInvisibleDuration",
                |mut c, r| async move { c.change_invisible_duration(r).await },
                req,
            )
            .await?;
        check_status("ChangeInvisibleDuration", resp.status.as_ref())?;
        Ok(resp.receipt_handle)
    }

    /// `ForwardMessageToDeadLetterQueue`: moves a message delivered
    /// `delivery_attempt` times to the group's DLQ (the Java push consumer
    /// does so once the attempts are used up).
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`].
    pub async fn forward_to_dead_letter_queue(
        &self,
        topic: &str,
        group: &str,
        message_id: &str,
        receipt_handle: &str,
        delivery_attempt: i32,
        max_delivery_attempts: i32,
    ) -> Result<()> {
        let ns = &self.inner.config.namespace;
        let req = proto::ForwardMessageToDeadLetterQueueRequest {
            group: Some(resource(ns, group)),
            topic: Some(resource(ns, topic)),
            receipt_handle: receipt_handle.to_owned(),
            message_id: message_id.to_owned(),
            delivery_attempt,
            max_delivery_attempts,
            lite_topic: None,
        };
        let resp = self
            .inner
            .call(
                "ForwardMessageToDeadLetterQueue",
                |mut c, r| async move { c.forward_message_to_dead_letter_queue(r).await },
                req,
            )
            .await?;
        check_status("ForwardMessageToDeadLetterQueue", resp.status.as_ref())
    }

    /// One `Heartbeat` now (the session also sends them every heartbeat interval).
    ///
    /// # Errors
    ///
    /// The call's error.
    pub async fn heartbeat(&self) -> Result<()> {
        self.inner.heartbeat().await
    }
}
