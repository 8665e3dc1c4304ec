//! Request-reply messages: the reply to a request (Java
//! `MessageUtil.createReplyMessage`), the reply topic of a cluster and the
//! `MSG_TYPE` that marks a reply.
//!
//! A requester sends a message with a correlation id, its own client id to
//! answer and a time to live ([`property::CORRELATION_ID`],
//! [`property::REPLY_TO_CLIENT`], [`property::TTL`]); the broker adds the
//! name of its cluster ([`property::CLUSTER`]). The replier sends the reply
//! to `<cluster>_REPLY_TOPIC` with SEND_REPLY_MESSAGE_V2, and the broker
//! pushes it to the requester's connection (PUSH_REPLY_MESSAGE_TO_CLIENT).

use bytes::Bytes;

use super::{Message, property};
use crate::error::{Error, Result};

/// The [`property::MSG_TYPE`] value of a reply (Java `MixAll.REPLY_MESSAGE_FLAG`).
pub const REPLY_MESSAGE_FLAG: &str = "reply";
/// The suffix of a cluster's reply topic (Java `MixAll.REPLY_TOPIC_POSTFIX`).
pub const REPLY_TOPIC_SUFFIX: &str = "REPLY_TOPIC";

/// The reply topic of `cluster`: `<cluster>_REPLY_TOPIC` (Java
/// `MixAll.getReplyTopic`); the broker creates it at start.
pub fn reply_topic(cluster: &str) -> String {
    format!("{cluster}_{REPLY_TOPIC_SUFFIX}")
}

/// Whether `msg` is a reply (`MSG_TYPE=reply`): a producer sends it with
/// SEND_REPLY_MESSAGE_V2.
pub fn is_reply(msg: &Message) -> bool {
    msg.property(property::MSG_TYPE) == Some(REPLY_MESSAGE_FLAG)
}

/// Whether `msg` is a request that expects a reply: it has a correlation
/// id and a client to reply to.
pub fn is_request(msg: &Message) -> bool {
    msg.properties.contains_key(property::CORRELATION_ID)
        && msg.properties.contains_key(property::REPLY_TO_CLIENT)
}

/// The reply to `request` (a received request message) with `body` (Java
/// `MessageUtil.createReplyMessage`): topic `<cluster>_REPLY_TOPIC` of the
/// request's [`property::CLUSTER`], `MSG_TYPE=reply`, and the request's
/// correlation id, client to reply to and time to live. Send it with the
/// producer: the broker pushes it to the requester.
///
/// ```
/// use rmq_protocol::Message;
/// use rmq_protocol::message::{create_reply_message, is_reply, property};
///
/// // What a consumer receives: the requester's properties and the broker's CLUSTER.
/// let request = Message::new("prices", "GET eur-usd")
///     .with_property(property::CORRELATION_ID, "4f6c3e2a")
///     .with_property(property::REPLY_TO_CLIENT, "10.0.0.5@4242")
///     .with_property(property::TTL, "3000")
///     .with_property(property::CLUSTER, "DefaultCluster");
/// let reply = create_reply_message(&request, "1.0842")?;
/// assert_eq!(reply.topic, "DefaultCluster_REPLY_TOPIC");
/// assert!(is_reply(&reply));
/// assert_eq!(reply.property(property::CORRELATION_ID), Some("4f6c3e2a"));
/// # Ok::<(), rmq_protocol::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidMessage`] when `request` is not a request (no
/// [`property::CORRELATION_ID`] or [`property::REPLY_TO_CLIENT`]) or has no
/// [`property::CLUSTER`] (a message that did not come from a broker).
pub fn create_reply_message(request: &Message, body: impl Into<Bytes>) -> Result<Message> {
    let missing = |name: &str, what: &str| {
        Error::InvalidMessage(format!(
            "cannot reply to a message of topic {:?}: it has no {name} property ({what})",
            request.topic
        ))
    };
    let cluster = request
        .property(property::CLUSTER)
        .ok_or_else(|| missing(property::CLUSTER, "the broker adds it to a stored message"))?;
    let correlation_id = request
        .property(property::CORRELATION_ID)
        .ok_or_else(|| missing(property::CORRELATION_ID, "it is not a request"))?;
    let reply_to = request
        .property(property::REPLY_TO_CLIENT)
        .ok_or_else(|| missing(property::REPLY_TO_CLIENT, "it is not a request"))?;
    let mut reply = Message::new(reply_topic(cluster), body)
        .with_property(property::MSG_TYPE, REPLY_MESSAGE_FLAG)
        .with_property(property::CORRELATION_ID, correlation_id)
        .with_property(property::REPLY_TO_CLIENT, reply_to);
    if let Some(ttl) = request.property(property::TTL) {
        reply.set_property(property::TTL, ttl);
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Message {
        Message::new("t", "q")
            .with_property(property::CORRELATION_ID, "c1")
            .with_property(property::REPLY_TO_CLIENT, "127.0.0.1@1")
            .with_property(property::TTL, "3000")
            .with_property(property::CLUSTER, "C")
            .with_tags("not copied")
    }

    #[test]
    fn reply_has_what_java_sets() {
        let r = create_reply_message(&request(), "a").unwrap();
        assert_eq!(r.topic, "C_REPLY_TOPIC");
        assert_eq!(&r.body[..], b"a");
        assert_eq!(r.property(property::MSG_TYPE), Some("reply"));
        assert_eq!(r.property(property::CORRELATION_ID), Some("c1"));
        assert_eq!(r.property(property::REPLY_TO_CLIENT), Some("127.0.0.1@1"));
        assert_eq!(r.property(property::TTL), Some("3000"));
        assert_eq!(r.properties.len(), 4);
        assert!(is_reply(&r));
        assert!(is_request(&request()));
        assert!(!is_reply(&request()));
        let mut no_ttl = request();
        no_ttl.remove_property(property::TTL);
        assert_eq!(
            create_reply_message(&no_ttl, "a")
                .unwrap()
                .property(property::TTL),
            None
        );
    }

    #[test]
    fn not_a_request() {
        for name in [
            property::CLUSTER,
            property::CORRELATION_ID,
            property::REPLY_TO_CLIENT,
        ] {
            let mut m = request();
            m.remove_property(name);
            let e = create_reply_message(&m, "a").unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
    }
}
