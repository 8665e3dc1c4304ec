//! `create-topic`: a topic with Q queues on one broker, then wait for its route.

use std::time::{Duration, Instant};

use rmq_client_core::ClientInstance;
use rmq_protocol::header::CreateTopicRequestHeader;

use crate::args::Flags;
use crate::error::{BenchError, Result};

/// A started client instance for the flags' name server, TLS and credentials (instance name
/// unique per process).
pub(crate) fn instance(flags: &Flags, name: &str) -> Result<ClientInstance> {
    let config = flags.client_config(Some(format!("{name}-{}", std::process::id())))?;
    ClientInstance::get_or_start(config).map_err(|source| BenchError::Client {
        what: "starting the client instance".into(),
        source,
    })
}

/// The address of the broker to create topics on: `--broker-addr`, else
/// `RMQ_BROKER_ADDR`, else the master of the first broker (by name) in the
/// route of `TBW102`.
async fn broker_addr(flags: &Flags, instance: &ClientInstance) -> Result<String> {
    if let Some(addr) = flags.optional::<String>("broker-addr")? {
        return Ok(addr);
    }
    if let Ok(addr) = std::env::var("RMQ_BROKER_ADDR") {
        if !addr.is_empty() {
            return Ok(addr);
        }
    }
    instance
        .route("TBW102")
        .await
        .map_err(|source| BenchError::Client {
            what: "route of TBW102 (is a broker registered with autoCreateTopicEnable?)".into(),
            source,
        })?;
    let mut brokers: Vec<(String, i64, String)> = instance
        .broker_addrs()
        .into_iter()
        .filter(|(_, id, _)| *id == 0)
        .collect();
    brokers.sort();
    brokers
        .into_iter()
        .next()
        .map(|(_, _, addr)| addr)
        .ok_or_else(|| BenchError::Other("no master broker in the route of TBW102".into()))
}

/// `create-topic --topic T --queues Q [--broker-addr A] [--namesrv N] [--attributes A]`.
///
/// `--attributes`: 5.x topic attributes, `+key=value` pairs joined with `,`; a topic the
/// proxy serves needs its message type, `+message.type=NORMAL`.
pub(crate) async fn create_topic(flags: &Flags) -> Result<()> {
    let topic: String = flags.required("topic")?;
    let queues: i32 = flags.get("queues", 8)?;
    let attributes = flags
        .optional::<String>("attributes")?
        .filter(|a| !a.is_empty());
    let mut header = CreateTopicRequestHeader::new(topic.clone(), queues);
    header.attributes.clone_from(&attributes);
    let instance = instance(flags, "bench-admin")?;
    let addr = broker_addr(flags, &instance).await?;
    instance
        .create_topic(&addr, header)
        .await
        .map_err(|source| BenchError::Client {
            what: format!("creating topic {topic} on {addr}"),
            source,
        })?;
    // The broker registers the topic with the name server at once; wait until
    // the route lists every queue, so that consumers see it when they start.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match instance.refresh_route(&topic).await {
            Ok(route) if route.subscribe_queues().len() == usize::try_from(queues).unwrap_or(0) => {
                break;
            }
            _ if Instant::now() > deadline => {
                instance.shutdown().await;
                return Err(BenchError::Other(format!(
                    "topic {topic} created on {addr} but its route did not show {queues} queues within 30 s"
                )));
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let line = serde_json::json!({
        "topic": topic,
        "queues": queues,
        "broker_addr": addr,
        "attributes": attributes,
    });
    println!("{}", crate::stats::result_line(&line));
    instance.shutdown().await;
    Ok(())
}
