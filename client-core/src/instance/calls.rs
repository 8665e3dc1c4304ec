//! The broker call helpers of [`Inner`]: a failure that says the broker is
//! gone wakes the route refresh, a refusal is named with the call's scope.

use crate::auth::Credentials;
use crate::error::{Error, Result};

use super::{Inner, Scope};

impl Inner {
    /// `e` with what an auth refusal names filled in: the access key this
    /// client signs with, and the request's `topic` / `group` when known.
    /// Every refusal of a broker call passes through here.
    pub(crate) fn refusal(
        &self,
        e: impl Into<Error>,
        topic: Option<&str>,
        group: Option<&str>,
    ) -> Error {
        let signer = self.config.credentials().map(Credentials::access_key);
        e.into().in_context(signer, topic, group)
    }

    /// Wakes the route refresh when `e` says the broker at the other end
    /// is gone (connect failed, connection closed), so that the client
    /// learns a new master in about a second instead of at the next poll.
    pub(crate) fn broker_call_failed(&self, e: &rmq_remoting::Error) {
        if matches!(e, rmq_remoting::Error::Connect { .. }) || e.is_connection_closed() {
            self.route_wakeup.notify_one();
        }
    }

    /// `request` to the broker at `addr` ([`RemotingClient::invoke`]); a
    /// failure that says the broker is gone wakes the route refresh
    /// ([`broker_call_failed`](Self::broker_call_failed)).
    pub(crate) async fn invoke(
        &self,
        addr: &str,
        request: rmq_protocol::RemotingCommand,
        timeout: std::time::Duration,
    ) -> Result<rmq_protocol::RemotingCommand, rmq_remoting::Error> {
        self.observed(self.remoting.invoke(addr, request, timeout).await)
    }

    /// Like [`invoke`](Self::invoke) for a typed `header` and `body`, answering
    /// with the response still in its frame
    /// ([`RemotingClient::invoke_header_raw`](rmq_remoting::RemotingClient::invoke_header_raw):
    /// no ext-field map on the way out when no RPC hook needs one, none on
    /// the way back for a caller that reads a typed header).
    pub(crate) async fn invoke_header_raw<H: rmq_protocol::header::CommandHeader>(
        &self,
        addr: &str,
        code: rmq_protocol::RequestCode,
        header: &H,
        body: bytes::Bytes,
        timeout: std::time::Duration,
    ) -> Result<rmq_protocol::RawCommand, rmq_remoting::Error> {
        self.observed(
            self.remoting
                .invoke_header_raw(addr, code, header, body, timeout)
                .await,
        )
    }

    /// `result` of a broker call, after a failure that says the broker is
    /// gone woke the route refresh.
    fn observed<T>(
        &self,
        result: Result<T, rmq_remoting::Error>,
    ) -> Result<T, rmq_remoting::Error> {
        if let Err(e) = &result {
            self.broker_call_failed(e);
        }
        result
    }

    /// A broker call that must answer SUCCESS; a refusal is named with
    /// the scope's topic and group ([`refusal`](Self::refusal)).
    pub(crate) async fn call_ok(
        &self,
        addr: &str,
        request: rmq_protocol::RemotingCommand,
        timeout: std::time::Duration,
        scope: Scope<'_>,
    ) -> Result<rmq_protocol::RemotingCommand, Error> {
        self.remoting
            .invoke_expect(
                addr,
                request,
                timeout,
                &[rmq_protocol::ResponseCode::SUCCESS],
            )
            .await
            .map_err(|e| {
                self.broker_call_failed(&e);
                self.refusal(e, scope.topic, scope.group)
            })
    }

    /// [`call_ok`](Self::call_ok) with the config's request timeout.
    pub(crate) async fn call_ok_default(
        &self,
        addr: &str,
        request: rmq_protocol::RemotingCommand,
        scope: Scope<'_>,
    ) -> Result<rmq_protocol::RemotingCommand, Error> {
        let timeout = self.config.request_timeout();
        self.call_ok(addr, request, timeout, scope).await
    }
}
