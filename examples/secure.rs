//! Produce and consume against a broker with ACL and TLS.
//!
//! ```sh
//! eval "$(RMQ_AUTH=acl RMQ_TLS=enforcing scripts/rocketmq-local.sh start)"
//! cargo run --example secure
//! ```
//!
//! Reads `NAMESRV_ADDR`, `RMQ_ACCESS_KEY` / `RMQ_SECRET_KEY` (unset: unsigned) and `RMQ_TLS_CA`
//! (unset: plaintext); `RMQ_TLS_CERT` / `RMQ_TLS_KEY` add a client certificate (mTLS) and
//! `RMQ_TLS_SERVER_NAME` overrides the name checked in the servers' certificates. Sends 100
//! messages to a fresh topic (created on first send by a broker with `autoCreateTopicEnable`),
//! consumes them with a push consumer and exits 0. A refused credential (wrong
//! `RMQ_SECRET_KEY`, unknown access key, no permission) ends it with the typed error and exit
//! code 2; a rejected certificate with exit code 3.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmq::prelude::*;

const COUNT: usize = 100;

#[tokio::main]
async fn main() {
    match run().await {
        Ok(()) => {}
        Err(e) if e.is_auth() => {
            eprintln!(
                "refused by the broker (not authenticated or not authorized): {}",
                e
            );
            std::process::exit(2);
        }
        Err(e) if e.is_certificate_error() => {
            eprintln!("TLS certificate rejected: {}", e);
            std::process::exit(3);
        }
        Err(e) => {
            eprintln!("error: {}", e);
            std::process::exit(1);
        }
    }
}

// `rmq::Error` holds each layer's error unboxed, so it is large.
#[allow(clippy::result_large_err)]
fn config() -> rmq::Result<ClientConfig> {
    // Name servers from NAMESRV_ADDR, credentials from RMQ_ACCESS_KEY / RMQ_SECRET_KEY.
    let mut builder = ClientConfig::builder();
    if let Ok(ca) = std::env::var("RMQ_TLS_CA") {
        let mut tls = TlsConfig::new().with_ca_file(ca);
        if let (Ok(cert), Ok(key)) = (std::env::var("RMQ_TLS_CERT"), std::env::var("RMQ_TLS_KEY")) {
            tls = tls.with_client_cert(cert, key);
        }
        if let Ok(name) = std::env::var("RMQ_TLS_SERVER_NAME") {
            tls = tls.with_server_name(name);
        }
        builder = builder.tls(tls);
    }
    let config = builder.build()?;
    println!(
        "name servers {:?}, {}, {}",
        config.namesrv_addrs(),
        match config.credentials() {
            Some(c) => format!("signing as {:?}", c.access_key()),
            None => "unsigned".to_owned(),
        },
        if config.tls().is_some() {
            "TLS"
        } else {
            "plaintext"
        }
    );
    Ok(config)
}

async fn run() -> rmq::Result<()> {
    let config = config()?;
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let topic = format!("rmq_secure_{stamp}");
    let started = Instant::now();

    let producer = Producer::builder()
        .group("rmq_secure_producer")
        .client_config(config.clone())
        .start()
        .await?;
    for i in 0..COUNT {
        producer
            .send(Message::new(&topic, format!("secure message {i}")))
            .await?;
    }
    let _ = producer.shutdown().await;
    println!("sent {COUNT} signed messages to {topic}");

    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let done = Arc::new(tokio::sync::Notify::new());
    let consumer = PushConsumer::builder()
        .group(format!("rmq_secure_consumer_{stamp}"))
        .client_config(config)
        .subscribe(&topic, "*")
        .consume_from(ConsumeFrom::FirstOffset)
        .start(listener_fn({
            let seen = seen.clone();
            let done = done.clone();
            move |msgs, _ctx| {
                let seen = seen.clone();
                let done = done.clone();
                Box::pin(async move {
                    let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
                    s.extend(msgs.iter().map(|m| m.msg_id.clone()));
                    if s.len() >= COUNT {
                        done.notify_one();
                    }
                    ConsumeResult::Success
                })
            }
        }))
        .await?;
    let finished = tokio::time::timeout(Duration::from_secs(60), done.notified()).await;
    consumer.shutdown().await?;
    let consumed = seen.lock().unwrap_or_else(|e| e.into_inner()).len();
    if finished.is_err() {
        eprintln!(
            "consumed only {consumed} of {COUNT} within 60 s (pulls refused? see the warnings)"
        );
        std::process::exit(1);
    }
    println!(
        "consumed {consumed} of {COUNT} over {}, elapsed {:?}",
        if std::env::var("RMQ_TLS_CA").is_ok() {
            "TLS"
        } else {
            "plaintext"
        },
        started.elapsed()
    );
    Ok(())
}
