//! `examples/metrics.rs` against the real broker: its `/metrics` endpoint,
//! scraped over HTTP, shows the send and consume counters of the messages
//! it sent, and every queue's lag at 0 once the topic is drained.
//!
//! The listen port: `RMQ_METRICS_PORT`, else a free one.

#[allow(dead_code)]
#[path = "../metrics.rs"]
mod metrics_example;

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::Duration;

use rmq_tests_integration::{Env, TEST_TIMEOUT, poll_until, prometheus_samples as samples, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const QUEUES: i32 = 4;
const MESSAGES: usize = 200;

fn listen_addr() -> SocketAddr {
    let port = match std::env::var("RMQ_METRICS_PORT") {
        Ok(p) => p.parse().expect("RMQ_METRICS_PORT is a port number"),
        Err(_) => TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .expect("a free local port")
            .port(),
    };
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// GET /metrics over plain HTTP/1.1; the body.
async fn scrape(addr: SocketAddr) -> Result<String, String> {
    let mut s = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)
        .await
        .map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("not an HTTP answer: {text:.200}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("answer: {head}"));
    }
    Ok(body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraped_lag_falls_to_zero_after_a_drain() {
    within(TEST_TIMEOUT, async {
        let env = Env::new().await;
        let topic = env.topic("it_metrics", QUEUES).await;
        let addr = listen_addr();
        let settings = metrics_example::Settings {
            addr,
            namesrv: env.namesrv().to_owned(),
            topic: topic.clone(),
            group: format!("{topic}_g"),
            messages: MESSAGES,
            persist_interval: Duration::from_secs(1),
        };
        metrics_example::install_exporter(addr).expect("exporter installs");
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let example = tokio::spawn(async move {
            metrics_example::run(&settings, async {
                let _ = stop_rx.await;
            })
            .await
            .map_err(|e| e.to_string())
        });
        let topic_label = format!("messaging_destination_name=\"{topic}\"");
        let body = poll_until(
            Duration::from_secs(90),
            Duration::from_millis(500),
            "every message consumed and every queue's lag at 0",
            || {
                let topic_label = topic_label.clone();
                async move {
                    let body = scrape(addr).await?;
                    let consumed: f64 =
                        samples(&body, "messaging_client_consumed_messages", &topic_label)
                            .iter()
                            .filter(|(k, _)| k.contains("result=\"success\""))
                            .map(|(_, v)| v)
                            .sum();
                    let lag = samples(&body, "messaging_rocketmq_consumer_lag", &topic_label);
                    let queues = usize::try_from(QUEUES).expect("small");
                    if consumed >= MESSAGES as f64
                        && lag.len() == queues
                        && lag.values().all(|v| *v == 0.0)
                    {
                        Ok(body)
                    } else {
                        Err(format!("consumed {consumed}, lag {lag:?}"))
                    }
                }
            },
        )
        .await;
        let sent: f64 = samples(&body, "messaging_client_sent_messages", &topic_label)
            .iter()
            .filter(|(k, _)| k.contains("messaging_rocketmq_send_result=\"ok\""))
            .map(|(_, v)| v)
            .sum();
        assert_eq!(sent, MESSAGES as f64, "sent counter of the topic");
        for name in [
            "messaging_rocketmq_consumer_received_messages",
            "messaging_rocketmq_consumer_process_queue_messages",
            "messaging_process_duration",
            "messaging_client_operation_duration",
            "messaging_rocketmq_consumer_rebalances",
            "messaging_rocketmq_client_connections",
        ] {
            assert!(
                body.lines().any(|l| l.starts_with(name)),
                "{name} is served"
            );
        }
        let received: f64 = samples(
            &body,
            "messaging_rocketmq_consumer_received_messages",
            &topic_label,
        )
        .values()
        .sum();
        assert_eq!(received, MESSAGES as f64, "received counter of the topic");
        stop_tx.send(()).expect("the example still runs");
        example
            .await
            .expect("the example task ends")
            .expect("the example ran without error");
        env.shutdown().await;
    })
    .await;
}
