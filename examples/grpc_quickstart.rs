//! rmq through the RocketMQ 5.x proxy (gRPC): a producer built with
//! `.endpoint(..)` instead of `.namesrv_addr(..)` sends 100 messages (sync),
//! 100 with a callback and 20 of one FIFO message group; a push consumer
//! built the same way reads them all back through the proxy. Prints a
//! summary, exits 0.
//!
//! ```sh
//! cargo run --example grpc_quickstart
//! ```
//!
//! Uses the proxy at `RMQ_PROXY_ENDPOINT` (and the name server at
//! `NAMESRV_ADDR`, to create the topics); when `RMQ_PROXY_ENDPOINT` is unset it
//! starts a local RocketMQ 5.x with its proxy (`RMQ_PROXY=1
//! scripts/rocketmq-local.sh start`; Java and Maven needed) and stops it
//! again at the end. Topics served by the proxy need their message type,
//! set here with mqadmin (`updateTopic -a +message.type=...`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmq::prelude::*;
use rmq::protocol::message::property::SHARDING_KEY;
use tokio::sync::Notify;

type Outcome = Result<(), Box<dyn std::error::Error>>;

const SYNC: usize = 100;
const ASYNC: usize = 100;
const FIFO: usize = 20;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/rocketmq-local.sh")
}

/// The proxy and name server to use, and whether this program started them.
struct Stack {
    endpoint: String,
    namesrv: String,
    started_here: bool,
}

impl Stack {
    fn ensure() -> Result<Stack, Box<dyn std::error::Error>> {
        if let (Ok(endpoint), Ok(namesrv)) = (
            std::env::var("RMQ_PROXY_ENDPOINT"),
            std::env::var("NAMESRV_ADDR"),
        ) {
            if !endpoint.trim().is_empty() && !namesrv.trim().is_empty() {
                return Ok(Stack {
                    endpoint,
                    namesrv,
                    started_here: false,
                });
            }
        }
        println!("RMQ_PROXY_ENDPOINT is unset: starting a local RocketMQ 5.x with its proxy...");
        let already = Command::new("bash")
            .arg(script())
            .arg("env")
            .output()?
            .status
            .success();
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .env("RMQ_PROXY", "1")
            .env("RMQ_VERSION", "5")
            .output()?;
        if !out.status.success() {
            return Err(format!(
                "could not start the local RocketMQ:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let get = |name: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .map(|v| v.trim().to_owned())
                .ok_or_else(|| format!("the start script printed no {name} (a 4.9.x instance running? it has no proxy)"))
        };
        Ok(Stack {
            endpoint: get("RMQ_PROXY_ENDPOINT")?,
            namesrv: get("NAMESRV_ADDR")?,
            started_here: !already,
        })
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new("bash").arg(script()).arg("stop").status();
        }
    }
}

/// Creates `topic` with its 5.x message type through mqadmin.
fn create_topic(namesrv: &str, topic: &str, message_type: &str) -> Outcome {
    let out = Command::new("bash")
        .arg(script())
        .args([
            "admin",
            "updateTopic",
            "-n",
            namesrv,
            "-c",
            "DefaultCluster",
            "-t",
            topic,
            "-r",
            "4",
            "-w",
            "4",
        ])
        .arg("-a")
        .arg(format!("+message.type={message_type}"))
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !text.contains("success") {
        return Err(format!(
            "mqadmin updateTopic {topic} failed:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Outcome {
    let stack = Stack::ensure()?;
    let outcome = run(&stack.endpoint, &stack.namesrv).await;
    drop(stack);
    outcome
}

async fn run(endpoint: &str, namesrv: &str) -> Outcome {
    let started = Instant::now();
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let topic = format!("grpc_quickstart_{stamp}");
    let fifo_topic = format!("grpc_quickstart_fifo_{stamp}");
    create_topic(namesrv, &topic, "NORMAL")?;
    create_topic(namesrv, &fifo_topic, "FIFO")?;

    let expected = SYNC + ASYNC + FIFO;
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let done = Arc::new(Notify::new());
    let listener = {
        let (seen, done) = (seen.clone(), done.clone());
        listener_fn(move |msgs, _ctx| {
            let (seen, done) = (seen.clone(), done.clone());
            Box::pin(async move {
                let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
                for m in msgs.iter() {
                    s.insert(m.msg_id.clone());
                }
                if s.len() >= expected {
                    done.notify_one();
                }
                ConsumeResult::Success
            })
        })
    };
    // The same PushConsumer as over remoting: only `.endpoint(..)` differs.
    let consumer = PushConsumer::builder()
        .group(format!("grpc_quickstart_consumer_{stamp}"))
        .endpoint(endpoint)
        .subscribe(&topic, "*")
        .subscribe(&fifo_topic, "*")
        .start(listener)
        .await?;

    let producer = Producer::builder()
        .group("grpc_quickstart_producer")
        .endpoint(endpoint)
        .start()
        .await?;
    for i in 0..SYNC {
        producer
            .send(
                Message::new(&topic, format!("sync {i}"))
                    .with_tags("sync")
                    .with_keys([format!("k{i}")]),
            )
            .await?;
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel(ASYNC);
    for i in 0..ASYNC {
        let tx = tx.clone();
        producer.send_with_callback(
            Message::new(&topic, format!("async {i}")).with_tags("async"),
            move |r| {
                let _ = tx.try_send(r.map(|_| ()));
            },
        );
    }
    for _ in 0..ASYNC {
        rx.recv().await.ok_or("callback dropped")??;
    }
    for i in 0..FIFO {
        producer
            .send(
                Message::new(&fifo_topic, format!("step {i}"))
                    .with_property(SHARDING_KEY, "order-1"),
            )
            .await?;
    }
    println!(
        "produced {expected} messages through the proxy at {endpoint} in {:.1?}",
        started.elapsed()
    );

    let waited = tokio::time::timeout(Duration::from_secs(120), done.notified()).await;
    let _ = producer.shutdown().await;
    consumer.shutdown().await?;
    let consumed = seen.lock().unwrap_or_else(|e| e.into_inner()).len();
    println!(
        "consumed {consumed} of {expected} with the gRPC push consumer, elapsed {:.1?}",
        started.elapsed()
    );
    if waited.is_err() || consumed < expected {
        return Err("not every message was consumed within 120 s".into());
    }
    Ok(())
}
