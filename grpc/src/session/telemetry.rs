//! The telemetry stream: opening it (settings sent, the proxy's settings
//! awaited), answering the proxy's commands, reopening it when it ends.

use std::sync::{Arc, PoisonError};

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{Inner, ServerCommand};
use crate::error::{Error, Result, check_status};
use crate::proto;
use crate::proto::telemetry_command::Command;

/// The telemetry stream: the sending half and the proxy's inbound stream.
pub(super) struct Telemetry {
    tx: mpsc::Sender<proto::TelemetryCommand>,
    inbound: tonic::Streaming<proto::TelemetryCommand>,
}

impl Inner {
    /// Opens the telemetry stream, sends the settings and waits (one
    /// deadline) for the proxy's settings in return.
    pub(super) async fn open_telemetry(&self) -> Result<Telemetry> {
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
    pub(super) async fn on_command(
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

pub(super) async fn telemetry_loop(inner: Arc<Inner>, first: Telemetry) {
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
            Err(e) => {
                tracing::warn!(error = %rmq_protocol::ErrorChain(&e), "cannot reopen the telemetry stream")
            }
        }
    }
}
