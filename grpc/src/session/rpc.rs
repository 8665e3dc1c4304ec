//! Requests to the proxy: the client metadata, the access point, the unary
//! call with deadline and retries, and the heartbeats.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::transport::Channel;

use super::{Inner, resource};
use crate::error::{Error, Result, check_status};
use crate::proto;
use crate::proto::messaging_service_client::MessagingServiceClient;

impl Inner {
    pub(super) fn metadata(&self, md: &mut MetadataMap) {
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
        if let Some(c) = &self.config.credentials {
            c.sign(md, std::time::SystemTime::now());
        }
        if !self.config.namespace.is_empty() {
            if let Ok(v) = AsciiMetadataValue::try_from(self.config.namespace.as_str()) {
                md.insert("x-mq-namespace", v);
            }
        }
    }

    /// A request with the client's metadata and the call deadline
    /// (`grpc-timeout`).
    pub(super) fn request<T>(&self, msg: T) -> tonic::Request<T> {
        let mut req = tonic::Request::new(msg);
        self.metadata(req.metadata_mut());
        req.set_timeout(self.config.request_timeout);
        req
    }

    pub(super) fn access_point(&self) -> proto::Endpoints {
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
    /// A unary call with the deadline on every attempt and retries with
    /// backoff on retryable errors, up to `max_attempts`.
    pub(super) async fn call<Req, Resp, F, Fut>(
        &self,
        rpc: &'static str,
        f: F,
        msg: Req,
    ) -> Result<Resp>
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

    pub(super) async fn heartbeat(&self) -> Result<()> {
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
}

pub(super) async fn heartbeat_loop(inner: Arc<Inner>) {
    let mut tick = tokio::time::interval(inner.config.heartbeat_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = inner.shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = inner.heartbeat().await {
            tracing::warn!(error = %rmq_protocol::ErrorChain(&e), "heartbeat to the proxy failed");
        }
    }
}
