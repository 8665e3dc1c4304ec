//! [`start`]: a push consumer of the proxy — the session (its settings
//! answered), the consume service, the first assignments and their
//! receive loops.

use std::sync::Arc;

use rmq_client_core::ClientConfig;
use rmq_consumer_base::ConsumerEvent;
use rmq_consumer_base::engine::grpc::{Backoff, ConsumerSession, ProxySettings, start_session};
use rmq_grpc::proto;
use tracing::info;

use super::assignment;
use super::consume::Standard;
use super::fifo::Fifo;
use super::state::{ConsumeService, GrpcGuard, GrpcInner};
use crate::config::PushConsumerConfig;
use crate::error::{Error, Result};
use crate::inner::Listener;
use crate::pop::DELAY_LEVELS;

/// Starts a push consumer of the proxy at `endpoint`: the session (its
/// settings answered), the first assignments and their receive loops.
///
/// # Errors
///
/// [`Error::Config`] for an invalid endpoint, or an orderly listener on a
/// group that does not consume in order; [`Error::Grpc`] when the session
/// cannot start.
pub(crate) async fn start(
    config: PushConsumerConfig,
    endpoint: &str,
    client: &ClientConfig,
    listener: Listener,
) -> Result<Arc<GrpcGuard>> {
    let group = config.group().to_owned();
    let orderly = matches!(listener, Listener::Orderly(_));
    let consumer = ConsumerSession {
        client_type: proto::ClientType::PushConsumer,
        group: &group,
        subs: &config.subscriptions,
        fifo: orderly,
        long_polling: config.suspend_timeout,
    };
    let session = start_session(endpoint, client, consumer).await?;
    let levels = Backoff::broker_default(DELAY_LEVELS.to_vec());
    let proxy = ProxySettings::from_proto(session.server_settings().as_ref(), &levels);
    if orderly && !proxy.fifo {
        session.shutdown().await;
        return Err(Error::Config(format!(
            "start_orderly through the proxy needs a group that consumes in order: the proxy says \
             {group} does not (mqadmin updateSubGroup -g {group} -o true)"
        )));
    }
    let fifo = orderly || proxy.fifo;
    let service: Box<dyn ConsumeService> = match listener {
        Listener::Concurrent(l) if !fifo => Box::new(Standard::new(l)),
        l => Box::new(Fifo::new(l)),
    };
    let inner = Arc::new(GrpcInner::new(
        config, session, service, fifo, proxy, levels,
    ));
    let guard = Arc::new(GrpcGuard::new(inner.clone()));
    assignment::start(&inner).await;
    info!(
        group,
        endpoint,
        client_id = inner.session.client_id(),
        fifo = inner.fifo,
        queues = inner.queue_count(),
        "push consumer started (gRPC)"
    );
    inner.health.emit(ConsumerEvent::Started);
    Ok(guard)
}
