//! Seams: [`RequestHandler`] for broker → client requests and [`RpcHook`]
//! for cross-cutting request/response processing.

use std::future::Future;

pub use futures::future::BoxFuture;
use rmq_protocol::RemotingCommand;

/// Handles requests the peer sends to this client (e.g.
/// `NOTIFY_CONSUMER_IDS_CHANGED`, `GET_CONSUMER_RUNNING_INFO`).
///
/// Registered per request code with
/// [`RemotingClient::register_handler`](crate::RemotingClient::register_handler).
/// Each request runs in its own task, so a slow handler never blocks the
/// connection's reader; the task is cancelled when the client shuts down.
///
/// For a request without the oneway flag, a returned command is written back
/// as the response (its opaque and response flag are set by the client);
/// `None` sends nothing, like a Java processor returning `null`. For a oneway
/// request the returned value is dropped.
///
/// Closures `Fn(&str, RemotingCommand) -> impl Future<Output =
/// Option<RemotingCommand>>` implement this trait:
///
/// ```
/// use std::sync::Arc;
/// use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
/// use rmq_remoting::{ClientOptions, RemotingClient};
///
/// let client = RemotingClient::new(ClientOptions::default());
/// client.register_handler(
///     RequestCode::GET_CONSUMER_RUNNING_INFO,
///     Arc::new(|_addr: &str, req: RemotingCommand| async move {
///         Some(RemotingCommand::response_to(&req, ResponseCode::SUCCESS, None))
///     }),
/// );
/// ```
pub trait RequestHandler: Send + Sync + 'static {
    /// Processes one request received from `addr`.
    fn handle(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>>;
}

impl<F, Fut> RequestHandler for F
where
    F: Fn(&str, RemotingCommand) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<RemotingCommand>> + Send + 'static,
{
    fn handle(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        Box::pin(self(addr, request))
    }
}

/// A hook applied to every request this client sends and every response it
/// receives (Java `RPCHook`), e.g. ACL signing.
///
/// Both methods default to doing nothing. They run on the caller's task and
/// must not block.
pub trait RpcHook: Send + Sync + 'static {
    /// Called before `request` is sent to `addr` (invoke and oneway), after
    /// the client set its serialize type and before the opaque is assigned.
    fn before_request(&self, addr: &str, request: &mut RemotingCommand) {
        let _ = (addr, request);
    }

    /// Whether [`after_response`](RpcHook::after_response) wants to be
    /// called. `false` spares the client a copy of every request (kept only
    /// to be handed to `after_response`); signing hooks return `false`.
    ///
    /// Default: `true`.
    fn observes_responses(&self) -> bool {
        true
    }

    /// Called when `response` to `request` arrived from `addr`, before
    /// [`invoke`](crate::RemotingClient::invoke) returns it.
    fn after_response(
        &self,
        addr: &str,
        request: &RemotingCommand,
        response: &mut RemotingCommand,
    ) {
        let _ = (addr, request, response);
    }
}
