//! [`Session`]: one client's connection to the proxy: the channel, the
//! `Telemetry` stream (settings sync, server commands), heartbeats, and the
//! unary calls with deadlines and retries.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::transport::{Channel, Endpoint};

use crate::config::GrpcConfig;
use crate::error::{Error, Result, check_status};
use crate::proto;
use crate::proto::messaging_service_client::MessagingServiceClient;
use crate::proto::telemetry_command::Command;

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

/// What kind of client the session speaks for, and what it publishes or
/// subscribes to: the `Settings` sent on the telemetry stream.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// `PRODUCER`, `SIMPLE_CONSUMER`, ...
    pub client_type: proto::ClientType,
    /// The consumer group (consumers only).
    pub group: Option<String>,
    /// Publishing or subscription settings.
    pub pub_sub: Option<proto::settings::PubSub>,
}

impl ClientSettings {
    /// The settings of a producer of `topics` (more may be sent to later).
    pub fn producer(topics: &[String], max_body_size: i32) -> Self {
        ClientSettings {
            client_type: proto::ClientType::Producer,
            group: None,
            pub_sub: Some(proto::settings::PubSub::Publishing(proto::Publishing {
                topics: topics.iter().map(|t| resource("", t)).collect(),
                max_body_size,
                validate_message_type: true,
            })),
        }
    }

    /// The settings of a consumer of `group` (`SIMPLE_CONSUMER` or
    /// `PUSH_CONSUMER`) with its subscriptions; `fifo` asks the proxy for
    /// FIFO delivery per message group (push consumers of a FIFO group).
    pub fn consumer(
        client_type: proto::ClientType,
        group: &str,
        subscriptions: Vec<proto::SubscriptionEntry>,
        fifo: bool,
        long_polling: Duration,
    ) -> Self {
        ClientSettings {
            client_type,
            group: Some(group.to_owned()),
            pub_sub: Some(consumer_pub_sub(group, subscriptions, fifo, long_polling)),
        }
    }
}

/// The `Subscription` settings of a consumer of `group` (`fifo == false`
/// leaves it to the group's `consumeMessageOrderly`).
pub fn consumer_pub_sub(
    group: &str,
    subscriptions: Vec<proto::SubscriptionEntry>,
    fifo: bool,
    long_polling: Duration,
) -> proto::settings::PubSub {
    proto::settings::PubSub::Subscription(proto::Subscription {
        group: Some(resource("", group)),
        subscriptions,
        fifo: fifo.then_some(true),
        receive_batch_size: None,
        long_polling_timeout: Some(duration(long_polling)),
        lite_subscription_quota: None,
        max_lite_topic_size: None,
    })
}

/// One subscription entry: `topic` filtered by a tag expression
/// (`sql == false`) or an SQL92 one.
pub fn subscription_entry(topic: &str, sql: bool, expression: &str) -> proto::SubscriptionEntry {
    proto::SubscriptionEntry {
        topic: Some(resource("", topic)),
        expression: Some(filter_expression(sql, expression)),
    }
}

/// A `FilterExpression` of tags (`sql == false`) or SQL92.
pub fn filter_expression(sql: bool, expression: &str) -> proto::FilterExpression {
    let kind = if sql {
        proto::FilterType::Sql
    } else {
        proto::FilterType::Tag
    };
    proto::FilterExpression {
        r#type: kind as i32,
        expression: expression.to_owned(),
    }
}

/// A `Resource` (namespace + name).
pub fn resource(namespace: &str, name: &str) -> proto::Resource {
    proto::Resource {
        resource_namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
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
        let channel = Endpoint::from_shared(uri)
            .map_err(|e| Error::InvalidEndpoint {
                endpoint: config.endpoint(),
                reason: e.to_string(),
            })?
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(10))
            .connect_lazy();
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

    /// `QueryRoute`: the queues of `topic`.
    ///
    /// # Errors
    ///
    /// The call's error; [`Error::Proxy`] `TOPIC_NOT_FOUND` for an unknown topic.
    pub async fn query_route(&self, topic: &str) -> Result<Vec<proto::MessageQueue>> {
        let req = proto::QueryRouteRequest {
            topic: Some(resource(&self.inner.config.namespace, topic)),
            endpoints: Some(self.inner.access_point()),
        };
        let resp = self
            .inner
            .call(
                "QueryRoute",
                |mut c, r| async move { c.query_route(r).await },
                req,
            )
            .await?;
        check_status("QueryRoute", resp.status.as_ref())?;
        Ok(resp.message_queues)
    }

    /// `SendMessage`: one entry per message, in order.
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`] when the whole request failed.
    /// A per-message failure is in its entry's status.
    pub async fn send_message(
        &self,
        messages: Vec<proto::Message>,
    ) -> Result<Vec<proto::SendResultEntry>> {
        let req = proto::SendMessageRequest { messages };
        let resp = self
            .inner
            .call(
                "SendMessage",
                |mut c, r| async move { c.send_message(r).await },
                req,
            )
            .await?;
        if resp.entries.is_empty() {
            check_status("SendMessage", resp.status.as_ref())?;
            return Err(Error::Protocol {
                rpc: "SendMessage",
                reason: "no result entry".into(),
            });
        }
        Ok(resp.entries)
    }

    /// `EndTransaction`: commits or rolls back a half message.
    ///
    /// # Errors
    ///
    /// The call's error.
    pub async fn end_transaction(&self, req: proto::EndTransactionRequest) -> Result<()> {
        let resp = self
            .inner
            .call(
                "EndTransaction",
                |mut c, r| async move { c.end_transaction(r).await },
                req,
            )
            .await?;
        check_status("EndTransaction", resp.status.as_ref())
    }

    /// Replaces the publishing / subscription settings and sends them on
    /// the telemetry stream (best effort: a reopened stream sends them too).
    pub async fn update_pub_sub(&self, pub_sub: proto::settings::PubSub) {
        *self
            .inner
            .pub_sub
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(pub_sub);
        let tx = self
            .inner
            .telemetry_tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(tx) = tx {
            let cmd = self.inner.settings_command();
            let sent = tokio::time::timeout(self.inner.config.request_timeout, tx.send(cmd)).await;
            if !matches!(sent, Ok(Ok(()))) {
                tracing::debug!("settings not sent on the telemetry stream; sent when it reopens");
            }
        }
    }

    /// `QueryAssignment`: the queues of `topic` the proxy lets this
    /// consumer of `group` receive from (the Java client asks before each
    /// round of receives).
    ///
    /// # Errors
    ///
    /// The call's error; [`Error::Proxy`] `TOPIC_NOT_FOUND` for an unknown topic.
    pub async fn query_assignment(
        &self,
        topic: &str,
        group: &str,
    ) -> Result<Vec<proto::Assignment>> {
        let ns = &self.inner.config.namespace;
        let req = proto::QueryAssignmentRequest {
            topic: Some(resource(ns, topic)),
            group: Some(resource(ns, group)),
            endpoints: Some(self.inner.access_point()),
        };
        let resp = self
            .inner
            .call(
                "QueryAssignment",
                |mut c, r| async move { c.query_assignment(r).await },
                req,
            )
            .await?;
        check_status("QueryAssignment", resp.status.as_ref())?;
        Ok(resp.assignments)
    }

    /// `ReceiveMessage` (server streaming): the messages of one long poll,
    /// collected until the stream ends. Not retried (a retry could only
    /// hide more messages); the deadline is the long-polling time plus the
    /// request timeout. `MESSAGE_NOT_FOUND` is an empty answer.
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`] for another status.
    pub async fn receive_message(
        &self,
        mut req: proto::ReceiveMessageRequest,
        long_polling: Duration,
    ) -> Result<Vec<proto::Message>> {
        const RPC: &str = "ReceiveMessage";
        if self.inner.shutdown.is_cancelled() {
            return Err(Error::Shutdown);
        }
        let ns = &self.inner.config.namespace;
        if !ns.is_empty() {
            if let Some(g) = req.group.as_mut() {
                g.resource_namespace.clone_from(ns);
            }
        }
        req.long_polling_timeout = Some(duration(long_polling));
        let deadline = long_polling.saturating_add(self.inner.config.request_timeout);
        let mut request = self.inner.request(req);
        request.set_timeout(deadline);
        let mut client = self.inner.client.clone();
        let collect = async move {
            let mut stream = client
                .receive_message(request)
                .await
                .map_err(|s| Error::rpc(RPC, &s))?
                .into_inner();
            let mut out = Vec::new();
            let mut status = None;
            while let Some(item) = stream.message().await.map_err(|s| Error::rpc(RPC, &s))? {
                match item.content {
                    Some(proto::receive_message_response::Content::Message(m)) => out.push(m),
                    Some(proto::receive_message_response::Content::Status(s)) => status = Some(s),
                    Some(proto::receive_message_response::Content::DeliveryTimestamp(_)) | None => {
                    }
                }
            }
            match status {
                Some(s) if s.code == proto::Code::MessageNotFound as i32 => {}
                Some(s) if out.is_empty() => check_status(RPC, Some(&s))?,
                _ => {}
            }
            Ok(out)
        };
        tokio::select! {
            () = self.inner.shutdown.cancelled() => Err(Error::Shutdown),
            r = tokio::time::timeout(deadline, collect) => r.map_err(|_| Error::Timeout { rpc: RPC, after: deadline })?,
        }
    }

    /// `AckMessage`: acks `(message id, receipt handle)` entries of `topic`
    /// for `group`; answers one result entry per ack (check each status).
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`] when the whole request failed.
    pub async fn ack_message(
        &self,
        topic: &str,
        group: &str,
        entries: Vec<(String, String)>,
    ) -> Result<Vec<proto::AckMessageResultEntry>> {
        let ns = &self.inner.config.namespace;
        let req = proto::AckMessageRequest {
            group: Some(resource(ns, group)),
            topic: Some(resource(ns, topic)),
            entries: entries
                .into_iter()
                .map(|(message_id, receipt_handle)| proto::AckMessageEntry {
                    message_id,
                    receipt_handle,
                    lite_topic: None,
                })
                .collect(),
        };
        let resp = self
            .inner
            .call(
                "AckMessage",
                |mut c, r| async move { c.ack_message(r).await },
                req,
            )
            .await?;
        if resp.entries.is_empty() {
            check_status("AckMessage", resp.status.as_ref())?;
        }
        Ok(resp.entries)
    }

    /// `ChangeInvisibleDuration`: hides the message of `receipt_handle`
    /// for `invisible` from now; answers the new receipt handle.
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`] (e.g. `INVALID_RECEIPT_HANDLE`
    /// when the message came back already).
    pub async fn change_invisible_duration(
        &self,
        topic: &str,
        group: &str,
        message_id: &str,
        receipt_handle: &str,
        invisible: Duration,
    ) -> Result<String> {
        let ns = &self.inner.config.namespace;
        let req = proto::ChangeInvisibleDurationRequest {
            group: Some(resource(ns, group)),
            topic: Some(resource(ns, topic)),
            receipt_handle: receipt_handle.to_owned(),
            invisible_duration: Some(duration(invisible)),
            message_id: message_id.to_owned(),
            lite_topic: None,
            suspend: None,
        };
        let resp = self
            .inner
            .call(
                "ChangeInvisibleDuration",
                |mut c, r| async move { c.change_invisible_duration(r).await },
                req,
            )
            .await?;
        check_status("ChangeInvisibleDuration", resp.status.as_ref())?;
        Ok(resp.receipt_handle)
    }

    /// `ForwardMessageToDeadLetterQueue`: moves a message delivered
    /// `delivery_attempt` times to the group's DLQ (the Java push consumer
    /// does so once the attempts are used up).
    ///
    /// # Errors
    ///
    /// The call's error, or [`Error::Proxy`].
    pub async fn forward_to_dead_letter_queue(
        &self,
        topic: &str,
        group: &str,
        message_id: &str,
        receipt_handle: &str,
        delivery_attempt: i32,
        max_delivery_attempts: i32,
    ) -> Result<()> {
        let ns = &self.inner.config.namespace;
        let req = proto::ForwardMessageToDeadLetterQueueRequest {
            group: Some(resource(ns, group)),
            topic: Some(resource(ns, topic)),
            receipt_handle: receipt_handle.to_owned(),
            message_id: message_id.to_owned(),
            delivery_attempt,
            max_delivery_attempts,
            lite_topic: None,
        };
        let resp = self
            .inner
            .call(
                "ForwardMessageToDeadLetterQueue",
                |mut c, r| async move { c.forward_message_to_dead_letter_queue(r).await },
                req,
            )
            .await?;
        check_status("ForwardMessageToDeadLetterQueue", resp.status.as_ref())
    }

    /// One `Heartbeat` now (the session also sends them every heartbeat interval).
    ///
    /// # Errors
    ///
    /// The call's error.
    pub async fn heartbeat(&self) -> Result<()> {
        self.inner.heartbeat().await
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

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The telemetry stream: the sending half and the proxy's inbound stream.
struct Telemetry {
    tx: mpsc::Sender<proto::TelemetryCommand>,
    inbound: tonic::Streaming<proto::TelemetryCommand>,
}

impl Inner {
    fn metadata(&self, md: &mut MetadataMap) {
        let id = self.request_ids.fetch_add(1, Ordering::Relaxed);
        md.insert("x-mq-language", AsciiMetadataValue::from_static("RUST"));
        md.insert("x-mq-protocol", AsciiMetadataValue::from_static("v2"));
        md.insert(
            "x-mq-client-version",
            AsciiMetadataValue::from_static(env!("CARGO_PKG_VERSION")),
        );
        if let Ok(v) = AsciiMetadataValue::try_from(self.client_id.as_str()) {
            md.insert("x-mq-client-id", v);
        }
        if let Ok(v) = AsciiMetadataValue::try_from(format!("{}-{id}", self.client_id)) {
            md.insert("x-mq-request-id", v);
        }
        if !self.config.namespace.is_empty() {
            if let Ok(v) = AsciiMetadataValue::try_from(self.config.namespace.as_str()) {
                md.insert("x-mq-namespace", v);
            }
        }
    }

    /// A request with the client's metadata and the call deadline
    /// (`grpc-timeout`).
    fn request<T>(&self, msg: T) -> tonic::Request<T> {
        let mut req = tonic::Request::new(msg);
        self.metadata(req.metadata_mut());
        req.set_timeout(self.config.request_timeout);
        req
    }

    fn access_point(&self) -> proto::Endpoints {
        let scheme = if self.config.host.parse::<std::net::Ipv4Addr>().is_ok() {
            proto::AddressScheme::IPv4
        } else if self.config.host.parse::<std::net::Ipv6Addr>().is_ok() {
            proto::AddressScheme::IPv6
        } else {
            proto::AddressScheme::DomainName
        };
        proto::Endpoints {
            scheme: scheme as i32,
            addresses: vec![proto::Address {
                host: self.config.host.clone(),
                port: i32::from(self.config.port),
            }],
        }
    }

    fn settings_command(&self) -> proto::TelemetryCommand {
        let s = &self.settings;
        let pub_sub = self
            .pub_sub
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let settings = proto::Settings {
            client_type: Some(s.client_type as i32),
            access_point: Some(self.access_point()),
            backoff_policy: None,
            request_timeout: Some(duration(self.config.request_timeout)),
            pub_sub,
            user_agent: Some(proto::Ua {
                language: proto::Language::Rust as i32,
                version: env!("CARGO_PKG_VERSION").to_owned(),
                platform: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
                hostname: hostname(),
            }),
            metric: Some(proto::Metric {
                on: false,
                endpoints: None,
            }),
        };
        proto::TelemetryCommand {
            status: None,
            command: Some(Command::Settings(settings)),
        }
    }

    /// A unary call with the deadline on every attempt and retries with
    /// backoff on retryable errors, up to `max_attempts`.
    async fn call<Req, Resp, F, Fut>(&self, rpc: &'static str, f: F, msg: Req) -> Result<Resp>
    where
        Req: Clone,
        F: Fn(MessagingServiceClient<Channel>, tonic::Request<Req>) -> Fut,
        Fut: Future<Output = std::result::Result<tonic::Response<Resp>, tonic::Status>>,
    {
        let timeout = self.config.request_timeout;
        let mut attempt = 1;
        loop {
            if self.shutdown.is_cancelled() {
                return Err(Error::Shutdown);
            }
            let outcome = match tokio::time::timeout(
                timeout,
                f(self.client.clone(), self.request(msg.clone())),
            )
            .await
            {
                Ok(Ok(resp)) => return Ok(resp.into_inner()),
                Ok(Err(status)) => Error::rpc(rpc, &status),
                Err(_) => Error::Timeout {
                    rpc,
                    after: timeout,
                },
            };
            if !outcome.is_retryable() || attempt >= self.config.max_attempts {
                return Err(outcome);
            }
            let pause = self.config.backoff(attempt);
            tracing::debug!(rpc, attempt, ?pause, error = %outcome, "retrying");
            tokio::select! {
                () = self.shutdown.cancelled() => return Err(Error::Shutdown),
                () = tokio::time::sleep(pause) => {}
            }
            attempt += 1;
        }
    }

    async fn heartbeat(&self) -> Result<()> {
        let req = proto::HeartbeatRequest {
            group: self
                .settings
                .group
                .as_deref()
                .map(|g| resource(&self.config.namespace, g)),
            client_type: self.settings.client_type as i32,
        };
        let resp = self
            .call(
                "Heartbeat",
                |mut c, r| async move { c.heartbeat(r).await },
                req,
            )
            .await?;
        check_status("Heartbeat", resp.status.as_ref())
    }

    /// Opens the telemetry stream, sends the settings and waits (one
    /// deadline) for the proxy's settings in return.
    async fn open_telemetry(&self) -> Result<Telemetry> {
        const RPC: &str = "Telemetry";
        let (tx, rx) = mpsc::channel(16);
        tx.try_send(self.settings_command())
            .map_err(|_| Error::Shutdown)?;
        let mut req = tonic::Request::new(ReceiverStream::new(rx));
        self.metadata(req.metadata_mut());
        let mut client = self.client.clone();
        let timeout = self.config.request_timeout;
        let opened = async {
            let mut inbound = client
                .telemetry(req)
                .await
                .map_err(|s| Error::rpc(RPC, &s))?
                .into_inner();
            loop {
                match inbound.message().await.map_err(|s| Error::rpc(RPC, &s))? {
                    None => {
                        return Err(Error::Protocol {
                            rpc: RPC,
                            reason: "the proxy closed the stream before answering the settings"
                                .into(),
                        });
                    }
                    Some(cmd) => {
                        check_status(RPC, cmd.status.as_ref())?;
                        if let Some(Command::Settings(s)) = cmd.command {
                            self.server_settings.send_replace(Some(s));
                            return Ok(inbound);
                        }
                    }
                }
            }
        };
        let inbound =
            tokio::time::timeout(timeout, opened)
                .await
                .map_err(|_| Error::Timeout {
                    rpc: RPC,
                    after: timeout,
                })??;
        *self
            .telemetry_tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(tx.clone());
        Ok(Telemetry { tx, inbound })
    }

    /// Answers one command of the proxy; `false` when the stream should be
    /// reopened.
    async fn on_command(
        &self,
        tx: &mpsc::Sender<proto::TelemetryCommand>,
        cmd: proto::TelemetryCommand,
    ) -> bool {
        let ok = || {
            Some(proto::Status {
                code: proto::Code::Ok as i32,
                message: "OK".into(),
            })
        };
        let reply = match cmd.command {
            Some(Command::Settings(s)) => {
                self.server_settings.send_replace(Some(s));
                None
            }
            Some(Command::PrintThreadStackTraceCommand(c)) => Some(proto::TelemetryCommand {
                status: ok(),
                command: Some(Command::ThreadStackTrace(proto::ThreadStackTrace {
                    nonce: c.nonce,
                    thread_stack_trace: Some("rmq (Rust, tokio): no thread stacks to print".into()),
                })),
            }),
            Some(Command::VerifyMessageCommand(c)) => Some(proto::TelemetryCommand {
                status: Some(proto::Status {
                    code: proto::Code::NotImplemented as i32,
                    message: "this client does not verify messages".into(),
                }),
                command: Some(Command::VerifyMessageResult(proto::VerifyMessageResult {
                    nonce: c.nonce,
                })),
            }),
            Some(Command::RecoverOrphanedTransactionCommand(c)) => {
                match &self.commands {
                    Some(q) => {
                        if q.try_send(ServerCommand::RecoverOrphanedTransaction(c))
                            .is_err()
                        {
                            tracing::warn!(
                                "orphaned transaction command dropped: its queue is full"
                            );
                        }
                    }
                    None => tracing::warn!(
                        "orphaned transaction command for a client without a transaction checker"
                    ),
                }
                None
            }
            Some(Command::ReconnectEndpointsCommand(_)) => return false,
            Some(other) => {
                tracing::debug!(?other, "telemetry command ignored");
                None
            }
            None => None,
        };
        if let Some(r) = reply {
            let _ = tx.send(r).await;
        }
        true
    }
}

async fn telemetry_loop(inner: Arc<Inner>, first: Telemetry) {
    let mut stream = Some(first);
    let mut failures = 0u32;
    loop {
        if let Some(Telemetry { tx, mut inbound }) = stream.take() {
            failures = 0;
            loop {
                let next = tokio::select! {
                    () = inner.shutdown.cancelled() => return,
                    next = inbound.message() => next,
                };
                match next {
                    Ok(Some(cmd)) => {
                        if !inner.on_command(&tx, cmd).await {
                            break;
                        }
                    }
                    Ok(None) => {
                        tracing::info!("the proxy closed the telemetry stream; reopening");
                        break;
                    }
                    Err(status) => {
                        tracing::warn!(%status, "telemetry stream failed; reopening");
                        break;
                    }
                }
            }
        }
        failures = failures.saturating_add(1);
        tokio::select! {
            () = inner.shutdown.cancelled() => return,
            () = tokio::time::sleep(inner.config.backoff(failures)) => {}
        }
        match inner.open_telemetry().await {
            Ok(s) => stream = Some(s),
            Err(e) => tracing::warn!(error = %e, "cannot reopen the telemetry stream"),
        }
    }
}

async fn heartbeat_loop(inner: Arc<Inner>) {
    let mut tick = tokio::time::interval(inner.config.heartbeat_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = inner.shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = inner.heartbeat().await {
            tracing::warn!(error = %e, "heartbeat to the proxy failed");
        }
    }
}

/// A protobuf `Duration`.
pub fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

/// A protobuf `Timestamp` from milliseconds since the epoch.
pub fn timestamp_ms(ms: i64) -> prost_types::Timestamp {
    let nanos = i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0);
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos,
    }
}

/// Milliseconds since the epoch of a protobuf `Timestamp`.
pub fn timestamp_to_ms(t: &prost_types::Timestamp) -> i64 {
    t.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(t.nanos / 1_000_000))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        for ms in [0, 1, 999, 1_700_000_000_123, -1] {
            assert_eq!(timestamp_to_ms(&timestamp_ms(ms)), ms, "{ms}");
        }
        assert_eq!(duration(Duration::from_millis(1500)).nanos, 500_000_000);
    }
}
