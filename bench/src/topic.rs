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

/// The topics of a `--topic` value: one name, or several joined with `,` (topic names cannot
/// hold a comma).
pub(crate) fn topics(flags: &Flags) -> Result<Vec<String>> {
    let value: String = flags.required("topic")?;
    let topics: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    if topics.is_empty() {
        return Err(BenchError::Args("--topic names no topic".into()));
    }
    Ok(topics)
}

/// `create-topic --topic T[,T2...] --queues Q [--broker-addr A[,B...]] [--namesrv N] [--attributes A]`.
///
/// Every topic gets Q queues on every broker named (`--broker-addr`, comma-separated), so a
/// topic on two brokers has 2×Q queues. `--attributes`: 5.x topic attributes, `+key=value`
/// pairs joined with `,`; a topic the proxy serves needs its message type, `+message.type=NORMAL`.
pub(crate) async fn create_topic(flags: &Flags) -> Result<()> {
    let topics = topics(flags)?;
    let queues: i32 = flags.get("queues", 8)?;
    let attributes = flags
        .optional::<String>("attributes")?
        .filter(|a| !a.is_empty());
    let instance = instance(flags, "bench-admin")?;
    let addrs: Vec<String> = broker_addr(flags, &instance)
        .await?
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    for topic in &topics {
        for addr in &addrs {
            let mut header = CreateTopicRequestHeader::new(topic.clone(), queues);
            header.attributes.clone_from(&attributes);
            instance
                .create_topic(addr, header)
                .await
                .map_err(|source| BenchError::Client {
                    what: format!("creating topic {topic} on {addr}"),
                    source,
                })?;
        }
    }
    // The broker registers the topic with the name server at once; wait until
    // the route lists every queue, so that consumers see it when they start.
    let want = usize::try_from(queues).unwrap_or(0) * addrs.len();
    let deadline = Instant::now() + Duration::from_secs(30);
    for topic in &topics {
        loop {
            match instance.refresh_route(topic).await {
                Ok(route) if route.subscribe_queues().len() == want => break,
                _ if Instant::now() > deadline => {
                    instance.shutdown().await;
                    return Err(BenchError::Other(format!(
                        "topic {topic} created on {} but its route did not show {want} queues within 30 s",
                        addrs.join(",")
                    )));
                }
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
    let line = serde_json::json!({
        "topics": topics.len(),
        "topic": topics.first(),
        "queues": want,
        "broker_addr": addrs.join(","),
        "attributes": attributes,
    });
    println!("{}", crate::stats::result_line(&line));
    instance.shutdown().await;
    Ok(())
}
