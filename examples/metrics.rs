//! rmq's metrics in Prometheus: installs `metrics-exporter-prometheus` as
//! the `metrics` recorder, serving `http://127.0.0.1:9000/metrics`, then
//! sends messages and consumes them with a push consumer until Ctrl-C
//! (or SIGTERM).
//! The names and labels are in METRICS.md.
//!
//! ```sh
//! cargo run --example metrics
//! curl -s http://127.0.0.1:9000/metrics | grep messaging_
//! ```
//!
//! Environment: `RMQ_METRICS_ADDR` (listen address, default
//! `127.0.0.1:9000`), `RMQ_METRICS_TOPIC` (default a fresh
//! `metrics_<millis>`, auto-created by the first send), `RMQ_METRICS_MESSAGES`
//! (sent at start, default 1000), `RMQ_METRICS_RUN_SECS` (stop after that
//! many seconds instead of at Ctrl-C). Uses the RocketMQ at `NAMESRV_ADDR`;
//! when that is unset it starts a local one with `scripts/rocketmq-local.sh`.

#[path = "support/local_rocketmq.rs"]
mod local_rocketmq;

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use local_rocketmq::{Outcome, run_example};
use metrics_exporter_prometheus::PrometheusBuilder;
use rmq::prelude::*;

/// What the example runs.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Where `/metrics` is served.
    pub(crate) addr: SocketAddr,
    /// Name servers.
    pub(crate) namesrv: String,
    /// The topic sent to and consumed.
    pub(crate) topic: String,
    /// The consumer group.
    pub(crate) group: String,
    /// Messages sent at start.
    pub(crate) messages: usize,
    /// How often the consumer persists offsets (and refreshes the queue
    /// gauges: held messages, lag).
    pub(crate) persist_interval: Duration,
}

impl Settings {
    /// The settings from the environment (see the module docs).
    ///
    /// # Errors
    ///
    /// A variable that does not parse.
    pub(crate) fn from_env(namesrv: &str) -> Result<Settings, Box<dyn std::error::Error>> {
        let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
        let addr = std::env::var("RMQ_METRICS_ADDR").unwrap_or_else(|_| "127.0.0.1:9000".into());
        let addr = addr
            .parse()
            .map_err(|e| format!("RMQ_METRICS_ADDR={addr}: not a socket address ({e})"))?;
        let messages = match std::env::var("RMQ_METRICS_MESSAGES") {
            Ok(n) => n
                .parse()
                .map_err(|e| format!("RMQ_METRICS_MESSAGES={n}: not a count ({e})"))?,
            Err(_) => 1000,
        };
        Ok(Settings {
            addr,
            namesrv: namesrv.to_owned(),
            topic: std::env::var("RMQ_METRICS_TOPIC")
                .unwrap_or_else(|_| format!("metrics_{stamp}")),
            group: format!("metrics_consumer_{stamp}"),
            messages,
            persist_interval: Duration::from_secs(5),
        })
    }
}

/// Installs the Prometheus recorder with its HTTP listener at
/// `settings.addr` (on the current Tokio runtime). Once per process: the
/// `metrics` facade takes one global recorder.
///
/// # Errors
///
/// The recorder or the listener could not be installed.
pub(crate) fn install_exporter(addr: SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .map_err(|e| format!("cannot serve metrics at http://{addr}/metrics: {e}"))?;
    Ok(())
}

/// Sends `settings.messages` messages, then consumes the topic until
/// `stop` completes. The recorder must be installed first: handles are
/// built when the producer sends to a topic and when a queue is assigned.
///
/// # Errors
///
/// The producer or the consumer could not start, or a send failed.
pub(crate) async fn run(
    settings: &Settings,
    stop: impl Future<Output = ()>,
) -> Result<(), Box<dyn std::error::Error>> {
    let client = ClientConfig::builder()
        .namesrv_addr(settings.namesrv.clone())
        .persist_consumer_offset_interval(settings.persist_interval)
        .build()?;
    let producer = Producer::builder()
        .group("metrics_producer")
        .namesrv_addr(settings.namesrv.clone())
        .start()
        .await?;
    for i in 0..settings.messages {
        producer
            .send(Message::new(&settings.topic, format!("message {i}")))
            .await?;
    }
    println!(
        "sent {} messages to {}; metrics at http://{}/metrics",
        settings.messages, settings.topic, settings.addr
    );
    let consumer = PushConsumer::builder()
        .group(settings.group.clone())
        .client_config(client)
        .consume_from(ConsumeFrom::FirstOffset)
        .subscribe(&settings.topic, "*")
        .start(listener_fn(|_msgs, _ctx| {
            Box::pin(async { ConsumeResult::Success })
        }))
        .await?;
    stop.await;
    consumer.shutdown().await?;
    producer.shutdown().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Outcome {
    run_example(|namesrv| async move {
        let settings = Settings::from_env(&namesrv)?;
        install_exporter(settings.addr)?;
        let run_for = std::env::var("RMQ_METRICS_RUN_SECS")
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        let stop = async move {
            match run_for {
                Some(secs) => tokio::time::sleep(Duration::from_secs(secs)).await,
                None => {
                    println!("Ctrl-C (or SIGTERM) stops");
                    interrupted().await;
                }
            }
        };
        run(&settings, stop).await?;
        Ok(())
    })
    .await
}

/// Ctrl-C, or SIGTERM on Unix (what `kill`, `timeout` and container
/// runtimes send), so a local RocketMQ this example started is stopped too.
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
