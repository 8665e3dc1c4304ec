//! [`Producer::recall`]: recall a timer message before its delivery time
//! (RocketMQ 5.3.2+; Java `DefaultMQProducer.recallMessage`, gRPC
//! `Producer.recallMessage`), and [`RecallError`], the refusals it names.
//!
//! Over remoting the handle is decoded first (its broker is where the
//! recall goes), the broker's version is checked (5.3.2+), then
//! RECALL_MESSAGE; through the proxy, `RecallMessage` (the proxy checks
//! that the topic is of type `DELAY`). The broker's refusals come back as
//! the same [`RecallError`] on both transports.

use rmq_client_core::BrokerVersion;
use rmq_protocol::header::RecallMessageRequestHeader;
use rmq_protocol::message::RecallHandle;
use rmq_protocol::{ResponseCode, names};

use super::error::RecallError;
use crate::error::{Error, Result};
use crate::producer::{Backend, Producer};
use crate::validate::check_topic;

/// The first broker version with RECALL_MESSAGE (`V5_3_2`).
const RECALL_SINCE: BrokerVersion = BrokerVersion(477);

/// The refusal behind a remoting recall's error, or the error itself.
fn remoting_refusal(
    e: rmq_client_core::Error,
    topic: &str,
    handle: &RecallHandle,
    version: BrokerVersion,
) -> Error {
    if let rmq_client_core::Error::Broker { code, remark, .. } = &e {
        if *code == ResponseCode::REQUEST_CODE_NOT_SUPPORTED {
            return Error::Unsupported {
                feature: "recalling messages",
                broker: handle.broker_name.clone(),
                version,
                needs: RECALL_SINCE,
            };
        }
        if let Some(r) = remark
            .as_deref()
            .and_then(|r| RecallError::from_remark(r, topic, handle))
        {
            return r.into();
        }
    }
    e.into()
}

/// The refusal behind a proxy recall's error, or the error itself.
fn proxy_refusal(e: rmq_grpc::Error, topic: &str, handle: &RecallHandle) -> Error {
    if let rmq_grpc::Error::Proxy { code, message, .. } = &e {
        if *code == rmq_grpc::proto::Code::MessagePropertyConflictWithType as i32 {
            return RecallError::NotDelayTopic {
                topic: topic.to_owned(),
                remark: message.clone(),
            }
            .into();
        }
        if let Some(r) = RecallError::from_remark(message, topic, handle) {
            return r.into();
        }
    }
    e.into()
}

impl Producer {
    /// Recalls the timer message of `recall_handle` (its send result's
    /// [`recall_handle`](crate::SendResult::recall_handle)) sent to `topic`,
    /// before its delivery time (Java `DefaultMQProducer.recallMessage`):
    /// the broker then never delivers it. Any producer may recall with the
    /// handle, on either transport. Answers the message's id (its
    /// `UNIQ_KEY`). A broker answers a recall of a message that is not
    /// pending (recalled already, or unknown) with success too: only a
    /// passed delivery time is refused.
    ///
    /// Needs RocketMQ 5.3.2 or newer with `recallMessageEnable=true` in the
    /// broker's config; through the proxy, a topic of type `DELAY`.
    ///
    /// ```no_run
    /// # async fn demo(producer: rmq_producer::Producer) -> rmq_error::Result<()> {
    /// use std::time::Duration;
    /// use rmq_producer::Message;
    ///
    /// let msg = Message::new("reminders", "call back").deliver_after(Duration::from_secs(60));
    /// let sent = producer.send(msg).await?;
    /// if let Some(handle) = &sent.recall_handle {
    ///     producer.recall("reminders", handle).await?; // never delivered
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Recall`] with [`RecallError::InvalidHandle`] (before
    /// sending, or the broker's answer), [`RecallError::TopicMismatch`],
    /// [`RecallError::Delivered`] (too late), [`RecallError::Disabled`]
    /// (recall off on the broker), [`RecallError::NotDelayTopic`] (through
    /// the proxy); [`Error::Unsupported`] from a broker older than 5.3.2;
    /// [`crate::InvalidMessage::Topic`] for a bad topic; [`Error::Shutdown`];
    /// the call's error (no route, broker not found, timeout, ...).
    pub async fn recall(&self, topic: &str, recall_handle: &str) -> rmq_error::Result<String> {
        self.recall_detailed(topic, recall_handle)
            .await
            .map_err(Into::into)
    }

    async fn recall_detailed(&self, topic: &str, recall_handle: &str) -> Result<String> {
        self.check_running()?;
        // The handle names the topic as the broker stores it.
        let wrapped = self.namespace().wrap(topic);
        let topic = wrapped.as_str();
        check_topic(topic)?;
        if names::is_retry_topic(topic) || topic.starts_with(names::DLQ_TOPIC_PREFIX) {
            return Err(RecallError::InvalidHandle {
                handle: recall_handle.to_owned(),
                reason: format!(
                    "messages of {topic:?} (a retry or dead-letter topic) have no recall"
                ),
            }
            .into());
        }
        let handle =
            RecallHandle::decode(recall_handle).map_err(|e| RecallError::InvalidHandle {
                handle: recall_handle.to_owned(),
                reason: e.to_string(),
            })?;
        let sender = match &self.inner.backend {
            Backend::Grpc(g) => {
                return g
                    .session
                    .recall_message(topic, recall_handle)
                    .await
                    .map_err(|e| proxy_refusal(e, topic, &handle));
            }
            Backend::Remoting(sender) => sender,
        };
        if handle.topic != topic {
            return Err(RecallError::TopicMismatch {
                topic: topic.to_owned(),
                handle_topic: handle.topic,
            }
            .into());
        }
        let instance = &sender.instance;
        let addr = match instance.find_broker_addr_in_publish(&handle.broker_name) {
            Some(addr) => addr,
            None => {
                // Java `tryToFindTopicPublishInfo`: learn the topic's brokers.
                instance.refresh_route(topic).await?;
                instance
                    .find_broker_addr_in_publish(&handle.broker_name)
                    .ok_or_else(|| rmq_client_core::Error::BrokerNotFound {
                        broker_name: handle.broker_name.clone(),
                    })?
            }
        };
        let version = Box::pin(instance.broker_version(&addr)).await?;
        if version < RECALL_SINCE {
            return Err(Error::Unsupported {
                feature: "recalling messages",
                broker: handle.broker_name.clone(),
                version,
                needs: RECALL_SINCE,
            });
        }
        let header = RecallMessageRequestHeader {
            producer_group: self.config().group.clone(),
            topic: topic.to_owned(),
            recall_handle: recall_handle.to_owned(),
            broker_name: Some(handle.broker_name.clone()),
        };
        let addr = instance.config().send_addr(&addr);
        instance
            .recall_message(&addr, &header, self.config().send_timeout)
            .await
            .map_err(|e| remoting_refusal(e, topic, &handle, version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle() -> RecallHandle {
        RecallHandle {
            topic: "T".into(),
            broker_name: "broker-a".into(),
            timestamp: "1".into(),
            message_id: "ID".into(),
        }
    }

    fn broker(code: ResponseCode, remark: &str) -> rmq_client_core::Error {
        rmq_client_core::Error::Broker {
            addr: "a:1".into(),
            request: rmq_protocol::RequestCode::RECALL_MESSAGE,
            code,
            remark: Some(remark.into()),
        }
    }

    #[test]
    fn broker_refusals_are_typed() {
        let v = BrokerVersion(513);
        let cases = [
            (
                broker(
                    ResponseCode::ILLEGAL_OPERATION,
                    "recall failed, timestamp invalid",
                ),
                "Delivered",
            ),
            (
                broker(
                    ResponseCode::NO_PERMISSION,
                    "recall failed, operation is forbidden",
                ),
                "Disabled",
            ),
            (
                broker(
                    ResponseCode::ILLEGAL_OPERATION,
                    "recall failed, topic not match",
                ),
                "TopicMismatch",
            ),
            (
                broker(ResponseCode::ILLEGAL_OPERATION, "recall handle is invalid"),
                "InvalidHandle",
            ),
        ];
        for (e, want) in cases {
            match remoting_refusal(e, "T", &handle(), v) {
                Error::Recall(r) => assert!(format!("{r:?}").starts_with(want), "{r:?}"),
                other => panic!("{want}: {other:?}"),
            }
        }
        let old = remoting_refusal(
            broker(ResponseCode::REQUEST_CODE_NOT_SUPPORTED, "x"),
            "T",
            &handle(),
            BrokerVersion(407),
        );
        assert!(old.is_unsupported(), "{old:?}");
        assert!(old.to_string().contains("V5_3_2"), "{old}");
        let other = remoting_refusal(
            broker(
                ResponseCode::TOPIC_NOT_EXIST,
                "recall failed, the topic[T] not exist",
            ),
            "T",
            &handle(),
            v,
        );
        assert!(matches!(other, Error::Client(_)), "{other:?}");
    }

    #[test]
    fn proxy_refusals_are_typed() {
        let proxy = |code: rmq_grpc::proto::Code, message: &str| rmq_grpc::Error::Proxy {
            rpc: "RecallMessage",
            code: code as i32,
            message: message.into(),
        };
        use rmq_grpc::proto::Code;
        let e = proxy_refusal(
            proxy(
                Code::MessagePropertyConflictWithType,
                "expected type is NORMAL",
            ),
            "T",
            &handle(),
        );
        assert!(
            matches!(e, Error::Recall(RecallError::NotDelayTopic { .. })),
            "{e:?}"
        );
        let e = proxy_refusal(
            proxy(
                Code::InternalServerError,
                "recall failed, timestamp invalid",
            ),
            "T",
            &handle(),
        );
        assert!(
            matches!(e, Error::Recall(RecallError::Delivered { .. })),
            "{e:?}"
        );
        let e = proxy_refusal(proxy(Code::TopicNotFound, "no topic"), "T", &handle());
        assert!(matches!(e, Error::Grpc(_)), "{e:?}");
    }

    #[test]
    fn kinds() {
        use rmq_error::ErrorKind as K;
        let e: rmq_error::Error = Error::from(RecallError::Delivered { remark: "r".into() }).into();
        assert_eq!(e.kind(), K::Broker);
        assert!(!e.is_retryable());
        let e: rmq_error::Error = Error::from(RecallError::Disabled { remark: "r".into() }).into();
        assert_eq!(e.kind(), K::Unsupported);
        assert!(e.to_string().contains("recallMessageEnable"), "{e}");
        let e: rmq_error::Error = Error::from(RecallError::InvalidHandle {
            handle: "h".into(),
            reason: "bad".into(),
        })
        .into();
        assert_eq!(e.kind(), K::InvalidArgument);
    }
}
