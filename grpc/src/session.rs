//! [`Session`]: one client's connection to the proxy: the channel, the
//! `Telemetry` stream (settings sync, server commands), heartbeats, and the
//! unary calls with deadlines and retries.
//!
//! The unary calls are in `calls`, the request metadata and the retrying call
//! in `rpc`, the telemetry stream in `telemetry`, the `Settings` and resource
//! builders in `settings`, the protobuf time conversions in `convert`.

mod calls;
mod convert;
mod rpc;
mod settings;
mod telemetry;
#[cfg(feature = "tls")]
mod tls;

pub use convert::{duration, hostname, std_duration, timestamp_ms, timestamp_to_ms};
pub use settings::{
    ClientSettings, consumer_pub_sub, filter_expression, resource, subscription_entry,
};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::transport::{Channel, Endpoint};

use crate::config::GrpcConfig;
use crate::error::{Error, Result};
use crate::proto;
use crate::proto::messaging_service_client::MessagingServiceClient;
use rpc::heartbeat_loop;
use telemetry::telemetry_loop;

/// Commands of the proxy's telemetry stream that the session hands to its
/// owner (a bounded queue: when the owner lags, commands are dropped with a
/// warning; the proxy sends them again).
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerCommand {
    /// A half transaction whose producer did not end it: check it and call
    /// `EndTransaction` (source `SOURCE_SERVER_CHECK`).
    RecoverOrphanedTransaction(proto::RecoverOrphanedTransactionCommand),
}

/// A running session with the proxy; cheap to clone. [`shutdown`](Session::shutdown)
/// stops its tasks and tells the proxy (`NotifyClientTermination`).
#[derive(Debug, Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: GrpcConfig,
    client_id: String,
    client: MessagingServiceClient<Channel>,
    settings: ClientSettings,
    /// The publishing / subscription settings sent now (they change as a
    /// consumer subscribes).
    pub_sub: Mutex<Option<proto::settings::PubSub>>,
    /// The sending half of the current telemetry stream.
    telemetry_tx: Mutex<Option<mpsc::Sender<proto::TelemetryCommand>>>,
    server_settings: watch::Sender<Option<proto::Settings>>,
    commands: Option<mpsc::Sender<ServerCommand>>,
    request_ids: AtomicU64,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

static CLIENT_SEQ: AtomicU64 = AtomicU64::new(0);

impl Session {
    /// Connects to the proxy, opens the telemetry stream and waits for the
    /// proxy's answer to the settings, then starts the heartbeats (and
    /// telemetry reconnects) in the background. `commands` receives the
    /// proxy's server commands (orphaned transactions).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidEndpoint`], or the telemetry stream's error (e.g.
    /// [`Error::Rpc`] `UNAVAILABLE` when nothing listens at the endpoint,
    /// [`Error::Timeout`]).
    pub async fn start(
        config: GrpcConfig,
        settings: ClientSettings,
        commands: Option<mpsc::Sender<ServerCommand>>,
    ) -> Result<Session> {
        let uri = format!("http://{}", config.endpoint());
        let endpoint = Endpoint::from_shared(uri)
            .map_err(|e| Error::InvalidEndpoint {
                endpoint: config.endpoint(),
                reason: e.to_string(),
            })?
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(10));
        let channel = connect(&config, endpoint)?;
        let seq = CLIENT_SEQ.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let client_id = format!("{}@{}@{}@{:x}", hostname(), std::process::id(), seq, nanos);
        let (server_settings, _) = watch::channel(None);
        let inner = Arc::new(Inner {
            config,
            client_id,
            client: MessagingServiceClient::new(channel),
            pub_sub: Mutex::new(settings.pub_sub.clone()),
            telemetry_tx: Mutex::new(None),
            settings,
            server_settings,
            commands,
            request_ids: AtomicU64::new(0),
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        let stream = inner.open_telemetry().await?;
        inner.tasks.spawn(telemetry_loop(inner.clone(), stream));
        inner.tasks.spawn(heartbeat_loop(inner.clone()));
        tracing::info!(endpoint = %inner.config.endpoint(), client_id = %inner.client_id, "gRPC session started");
        Ok(Session { inner })
    }

    /// The client id sent as `x-mq-client-id`.
    pub fn client_id(&self) -> &str {
        &self.inner.client_id
    }

    /// The session's configuration.
    pub fn config(&self) -> &GrpcConfig {
        &self.inner.config
    }

    /// The settings the proxy answered on the telemetry stream (its
    /// backoff policy, the largest body, ...), the latest first.
    pub fn server_settings(&self) -> Option<proto::Settings> {
        self.inner.server_settings.borrow().clone()
    }

    /// Whether [`shutdown`](Session::shutdown) was called.
    pub fn is_shutdown(&self) -> bool {
        self.inner.shutdown.is_cancelled()
    }

    /// Stops the heartbeats and the telemetry stream, and tells the proxy
    /// (`NotifyClientTermination`, best effort, one deadline). Idempotent.
    pub async fn shutdown(&self) {
        if self.inner.shutdown.is_cancelled() {
            return;
        }
        self.inner.shutdown.cancel();
        self.inner.tasks.close();
        let group = self
            .inner
            .settings
            .group
            .as_deref()
            .map(|g| resource(&self.inner.config.namespace, g));
        let req = self
            .inner
            .request(proto::NotifyClientTerminationRequest { group });
        let mut client = self.inner.client.clone();
        match tokio::time::timeout(
            self.inner.config.request_timeout,
            client.notify_client_termination(req),
        )
        .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(status)) => tracing::debug!(%status, "NotifyClientTermination failed"),
            Err(_) => tracing::debug!("NotifyClientTermination timed out"),
        }
        if tokio::time::timeout(self.inner.config.request_timeout, self.inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("gRPC session tasks still running after shutdown");
        }
        tracing::info!(client_id = %self.inner.client_id, "gRPC session shut down");
    }
}

/// The lazily connecting channel: plaintext HTTP/2, or TLS with ALPN `h2`
/// when the config has TLS settings.
fn connect(config: &GrpcConfig, endpoint: Endpoint) -> Result<Channel> {
    #[cfg(feature = "tls")]
    if let Some(tls) = &config.tls {
        let connector = tls::TlsConnect::new(tls, config)?;
        return Ok(endpoint.connect_with_connector_lazy(connector));
    }
    let _ = config;
    Ok(endpoint.connect_lazy())
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
