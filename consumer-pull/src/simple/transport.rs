//! [`SimpleTransport`]: the seam between [`SimpleConsumer`](crate::SimpleConsumer)
//! and the wire.

use std::time::Duration;

use futures::future::BoxFuture;
use rmq_consumer_base::Expression;

use crate::error::Result;
use crate::simple::message::{ReceiptHandle, ReceivedMessage};

/// One receive: up to `max` messages of `topic` matching `filter`, hidden
/// for `invisible` once received; the transport may wait up to `wait` for
/// the first message (long polling).
#[derive(Debug, Clone, Copy)]
pub struct ReceiveRequest<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The filter.
    pub filter: &'a Expression,
    /// At most this many messages (1 to 32).
    pub max: usize,
    /// How long the received messages stay hidden from other receives.
    pub invisible: Duration,
    /// How long to wait for a first message.
    pub wait: Duration,
}

/// What a [`SimpleConsumer`](crate::SimpleConsumer) needs from the wire:
/// receive, ack, change the invisible time. The remoting transport talks to
/// the brokers (pop); another (the 5.x gRPC proxy) can stand in for it.
///
/// Every method must be cancel-safe in this sense: a dropped receive may
/// leave messages hidden at the server, never lose them (they come back
/// after their invisible time).
pub trait SimpleTransport: Send + Sync + 'static {
    /// Receives messages; empty when none came within `request.wait`.
    fn receive<'a>(
        &'a self,
        request: ReceiveRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<ReceivedMessage>>>;

    /// Acks the messages of `handles` (one request per server where the
    /// wire allows batches).
    fn ack<'a>(&'a self, handles: &'a [&'a ReceiptHandle]) -> BoxFuture<'a, Result<()>>;

    /// Hides the message of `handle` for `invisible` from now; answers its
    /// new handle.
    fn change_invisible<'a>(
        &'a self,
        handle: &'a ReceiptHandle,
        invisible: Duration,
    ) -> BoxFuture<'a, Result<ReceiptHandle>>;
}
