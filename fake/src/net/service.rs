//! Which server a connection belongs to, the [`Service`] trait a server's
//! requests go to, and one request as a service receives it.

use std::fmt;
use std::sync::Arc;

use rmq_protocol::RemotingCommand;

use super::{ConnShared, Responder};

/// Which server a connection belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ServerKind {
    NameServer,
    Broker(String),
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerKind::NameServer => f.write_str("namesrv"),
            ServerKind::Broker(name) => f.write_str(name),
        }
    }
}

/// What a server does with requests.
pub(crate) trait Service: Send + Sync + 'static {
    /// Handles one request. `Some` is answered at once (nothing for oneway
    /// requests); `None` means the service kept the responder.
    fn handle(&self, incoming: Incoming) -> Option<Handled>;

    /// The connection closed (any reason).
    fn connection_closed(&self, conn: &Arc<ConnShared>);
}

/// One request as a service receives it.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) conn: Arc<ConnShared>,
    pub(crate) cmd: RemotingCommand,
    pub(crate) responder: Responder,
}

impl Incoming {
    /// Answers with `response`.
    pub(crate) fn reply(self, response: RemotingCommand) -> Option<Handled> {
        Some(Handled {
            responder: self.responder,
            response,
        })
    }
}

/// An answer ready to go.
#[derive(Debug)]
pub(crate) struct Handled {
    pub(crate) responder: Responder,
    pub(crate) response: RemotingCommand,
}
