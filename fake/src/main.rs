//! `rmq-fake`: serve a fake RocketMQ cluster on loopback until Ctrl-C, for
//! clients in any language.
//!
//! ```sh
//! cargo run -p rmq-fake -- --port 9876 --brokers 2
//! ```

use std::process::ExitCode;

use rmq_fake::{BrokerFlavor, FakeCluster};

const USAGE: &str = "\
rmq-fake: an in-process fake Apache RocketMQ (name server + brokers on 127.0.0.1)

Usage: rmq-fake [options]

  --port N            name server port (default 9876; 0 = any free port)
  --broker-port N     first broker's port; the others follow (default: any free ports)
  --brokers N         number of brokers, named broker-a, broker-b, ... (default 1)
  --queues N          queues of created topics and of TBW102 (default 8)
  --topic NAME        a topic to create at start (repeatable)
  --cluster NAME      cluster name (default DefaultCluster)
  --flavor 5|4.9      answer as a 5.x or a 4.9.x broker where they differ (default 5)
  --delay-levels S    delay levels, e.g. \"1s 5s 10s\" (default: the broker's 18 levels)
  -h, --help          this text

Prints `export NAMESRV_ADDR=...` and one line per broker, then serves until Ctrl-C.";

struct Args {
    port: u16,
    broker_port: Option<u16>,
    brokers: usize,
    queues: i32,
    topics: Vec<String>,
    cluster: Option<String>,
    flavor: BrokerFlavor,
    delay_levels: Option<String>,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut args = Args {
        port: 9876,
        broker_port: None,
        brokers: 1,
        queues: 8,
        topics: Vec::new(),
        cluster: None,
        flavor: BrokerFlavor::V5,
        delay_levels: None,
    };
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--port" => args.port = number(&value("--port")?, "--port")?,
            "--broker-port" => {
                args.broker_port = Some(number(&value("--broker-port")?, "--broker-port")?)
            }
            "--brokers" => args.brokers = number(&value("--brokers")?, "--brokers")?,
            "--queues" => args.queues = number(&value("--queues")?, "--queues")?,
            "--topic" => args.topics.push(value("--topic")?),
            "--cluster" => args.cluster = Some(value("--cluster")?),
            "--flavor" => {
                args.flavor = match value("--flavor")?.as_str() {
                    "5" | "5.x" | "v5" => BrokerFlavor::V5,
                    "4.9" | "4.9.x" | "v4.9" => BrokerFlavor::V4_9,
                    other => return Err(format!("--flavor: `{other}` is neither 5 nor 4.9")),
                }
            }
            "--delay-levels" => args.delay_levels = Some(value("--delay-levels")?),
            other => return Err(format!("unknown option `{other}` (see --help)")),
        }
    }
    Ok(Some(args))
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{name}: `{text}` is not a valid number"))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("rmq-fake: {e}");
            return ExitCode::from(64);
        }
    };
    let mut builder = FakeCluster::builder()
        .namesrv_port(args.port)
        .brokers(args.brokers)
        .queues(args.queues)
        .flavor(args.flavor);
    if let Some(base) = args.broker_port {
        let ports: Result<Vec<u16>, _> = (0..args.brokers)
            .map(|i| {
                u16::try_from(i)
                    .ok()
                    .and_then(|i| base.checked_add(i))
                    .ok_or(())
            })
            .collect();
        match ports {
            Ok(p) => builder = builder.broker_ports(p),
            Err(()) => {
                eprintln!("rmq-fake: --broker-port {base}: the broker ports run past 65535");
                return ExitCode::from(64);
            }
        }
    }
    if let Some(cluster) = args.cluster {
        builder = builder.cluster_name(cluster);
    }
    if let Some(levels) = &args.delay_levels {
        builder = builder.delay_levels(levels);
    }
    for topic in args.topics {
        builder = builder.topic(topic);
    }
    let cluster = match builder.start().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rmq-fake: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("export NAMESRV_ADDR={}", cluster.namesrv_addr());
    for b in cluster.brokers() {
        println!("# {} at {}", b.name(), b.addr());
    }
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("rmq-fake: cannot wait for Ctrl-C: {e}");
    }
    cluster.shutdown().await;
    ExitCode::SUCCESS
}
