//! Request-reply (Java `DefaultMQProducer.request`): [`Producer::request`]
//! sends a message that asks for a reply and waits for it;
//! [`Producer::request_with_callback`] does it in the background. The
//! replier answers with [`create_reply_message`](crate::create_reply_message)
//! and an ordinary send.
//!
//! The request carries a fresh `CORRELATION_ID`, this client's id as
//! `REPLY_TO_CLIENT` and the timeout as `TTL`; its waiter is registered in
//! the client instance before it is sent
//! ([`ClientInstance::expect_reply`](rmq_client_core::ClientInstance::expect_reply)),
//! and removed when the call ends however it ends, so a late reply is
//! dropped (with a debug log) and nothing is left behind. Remoting only:
//! the proxy's protocol has no reply push.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmq_protocol::message::property;
use rmq_protocol::{Message, MessageExt};
use tokio::time::Instant;

use crate::error::{Error, Result, Unsent};
use crate::producer::{Backend, Producer};

/// A random (version 4) UUID as text, like Java's
/// `CorrelationIdUtil.createCorrelationId`: unique per request.
fn correlation_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let hi = RandomState::new().hash_one((seq, nanos, std::process::id()));
    let lo = RandomState::new().hash_one((nanos, seq));
    let mut v = (u128::from(hi) << 64) | u128::from(lo);
    // Version 4 (random), variant 10.
    v = (v & !(0xF << 76)) | (0x4 << 76);
    v = (v & !(0x3 << 62)) | (0x2 << 62);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        v >> 96,
        (v >> 80) & 0xFFFF,
        (v >> 64) & 0xFFFF,
        (v >> 48) & 0xFFFF,
        v & 0xFFFF_FFFF_FFFF
    )
}

impl Producer {
    /// Sends `msg` as a request and waits up to `timeout` for its reply
    /// (Java `DefaultMQProducer.request(msg, timeout)`). A replier consuming
    /// the topic answers with
    /// [`create_reply_message`](crate::create_reply_message) and sends it
    /// with its producer; the broker pushes the reply to this client.
    ///
    /// The request gets the `CORRELATION_ID`, `REPLY_TO_CLIENT` (this
    /// client's id) and `TTL` (the timeout, ms) properties; the first
    /// request to a topic learns its route and heartbeats to its brokers
    /// first (a broker pushes replies only to clients it knows). Brokers
    /// 4.6 and newer (4.9.x and 5.x) do request-reply; the proxy's protocol
    /// does not.
    ///
    /// ```no_run
    /// # async fn demo(producer: rmq_producer::Producer) -> rmq_error::Result<()> {
    /// use std::time::Duration;
    /// use rmq_producer::Message;
    ///
    /// let reply = producer
    ///     .request(Message::new("prices", "GET eur-usd"), Duration::from_secs(3))
    ///     .await?;
    /// println!("{}", String::from_utf8_lossy(&reply.body));
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Dropping the future gives the request up: a reply that comes later
    /// is dropped.
    ///
    /// # Errors
    ///
    /// [`Error::RequestTimeout`] when no reply came in time; the send's
    /// [`Error::Send`] (handing the message back) when the request could
    /// not be sent; [`Error::TransportUnsupported`] through the proxy;
    /// [`Error::Shutdown`].
    pub async fn request(&self, msg: Message, timeout: Duration) -> rmq_error::Result<MessageExt> {
        self.request_detailed(msg, timeout)
            .await
            .map_err(Into::into)
    }

    /// [`request`](Self::request) in the background: returns at once and
    /// calls `callback` with the reply or the error (Java
    /// `request(msg, RequestCallback, timeout)`; it is called once, with the
    /// reply, not also after the send). Must be called within a Tokio
    /// runtime; [`shutdown`](Producer::shutdown) waits for these requests
    /// (up to the send timeout).
    ///
    /// ```no_run
    /// # fn demo(producer: rmq_producer::Producer) {
    /// use std::time::Duration;
    /// use rmq_producer::Message;
    ///
    /// producer.request_with_callback(
    ///     Message::new("prices", "GET eur-usd"),
    ///     Duration::from_secs(3),
    ///     |reply| match reply {
    ///         Ok(reply) => println!("{}", String::from_utf8_lossy(&reply.body)),
    ///         Err(e) => eprintln!("no reply: {e}"),
    ///     },
    /// );
    /// # }
    /// ```
    pub fn request_with_callback<F>(&self, msg: Message, timeout: Duration, callback: F)
    where
        F: FnOnce(rmq_error::Result<MessageExt>) + Send + 'static,
    {
        if self.is_shutdown() {
            callback(Err(Error::Shutdown.into()));
            return;
        }
        let producer = self.clone();
        self.inner.tasks.spawn(async move {
            let reply = producer.request_detailed(msg, timeout).await;
            callback(reply.map_err(Into::into));
        });
    }

    async fn request_detailed(&self, mut msg: Message, timeout: Duration) -> Result<MessageExt> {
        self.check_running()?;
        let deadline = Instant::now() + timeout;
        let sender = match &self.inner.backend {
            Backend::Remoting(sender) => sender,
            Backend::Grpc(_) => {
                return Err(Error::TransportUnsupported(
                    "request-reply needs the remoting transport (name servers): the proxy's \
                     protocol has no reply push"
                        .into(),
                ));
            }
        };
        let instance = &sender.instance;
        // The route below is the namespaced topic's.
        crate::prepare::enter_namespace(&mut msg, self.namespace());
        let id = correlation_id();
        msg.set_property(property::CORRELATION_ID, id.as_str());
        msg.set_property(property::REPLY_TO_CLIENT, instance.client_id());
        let ttl = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        msg.set_property(property::TTL, ttl.to_string());
        let pending = instance.expect_reply(&id)?;
        if instance.cached_route(&msg.topic).is_none() {
            // Java `prepareSendRequest`: learn the topic's brokers and tell
            // them about this client, so that they can push the reply.
            let topic = msg.topic.clone();
            if let Err(e) = sender.publish_queues(&topic, deadline).await {
                return Err(Error::Send {
                    topic,
                    attempts: 0,
                    source: Box::new(e),
                    unsent: Unsent::Message(Box::new(msg)),
                });
            }
            Box::pin(instance.send_heartbeat_now()).await;
        }
        let timed_out = || Error::RequestTimeout {
            timeout,
            correlation_id: id.clone(),
        };
        match tokio::time::timeout_at(deadline, Box::pin(self.send_detailed(msg))).await {
            Err(_) => return Err(timed_out()),
            Ok(Err(e)) => return Err(e),
            Ok(Ok(_)) => {}
        }
        match tokio::time::timeout_at(deadline, pending).await {
            Err(_) => Err(timed_out()),
            Ok(None) => Err(Error::Shutdown),
            Ok(Some(mut reply)) => {
                self.namespace().unwrap_in_place(&mut reply.message.topic);
                Ok(reply)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correlation_ids_are_uuids() {
        let a = correlation_id();
        let b = correlation_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{a}");
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{a}");
        let many: std::collections::HashSet<_> = (0..10_000).map(|_| correlation_id()).collect();
        assert_eq!(many.len(), 10_000);
    }
}
