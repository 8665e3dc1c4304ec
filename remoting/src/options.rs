//! [`ClientOptions`]: the remoting client's configuration.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::{DEFAULT_MAX_FRAME_LEN, SerializeType};

use crate::hook::RpcHook;

/// Configuration of a [`RemotingClient`](crate::RemotingClient).
///
/// Built from [`ClientOptions::default`] with the `with_*` methods; every
/// field documents its default.
///
/// ```
/// use std::time::Duration;
/// use rmq_remoting::ClientOptions;
///
/// let options = ClientOptions::default()
///     .with_connect_timeout(Duration::from_secs(1))
///     .with_write_queue_capacity(256);
/// assert_eq!(options.connect_timeout(), Duration::from_secs(1));
/// ```
#[derive(Clone)]
pub struct ClientOptions {
    connect_timeout: Duration,
    max_frame_len: usize,
    write_queue_capacity: usize,
    serialize_type: SerializeType,
    tcp_nodelay: bool,
    rpc_hook: Option<Arc<dyn RpcHook>>,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsConnector>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(3),
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            write_queue_capacity: 1024,
            serialize_type: SerializeType::Json,
            tcp_nodelay: true,
            rpc_hook: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ClientOptions");
        #[cfg(feature = "tls")]
        d.field("tls", &self.tls);
        d.field("connect_timeout", &self.connect_timeout)
            .field("max_frame_len", &self.max_frame_len)
            .field("write_queue_capacity", &self.write_queue_capacity)
            .field("serialize_type", &self.serialize_type)
            .field("tcp_nodelay", &self.tcp_nodelay)
            .field("rpc_hook", &self.rpc_hook.as_ref().map(|_| "RpcHook"))
            .finish()
    }
}

impl ClientOptions {
    /// How long opening a TCP connection may take. It is also bounded by the
    /// timeout of the call that triggers it.
    ///
    /// Default: 3 s (Java `NettyClientConfig.connectTimeoutMillis`).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest frame (4-byte length prefix included) sent or accepted.
    /// A larger incoming frame closes the connection; a larger request fails
    /// with [`Error::Protocol`](crate::Error::Protocol).
    ///
    /// Default: 16 MiB (the broker's `com.rocketmq.remoting.frameMaxLength`).
    pub fn with_max_frame_len(mut self, max: usize) -> Self {
        self.max_frame_len = max;
        self
    }

    /// How many commands may wait for the socket per connection. When the
    /// queue is full, callers wait for room (within their timeout).
    /// A value of 0 is treated as 1.
    ///
    /// Default: 1024.
    pub fn with_write_queue_capacity(mut self, capacity: usize) -> Self {
        self.write_queue_capacity = capacity.max(1);
        self
    }

    /// The header serialization of every command this client sends
    /// (requests, and responses to broker requests).
    ///
    /// Default: [`SerializeType::Json`] (Java
    /// `RemotingCommand.serializeTypeConfigInThisServer`).
    pub fn with_serialize_type(mut self, serialize_type: SerializeType) -> Self {
        self.serialize_type = serialize_type;
        self
    }

    /// Whether to set `TCP_NODELAY` on new connections.
    ///
    /// Default: `true` (Java `NettyClientConfig` sets `TCP_NODELAY`).
    pub fn with_tcp_nodelay(mut self, nodelay: bool) -> Self {
        self.tcp_nodelay = nodelay;
        self
    }

    /// A hook run on every request and response (e.g. ACL signing).
    ///
    /// Default: none.
    pub fn with_rpc_hook(mut self, hook: Arc<dyn RpcHook>) -> Self {
        self.rpc_hook = Some(hook);
        self
    }

    /// Speaks TLS on every connection (Java `useTLS` /
    /// `-Dtls.enable=true`): the handshake runs after the TCP connect,
    /// within the connect timeout. Build the connector with
    /// [`TlsConfig::connector`](crate::TlsConfig::connector).
    ///
    /// Default: plaintext.
    #[cfg(feature = "tls")]
    pub fn with_tls(mut self, tls: crate::tls::TlsConnector) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The TLS connector, if connections use TLS.
    #[cfg(feature = "tls")]
    pub fn tls(&self) -> Option<&crate::tls::TlsConnector> {
        self.tls.as_ref()
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The maximum frame length.
    pub fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    /// The per-connection write queue capacity.
    pub fn write_queue_capacity(&self) -> usize {
        self.write_queue_capacity
    }

    /// The header serialization of sent commands.
    pub fn serialize_type(&self) -> SerializeType {
        self.serialize_type
    }

    /// Whether `TCP_NODELAY` is set.
    pub fn tcp_nodelay(&self) -> bool {
        self.tcp_nodelay
    }

    /// The RPC hook, if any.
    pub fn rpc_hook(&self) -> Option<&Arc<dyn RpcHook>> {
        self.rpc_hook.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let o = ClientOptions::default();
        assert_eq!(o.connect_timeout(), Duration::from_secs(3));
        assert_eq!(o.max_frame_len(), 16 * 1024 * 1024);
        assert_eq!(o.write_queue_capacity(), 1024);
        assert_eq!(o.serialize_type(), SerializeType::Json);
        assert!(o.tcp_nodelay());
        assert!(o.rpc_hook().is_none());
    }

    #[test]
    fn zero_capacity_is_one() {
        assert_eq!(
            ClientOptions::default()
                .with_write_queue_capacity(0)
                .write_queue_capacity(),
            1
        );
    }
}
