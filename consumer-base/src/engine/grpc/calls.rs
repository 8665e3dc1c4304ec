//! [`ProxyCalls`]: the calls of an [`rmq_grpc::Session`] the engine makes,
//! as a trait so that its decisions can be tested against a scripted
//! proxy.

use std::future::Future;
use std::time::Duration;

use rmq_grpc::{Result, Session, proto};

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

    /// `ChangeInvisibleDuration`: the renewed receipt handle.
    fn change_invisible_duration(
        &self,
        topic: &str,
        group: &str,
        message_id: &str,
        receipt_handle: &str,
        invisible: Duration,
    ) -> impl Future<Output = Result<String>> + Send;

    /// `ForwardMessageToDeadLetterQueue`.
    fn forward_to_dead_letter_queue(
        &self,
        topic: &str,
        group: &str,
        message_id: &str,
        receipt_handle: &str,
        delivery_attempt: i32,
        max_delivery_attempts: i32,
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
        topic: &str,
        group: &str,
        message_id: &str,
        receipt_handle: &str,
        invisible: Duration,
    ) -> impl Future<Output = Result<String>> + Send {
        Session::change_invisible_duration(
            self,
            topic,
            group,
            message_id,
            receipt_handle,
            invisible,
        )
    }

    fn forward_to_dead_letter_queue(
        &self,
        topic: &str,
        group: &str,
        message_id: &str,
        receipt_handle: &str,
        delivery_attempt: i32,
        max_delivery_attempts: i32,
    ) -> impl Future<Output = Result<()>> + Send {
        Session::forward_to_dead_letter_queue(
            self,
            topic,
            group,
            message_id,
            receipt_handle,
            delivery_attempt,
            max_delivery_attempts,
        )
    }
}
