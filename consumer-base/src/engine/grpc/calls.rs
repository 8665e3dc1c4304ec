//! [`ProxyCalls`]: the calls of an [`rmq_grpc::Session`] the engine makes,
//! as a trait so that its decisions can be tested against a scripted
//! proxy.

use std::future::Future;
use std::time::Duration;

use rmq_grpc::{Result, Session, proto};

use super::handle::Named;

/// The proxy calls of the gRPC engine: what [`Session`] answers (see its
/// methods for the errors of each).
pub trait ProxyCalls: Send + Sync + 'static {
    /// The session's client id (the prefix of its receive attempt ids).
    fn client_id(&self) -> &str;

    /// `QueryRoute`: every queue of `topic`.
    fn query_route(
        &self,
        topic: &str,
    ) -> impl Future<Output = Result<Vec<proto::MessageQueue>>> + Send;

    /// `ReceiveMessage`: the messages of one long poll of at most
    /// `long_polling`.
    fn receive_message(
        &self,
        request: proto::ReceiveMessageRequest,
        long_polling: Duration,
    ) -> impl Future<Output = Result<Vec<proto::Message>>> + Send;

    /// `AckMessage` of `(message id, receipt handle)` entries of `topic`:
    /// one result entry per ack.
    fn ack_message(
        &self,
        topic: &str,
        group: &str,
        entries: Vec<(String, String)>,
    ) -> impl Future<Output = Result<Vec<proto::AckMessageResultEntry>>> + Send;

    /// `ChangeInvisibleDuration` of `msg`: the renewed receipt handle.
    fn change_invisible_duration(
        &self,
        group: &str,
        msg: Named<'_>,
        invisible: Duration,
    ) -> impl Future<Output = Result<String>> + Send;

    /// `ForwardMessageToDeadLetterQueue` of `msg`, delivered `attempt`
    /// times of at most `max_attempts`.
    fn forward_to_dead_letter_queue(
        &self,
        group: &str,
        msg: Named<'_>,
        attempt: i32,
        max_attempts: i32,
    ) -> impl Future<Output = Result<()>> + Send;
}

impl ProxyCalls for Session {
    fn client_id(&self) -> &str {
        Session::client_id(self)
    }

    fn query_route(
        &self,
        topic: &str,
    ) -> impl Future<Output = Result<Vec<proto::MessageQueue>>> + Send {
        Session::query_route(self, topic)
    }

    fn receive_message(
        &self,
        request: proto::ReceiveMessageRequest,
        long_polling: Duration,
    ) -> impl Future<Output = Result<Vec<proto::Message>>> + Send {
        Session::receive_message(self, request, long_polling)
    }

    fn ack_message(
        &self,
        topic: &str,
        group: &str,
        entries: Vec<(String, String)>,
    ) -> impl Future<Output = Result<Vec<proto::AckMessageResultEntry>>> + Send {
        Session::ack_message(self, topic, group, entries)
    }

    fn change_invisible_duration(
        &self,
        group: &str,
        msg: Named<'_>,
        invisible: Duration,
    ) -> impl Future<Output = Result<String>> + Send {
        let (topic, id, handle) = (msg.topic, msg.message_id, msg.receipt_handle);
        Session::change_invisible_duration(self, topic, group, id, handle, invisible)
    }

    fn forward_to_dead_letter_queue(
        &self,
        group: &str,
        msg: Named<'_>,
        attempt: i32,
        max_attempts: i32,
    ) -> impl Future<Output = Result<()>> + Send {
        let (topic, id, handle) = (msg.topic, msg.message_id, msg.receipt_handle);
        Session::forward_to_dead_letter_queue(self, topic, group, id, handle, attempt, max_attempts)
    }
}
